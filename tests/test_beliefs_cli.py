"""`distill beliefs …`, `distill runs` and the belief counts of `distill status`, as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
import time

import duckdb
import orjson
import pytest
from conftest import distill
from test_beliefs_store import belief, upsert


@pytest.fixture
def seeded(tmp_path):
    """A state dir holding a small belief history: a superseded city, a merged preference, a flagged contradiction."""
    state = tmp_path / "state"
    upsert(state / "distill.duckdb", [
        belief("User lives in Paris", attribute="city", ts="2026-01-01T00:00:00Z", message="p", session="a"),
        belief("User lives in Berlin", attribute="city", ts="2026-02-01T00:00:00Z", message="b", session="b"),
        belief("User prefers dark mode in the editor", message="d1", session="a"),
        belief("User likes tea", message="t1", attribute="tea", session="b"),
        belief("User does not like tea", message="t2", attribute="drink", session="b"),
        belief("User is called Ana", message="n1", category="identity", session="c"),
    ])
    return state


def cli_json(*args: str) -> dict:
    return orjson.loads(distill("--json", *args, check=True).stdout)


def ids_by_statement(listing: dict) -> dict[str, str]:
    return {b["statement"]: b["id"] for b in listing["beliefs"]}


def test_list_filters_and_sorts(seeded):
    live = cli_json("beliefs", "list")["beliefs"]
    assert "User lives in Paris" not in {b["statement"] for b in live}  # archived is hidden by default
    assert len(cli_json("beliefs", "list", "--status", "all")["beliefs"]) == 6
    assert [b["statement"] for b in cli_json("beliefs", "list", "--category", "identity")["beliefs"]] == [
        "User is called Ana"]
    assert len(cli_json("beliefs", "list", "--limit", "2", "--sort", "confidence")["beliefs"]) == 2
    assert cli_json("beliefs", "list", "--agent", "main", "--since", "2030-01-01")["beliefs"] == []
    human = distill("beliefs", "list", check=True).stdout
    assert "User is called Ana" in human and "active" in human


def test_search_show_and_history(seeded):
    found = cli_json("beliefs", "search", "dark mode")["beliefs"]
    assert [b["statement"] for b in found] == ["User prefers dark mode in the editor"]
    ids = ids_by_statement(cli_json("beliefs", "list", "--status", "all"))
    shown = cli_json("beliefs", "show", ids["User prefers dark mode in the editor"][:8])  # a unique prefix will do
    [evidence] = shown["evidence"]
    assert evidence["message_id"] == "d1" and evidence["session"] == "a" and evidence["byte_start"] == 10
    assert {"agent", "file", "byte_end", "ts", "quote", "run"} <= set(evidence)
    assert "bytes 10-90" in distill("beliefs", "show", ids["User lives in Paris"], check=True).stdout
    history = cli_json("beliefs", "history", ids["User lives in Berlin"])
    assert [b["statement"] for b in history["timeline"]] == ["User lives in Paris", "User lives in Berlin"]
    missing = distill("beliefs", "show", "b1:nope")
    assert missing.returncode == 1 and "no belief" in missing.stderr


def test_forget_by_id_match_and_source(seeded):
    ids = ids_by_statement(cli_json("beliefs", "list", "--status", "all"))
    assert cli_json("beliefs", "forget", ids["User is called Ana"])["beliefs"] == [ids["User is called Ana"]]
    preview = cli_json("beliefs", "forget", "--match", "tea", "--dry-run")
    assert len(preview["beliefs"]) == 2 and preview["dry_run"]
    assert len(cli_json("beliefs", "forget", "--match", "tea")["beliefs"]) == 2
    gone = cli_json("beliefs", "forget", "--source", "a")
    assert set(gone["beliefs"]) == {ids["User lives in Paris"], ids["User prefers dark mode in the editor"]}
    assert [b["statement"] for b in cli_json("beliefs", "list", "--status", "all")["beliefs"]] == [
        "User lives in Berlin"]


def test_export_formats_and_import(seeded, tmp_path):
    lines = distill("beliefs", "export", check=True).stdout.splitlines()
    assert len(lines) == 6 and all(orjson.loads(line)["evidence"] for line in lines)
    csv_text = distill("beliefs", "export", "--format", "csv", check=True).stdout
    assert csv_text.startswith("id,statement,category") and len(csv_text.splitlines()) == 7
    parquet = tmp_path / "beliefs.parquet"
    distill("beliefs", "export", "--format", "parquet", "--output", str(parquet), check=True)
    with duckdb.connect() as con:
        assert con.execute(f"SELECT count(*), count(evidence) FROM '{parquet}'").fetchone() == (6, 6)
    markdown = distill("beliefs", "export", "--format", "markdown", check=True).stdout
    assert markdown.startswith("# MEMORY.md") and "## Identity" in markdown and "- User is called Ana" in markdown
    assert "Paris" not in markdown  # archived beliefs are not memory
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    other = tmp_path / "other"
    first = orjson.loads(distill("--json", "beliefs", "import", str(dump), state_dir=other, check=True).stdout)
    assert sum(first.values()) == 6 and first["replayed"] == 0
    again = orjson.loads(distill("--json", "beliefs", "import", str(dump), state_dir=other, check=True).stdout)
    assert again["replayed"] == 6
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    result = distill("beliefs", "import", str(bad), state_dir=other)
    assert result.returncode == 1 and "bad.jsonl:1" in result.stderr


def test_status_counts_beliefs_and_runs_lists_runs(seeded):
    status = cli_json("status")
    assert status["beliefs"]["by_status"] == {"active": 4, "archived": 1, "flagged_for_review": 1}
    assert status["beliefs"]["by_category"]["identity"] == 1
    assert "beliefs: 6" in distill("status", check=True).stdout
    with duckdb.connect(str(seeded / "distill.duckdb")) as con:
        con.execute("INSERT INTO runs (run_id, status, sources, counters) VALUES "
                    "('r1', 'ok', ['/x'], '{\"messages\": 3, \"tokens\": 1200, \"cost_usd\": 0.0042}')")
    [run] = cli_json("runs")["runs"]
    assert run["counters"]["cost_usd"] == 0.0042
    human = distill("runs", check=True).stdout
    assert "1,200" in human and "$0.0042" in human


def test_a_reader_waits_for_a_writer_to_finish(seeded):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb,sys,time; c=duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(1.0); c.close()",
         str(seeded / "distill.duckdb")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        result = distill("--json", "beliefs", "list")
    finally:
        holder.wait()
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started >= 0.5
    assert len(orjson.loads(result.stdout)["beliefs"]) == 5
