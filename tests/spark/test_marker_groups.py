"""Which consumer groups the ``kconform-kafka`` sink takes for its query's markers: pure, no Spark or broker."""

from __future__ import annotations

from uuid import UUID

from hypothesis import assume, given
from hypothesis import strategies as st

from kconform.reference_impl.spark.sink import MarkerGroups

PREFIXES = st.text("abcxyz-_.019", min_size=1, max_size=8)


@given(PREFIXES, st.text("abc-_.019", min_size=1, max_size=4), st.uuids(), st.uuids(), st.integers(0, 12))
def test_required_COMMIT_016_another_sinks_groups_are_never_this_querys_even_under_a_longer_prefix(
    prefix: str, extension: str, query: UUID, other: UUID, tasks: int
) -> None:
    """``job`` and ``job-1`` (any extension, any task indices): the other query's groups, whose names start with
    this sink's prefix, are neither leftovers nor earlier ids of this one, so its recovery never fences them."""
    assume(other != query)
    groups = MarkerGroups(prefix, str(query))
    foreign = [f"{prefix}{extension}-{other}-{task}" for task in range(tasks + 2)]
    foreign += [f"{prefix}-{other}-{task}" for task in range(tasks + 2)]
    assert [g for g in foreign if groups.owner(g) is not None] == []
    assert groups.leftovers(foreign, tasks) == [] and groups.earlier(foreign, 0) == []


def test_required_COMMIT_016_a_name_is_parsed_exactly() -> None:
    query = "8f0e3c1a-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
    groups = MarkerGroups("job", query)
    assert groups.owner(f"job-{query}-3") == ("job", 3)
    assert groups.owner(f"job-1-{query}-0") == ("job-1", 0)  # the same query's id under the prefix job-1
    assert groups.owner(f"{query}-0") is None  # no prefix
    assert groups.owner(f"job-{query}-x") is None and groups.owner(f"job-{query}") is None
    assert groups.owner(f"job-{query}x-0") is None and groups.owner(f"job-{query[1:]}-0") is None


def test_required_COMMIT_017_the_querys_ids_under_earlier_prefixes_are_found_by_task() -> None:
    query = "8f0e3c1a-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
    listed = [f"{p}-{query}-{t}" for p in ("old", "new", "older") for t in range(3)] + ["new-other-0", "old-0"]
    groups = MarkerGroups("new", query)
    assert groups.earlier(listed, 1) == [f"old-{query}-1", f"older-{query}-1"]
    assert groups.earlier(listed, 5) == []
    assert groups.leftovers(listed, 2) == sorted(
        [f"new-{query}-2", *(f"{p}-{query}-{t}" for p in ("old", "older") for t in range(3))]
    )  # COMMIT-012's indices past the batch's tasks, and every earlier prefix's id


def test_required_COMMIT_012_without_a_prefix_change_only_indices_past_the_tasks_are_leftovers() -> None:
    query = "8f0e3c1a-5b6d-4e7f-9a0b-1c2d3e4f5a6b"
    listed = [f"kconform-{query}-{t}" for t in range(4)]
    assert MarkerGroups("kconform", query).leftovers(listed, 2) == listed[2:]
    assert MarkerGroups("kconform", query).leftovers(listed, 4) == []
