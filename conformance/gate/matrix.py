"""``kconform matrix``: every committed verdict page in one table per connector, release x broker release.

A verdict page (``kconform verdicts``) judges one release of one connector on one broker release. This module reads
what each page's header states (the connector, what was judged, the broker, the four class verdicts), which
``verdicts.render`` writes, and renders one Markdown page: per connector a table whose rows are the judged
releases and whose columns are the broker releases, each cell the page's class verdicts linking the page. It reads
pages, never runs anything, so the matrix changes only when a page does; ``tests/test_matrix.py`` checks that the
committed matrix is what the committed pages give.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..redaction import write_text
from .report import CLASS_LABEL

MATRIX_NAME: Final = "matrix.md"
DEFAULT_PAGES: Final = Path("docs/verdicts")
TITLE: Final = re.compile(r"^# Verdicts: (?P<title>.+)$", re.M)
JUDGED: Final = re.compile(r"^- judged: (?P<judged>.+)$", re.M)
BROKER: Final = re.compile(r"^- broker: (?P<broker>.+?) \(`--broker (?P<kind>[^`]+)`\)(?:; (?P<facts>.+))?$", re.M)
VERDICT: Final = re.compile(
    r"^\*\*(?P<label>[\w-]+): (?P<answer>yes|no|not verified)(?: \((?P<detail>.*)\))?\*\*", re.M
)
RELEASE: Final = re.compile(r"(\d+(?:\.\d+)*)")
ANSWER_MARK: Final = {"yes": "yes", "no": "**no**", "not verified": "not verified"}


class NotAVerdictPage(ValueError):
    """A Markdown file in the pages folder that ``kconform verdicts`` did not write (its header lacks a line)."""


@dataclass(frozen=True)
class ClassAnswer:
    label: str
    """``safe``, ``live``, ``Flink-faithful`` or ``diagnosable`` (``report.CLASS_LABEL``)."""
    answer: str
    """``yes``, ``no`` or ``not verified``."""
    violated: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageVerdict:
    """What one verdict page states in its header."""

    page: str
    """The page's file name, which the matrix links."""
    title: str
    judged: str
    broker: str
    """The broker's release as the page names it (``Apache Kafka 4.4.0``, ``tansu``)."""
    broker_kind: str
    classes: tuple[ClassAnswer, ...]

    def answer(self, label: str) -> ClassAnswer | None:
        return next((c for c in self.classes if c.label == label), None)


def parse_page(name: str, text: str) -> PageVerdict:
    """The header of the verdict page ``name`` (its file name), as ``verdicts.render`` wrote it."""
    found = {what: pattern.search(text) for what, pattern in (("title", TITLE), ("judged", JUDGED), ("broker", BROKER))}
    title, judged, broker = found["title"], found["judged"], found["broker"]
    if title is None or judged is None or broker is None:
        missing = ", ".join(what for what, m in found.items() if m is None)
        raise NotAVerdictPage(f"{name}: no {missing} line where kconform verdicts writes one")
    classes = tuple(
        ClassAnswer(
            m["label"],
            m["answer"],
            tuple(m["detail"].removeprefix("violated: ").split(", ")) if m["answer"] == "no" and m["detail"] else (),
        )
        for m in VERDICT.finditer(text)
    )
    if not classes:
        raise NotAVerdictPage(f"{name}: no class verdict (a **safe: ...** line)")
    return PageVerdict(name, title["title"], judged["judged"], broker["broker"], broker["kind"], classes)


def release_key(text: str) -> tuple[tuple[int, ...], str]:
    """Orders ``Apache Kafka 3.9.2`` before ``Apache Kafka 4.1.1``, and ``4.10`` after ``4.9``."""
    found = RELEASE.search(text)
    return (tuple(int(p) for p in found.group(1).split(".")) if found else (), text)


def cell(page: PageVerdict) -> str:
    parts = []
    for label in CLASS_LABEL.values():
        found = page.answer(label)
        if found is None:
            continue
        ids = f" ({', '.join(found.violated)})" if found.violated else ""
        parts.append(f"{label} {ANSWER_MARK[found.answer]}{ids}")
    return f"[{' · '.join(parts)}]({page.page})"


def render(pages: Iterable[PageVerdict], command: str) -> str:
    """The matrix page: per connector (page title), judged releases x broker releases."""
    by_title: dict[str, list[PageVerdict]] = {}
    for page in pages:
        by_title.setdefault(page.title, []).append(page)
    lines = [
        "# Verdict matrix",
        "",
        "Every verdict page of this folder, per connector: a row per release judged, a column per broker release it",
        "was judged on, each cell the page's verdicts (safe, live, Flink-faithful, diagnosable) linking the page. A",
        "blank cell was not judged. Generated from the pages' headers; regenerate with:",
        "",
        "```sh",
        command,
        "```",
    ]
    for title in sorted(by_title):
        group = by_title[title]
        brokers = sorted({p.broker for p in group}, key=release_key)
        rows = sorted({p.judged for p in group}, key=release_key)
        lines += ["", f"## {title}", "", f"| judged | {' | '.join(brokers)} |", f"| --- |{' --- |' * len(brokers)}"]
        for judged in rows:
            cells = []
            for broker in brokers:
                found = [p for p in group if p.judged == judged and p.broker == broker]
                cells.append("<br>".join(cell(p) for p in sorted(found, key=lambda p: p.page)))
            lines.append(f"| {judged} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def read_pages(folder: Path) -> list[PageVerdict]:
    """Every verdict page of ``folder`` (the matrix itself and ``README.md`` left out)."""
    return [
        parse_page(path.name, path.read_text())
        for path in sorted(folder.glob("*.md"))
        if path.name not in (MATRIX_NAME, "README.md")
    ]


def command_line(folder: Path) -> str:
    return "kconform matrix" + ("" if folder == DEFAULT_PAGES else f" --pages {folder}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform matrix",
        description="write the verdict matrix (connector release x broker release) from the committed verdict pages",
    )
    parser.add_argument(
        "--pages", type=Path, default=DEFAULT_PAGES, help="the folder of verdict pages (default %(default)s)"
    )
    parser.add_argument("--out", type=Path, help=f"the page to write (default PAGES/{MATRIX_NAME})")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        pages = read_pages(args.pages)
    except NotAVerdictPage as exc:
        print(f"kconform matrix: error: {exc}; move it out of {args.pages} or regenerate it", file=sys.stderr)
        return 2
    if not pages:
        print(f"kconform matrix: error: no verdict page in {args.pages} (kconform verdicts writes them)",
              file=sys.stderr)  # fmt: skip
        return 2
    out = args.out or args.pages / MATRIX_NAME
    write_text(out, render(pages, command_line(args.pages)))
    print(f"matrix: {out} ({len(pages)} pages)")
    return 0
