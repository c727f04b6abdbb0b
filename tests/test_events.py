"""Run counters: what the summary says was skipped is what was skipped."""

from distiller.events import Tally


def test_a_file_met_by_several_stages_of_a_run_is_counted_once_per_reason():
    tally = Tally()
    tally.file_skipped("not_regular", "/s/a.jsonl")
    tally.file_skipped("not_regular", "/s/a.jsonl")  # met again while looking for a renamed continuation
    tally.file_skipped("not_regular", "/s/b.jsonl.reset.2026-03-04T09-12-33.120Z")
    tally.file_skipped("unreadable", "/s/a.jsonl")
    assert tally.as_dict()["files_skipped"] == {"not_regular": 2, "unreadable": 1}
