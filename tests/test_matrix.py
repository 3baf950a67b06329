"""The verdict matrix: read from the verdict pages' headers, one table per connector, release x broker release."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconform.conformance.gate.matrix import (
    DEFAULT_PAGES,
    MATRIX_NAME,
    NotAVerdictPage,
    command_line,
    main,
    parse_page,
    read_pages,
    render,
)

ROOT = Path(__file__).resolve().parents[1]


def page(judged: str, broker: str, safe: str = "yes (3 safety requirements verified)", live: str = "") -> str:
    lines = [
        "# Verdicts: spark-sql-kafka-0-10",
        "",
        f"- judged: {judged}",
        f"- broker: {broker} (`--broker kafka`); transaction.version 2, group protocols classic, consumer",
        "- exit code 0",
        "",
        f"**safe: {safe}**  ",
    ]
    if live:
        lines.append(f"**live: {live}**  ")
    return "\n".join(lines) + "\n"


def test_a_page_header_gives_its_connector_release_broker_and_each_class_answer() -> None:
    parsed = parse_page(
        "a.md", page("PySpark 4.1.1; x 4.1.1", "Apache Kafka 4.4.0", "no (violated: DISC-008, COMMIT-011)", "yes (1)")
    )
    assert (parsed.title, parsed.judged, parsed.broker, parsed.broker_kind) == (
        "spark-sql-kafka-0-10",
        "PySpark 4.1.1; x 4.1.1",
        "Apache Kafka 4.4.0",
        "kafka",
    )
    safe, live = parsed.answer("safe"), parsed.answer("live")
    assert safe is not None and (safe.answer, safe.violated) == ("no", ("DISC-008", "COMMIT-011"))
    assert live is not None and (live.answer, live.violated) == ("yes", ())
    assert parsed.answer("diagnosable") is None


def test_rows_are_releases_and_columns_brokers_in_release_order_each_cell_linking_its_page() -> None:
    pages = [
        parse_page("b.md", page("PySpark 4.10.0", "Apache Kafka 4.4.0", "no (violated: DISC-008)")),
        parse_page("a.md", page("PySpark 4.9.0", "Apache Kafka 4.4.0")),
        parse_page("c.md", page("PySpark 4.9.0", "Apache Kafka 3.9.2", live="not verified (none selected)")),
    ]
    text = render(pages, "kconform matrix")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| judged | Apache Kafka 3.9.2 | Apache Kafka 4.4.0 |"
    assert table[2] == "| PySpark 4.9.0 | [safe yes · live not verified](c.md) | [safe yes](a.md) |"
    assert table[3] == "| PySpark 4.10.0 |  | [safe **no** (DISC-008)](b.md) |"  # 4.10 after 4.9; not judged: blank


def test_a_file_kconform_verdicts_did_not_write_is_named_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nnothing here\n")
    with pytest.raises(NotAVerdictPage, match=r"notes\.md: no title, judged, broker line"):
        read_pages(tmp_path)
    assert main(["--pages", str(tmp_path)]) == 2


def test_the_committed_matrix_is_what_the_committed_pages_give() -> None:
    """A page regenerated (or added) without `kconform matrix` fails here, naming the command."""
    folder = ROOT / DEFAULT_PAGES
    expected = render(read_pages(folder), command_line(DEFAULT_PAGES))
    assert (folder / MATRIX_NAME).read_text() == expected, "regenerate it: kconform matrix"
    assert len(read_pages(folder)) >= 7  # every shipped page was read, none skipped
