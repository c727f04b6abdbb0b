"""Run counters: what the summary says was skipped is what was skipped."""

from distiller.events import Tally, cached_share


def test_a_file_met_by_several_stages_of_a_run_is_counted_once_per_reason():
    tally = Tally()
    tally.file_skipped("not_regular", "/s/a.jsonl")
    tally.file_skipped("not_regular", "/s/a.jsonl")  # met again while looking for a renamed continuation
    tally.file_skipped("not_regular", "/s/b.jsonl.reset.2026-03-04T09-12-33.120Z")
    tally.file_skipped("unreadable", "/s/a.jsonl")
    assert tally.as_dict()["files_skipped"] == {"not_regular": 2, "unreadable": 1}


def test_a_message_dropped_for_its_size_is_counted_and_named_with_v(caplog):
    from distiller.records import Message
    from distiller.screen import screen

    paste = Message("openclaw", "main", "s1", "msg-42", None, None, "user",
                    "The quarterly revenue grew across all regions. " * 200, "/s/a.jsonl", 0, 10)
    tally = Tally()
    with caplog.at_level("INFO", logger="distiller"):
        tally.screened(screen(paste))
    assert tally.as_dict()["dropped"] == {"oversized-paste": 1}
    assert "oversized-paste: message msg-42 of /s/a.jsonl" in caplog.text


def test_the_cached_share_of_a_recorded_run_reads_missing_or_odd_counters_as_none():
    """A run recorded by an older version, or cut short, may lack a counter or hold null: 0, never a TypeError."""
    assert cached_share({}) is None
    assert cached_share({"input_tokens": None, "cache_read_tokens": "300"}) is None
    assert cached_share({"input_tokens": 100, "cache_write_tokens": None, "cache_read_tokens": 300}) == 0.75
    assert Tally(input_tokens=100, cache_read_tokens=300).cached_share == 0.75
