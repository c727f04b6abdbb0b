"""`distill beliefs …`, `distill runs` and the belief counts of `distill status`, through the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

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


def test_a_listing_cut_at_its_limit_says_how_many_more_and_limit_0_shows_all(seeded):
    cut = distill("--json", "beliefs", "list", "--limit", "2")
    listing = orjson.loads(cut.stdout)
    assert len(listing["beliefs"]) == 2 and listing["total"] == 5 and listing["truncated"] is True
    assert "showing 2 of 5 beliefs: 3 more with --limit 5 (or --limit 0 for all)" in cut.stderr
    whole = distill("--json", "beliefs", "list", "--limit", "0")
    assert len(orjson.loads(whole.stdout)["beliefs"]) == 5 and orjson.loads(whole.stdout)["truncated"] is False
    assert "showing" not in whole.stderr
    assert orjson.loads(distill("--json", "beliefs", "list", "--limit", "5").stdout)["truncated"] is False
    found = distill("--json", "beliefs", "search", "tea", "--limit", "1")
    assert orjson.loads(found.stdout)["total"] == 2 and "showing 1 of 2" in found.stderr


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
    assert sorted(preview["statements"]) == ["User does not like tea", "User likes tea"]
    shown = distill("beliefs", "forget", "--match", "tea", "--dry-run", check=True).stdout
    assert "would forget 2 belief(s)" in shown and "User likes tea" in shown and "User does not like tea" in shown
    unasked = distill("beliefs", "forget", "--match", "tea")  # stdin is not a terminal: nobody can confirm
    assert unasked.returncode == 1 and "pass --yes" in unasked.stderr and "2 belief(s)" in unasked.stderr
    assert len(cli_json("beliefs", "list", "--status", "all")["beliefs"]) == 5  # nothing forgotten
    assert len(cli_json("beliefs", "forget", "--match", "tea", "--yes")["beliefs"]) == 2
    assert distill("beliefs", "forget", "--source", "a").returncode == 1
    gone = cli_json("beliefs", "forget", "--source", "a", "--yes")
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


def test_forgetting_survives_export_then_import_and_a_reread(tmp_path, agents):
    from conftest import append, message_line, new_session

    path = new_session(agents)
    append(path, message_line("I am allergic to peanuts.", message_id="u0000001"))
    distill("run", "--source", str(agents), check=True)
    [allergy] = cli_json("beliefs", "list")["beliefs"]
    distill("beliefs", "forget", allergy["id"], check=True)
    dump = tmp_path / "dump.jsonl"
    distill("beliefs", "export", "-o", str(dump), check=True)
    lines = [orjson.loads(line) for line in dump.read_bytes().splitlines()]
    lines = [line for line in lines if set(line) != {"clock"}]  # the transcripts' clock, then the tombstones
    assert lines and all(set(line) == {"tombstone"} for line in lines)
    assert "peanut" not in dump.read_text()  # hashes only
    other = tmp_path / "other"
    imported = orjson.loads(distill("--json", "beliefs", "import", str(dump), state_dir=other, check=True).stdout)
    assert imported["tombstones"] == len(lines)
    distill("run", "--source", str(agents), state_dir=other, check=True)
    assert orjson.loads(distill("--json", "beliefs", "list", "--status", "all", state_dir=other,
                                check=True).stdout)["beliefs"] == []


def test_export_then_import_into_a_fresh_store_keeps_statuses_and_activation(tmp_path):
    import distiller
    sample = Path(distiller.__file__).parent / "sample" / "agents"
    here, there, old = (str(tmp_path / name) for name in ("here", "there", "old"))
    distill("--state-dir", here, "run", "--source", str(sample), check=True)

    def listed(state_dir: str) -> list[tuple]:
        beliefs = orjson.loads(distill("--state-dir", state_dir, "--json", "beliefs", "list", "--status", "all",
                                       check=True).stdout)["beliefs"]
        return sorted((b["id"], b["status"], round(b["activation"], 6), b["confidence"]) for b in beliefs)

    exported = tmp_path / "beliefs.jsonl"
    distill("--state-dir", here, "beliefs", "export", "-o", str(exported), check=True)
    assert b'{"clock":' in exported.read_bytes()  # the transcripts' clock travels with the beliefs
    distill("--state-dir", there, "beliefs", "import", str(exported), check=True)
    assert listed(there) == listed(here) and len(listed(here)) == 12
    # An export made before the clock travelled: the clock comes from its evidence instead of the wall clock.
    without = tmp_path / "old.jsonl"
    without.write_bytes(b"".join(line for line in exported.read_bytes().splitlines(keepends=True)
                                 if not line.startswith(b'{"clock"')))
    distill("--state-dir", old, "beliefs", "import", str(without), check=True)
    assert [row[:2] for row in listed(old)] == [row[:2] for row in listed(here)]


def test_csv_and_parquet_imports_are_one_clear_line(seeded, tmp_path):
    csv_file = tmp_path / "b.csv"
    csv_file.write_text(distill("beliefs", "export", "--format", "csv", check=True).stdout)
    parquet = tmp_path / "b.parquet"
    distill("beliefs", "export", "--format", "parquet", "-o", str(parquet), check=True)
    for path, what in ((csv_file, "a CSV export"), (parquet, "a Parquet file")):
        result = distill("beliefs", "import", str(path))
        assert result.returncode == 1 and f"is {what}: import reads JSONL" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("field", "value", "said"), [
    ("confidence", "high", "confidence must be a number"),
    ("importance", "very", "importance must be an integer"),
    ("subject", {"a": 1}, "subject must be a string"),
    ("keys", "abc", "keys must be a list of strings"),
    ("evidence", [1], "evidence must be a list of objects"),
])
def test_an_import_line_with_a_wrong_type_is_named_and_nothing_is_stored(seeded, tmp_path, field, value, said):
    """Every field of an import line is checked: a wrong type was stored as it came ("high" as a confidence) or
    failed deep down as an internal error."""
    exported = [orjson.loads(line) for line in distill("beliefs", "export", check=True).stdout.splitlines()]
    line = next(obj for obj in exported if "statement" in obj)
    path = tmp_path / "in.jsonl"
    path.write_bytes(orjson.dumps({**line, field: value}) + b"\n")
    fresh = tmp_path / "fresh"
    result = distill("beliefs", "import", str(path), state_dir=fresh)
    assert result.returncode == 1 and f"{path}:1: not a belief or tombstone: {said}" in result.stderr, result.stderr
    assert "internal error" not in result.stderr and not (fresh / "distill.duckdb").exists()


def test_export_into_a_missing_directory_is_a_clear_error(seeded, tmp_path):
    for fmt in ("jsonl", "parquet"):
        result = distill("beliefs", "export", "--format", fmt, "-o", str(tmp_path / "nope" / "x"))
        assert result.returncode == 1 and "does not exist" in result.stderr and "internal" not in result.stderr


def test_archived_matches_are_hinted_and_learned_since_is_store_time(seeded):
    listed = distill("--json", "beliefs", "list")
    assert orjson.loads(listed.stdout)["archived_hidden"] == 1
    assert "1 archived match(es) not shown: --status all" in listed.stderr
    assert "archived match" in distill("beliefs", "search", "Paris", check=True).stderr
    # the store learned the seeded beliefs on 2026-03-10
    assert len(cli_json("beliefs", "list", "--learned-since", "2026-03-01")["beliefs"]) == 5
    assert cli_json("beliefs", "list", "--learned-since", "2026-03-11")["beliefs"] == []


def test_forget_source_never_ingested_writes_no_tombstone(seeded, tmp_path):
    for source in (str(tmp_path / "never.jsonl"), "no-such-session"):
        result = distill("beliefs", "forget", "--source", source)
        assert result.returncode == 1 and "never ingested" in result.stderr
    with duckdb.connect(str(seeded / "distill.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 0


@pytest.mark.slow  # a real process on a pseudo-terminal; CI runs it with the other slow tests
def test_bulk_forget_asks_on_a_terminal(seeded):
    import os
    import pty

    def forget_on_tty(answer: bytes, *extra: str) -> tuple[int, bytes]:
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "distiller", "beliefs", "forget", "--match", "tea", *extra],
                                stdin=slave, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        seen = b""
        if answer:
            while b"for good?" not in seen:
                seen += os.read(master, 1024)
            os.write(master, answer)
        proc.wait(timeout=60)
        os.close(master)
        return proc.returncode, seen

    code, prompt = forget_on_tty(b"n\n")
    assert code == 1 and b"forget 2 belief(s)" in prompt and b"User likes tea" in prompt
    assert len(cli_json("beliefs", "list", "--status", "all")["beliefs"]) == 6
    assert forget_on_tty(b"", "--yes")[0] == 0
    assert len(cli_json("beliefs", "list", "--status", "all")["beliefs"]) == 4


def test_reading_beliefs_never_creates_a_state_dir(tmp_path):
    listed = distill("beliefs", "list")
    assert listed.returncode == 0 and "no beliefs" in listed.stdout
    assert f"no database at {tmp_path / 'state' / 'distill.duckdb'} yet" in listed.stderr
    shown = distill("beliefs", "show", "b1:abc")
    assert shown.returncode == 1 and "no database at" in shown.stderr
    assert not (tmp_path / "state").exists()


def test_a_listing_has_a_header_aligned_columns_and_explains_act(tmp_path):
    upsert(tmp_path / "state" / "distill.duckdb", [
        belief("User lives in Porto", message="a1", scope="agent:main"),
        belief("User writes Rust at work", message="a2", scope="agent:a-very-long-agent-name-indeed"),
        belief("User is called Ana", message="a3", category="identity", scope="global"),
    ])
    lines = distill("beliefs", "list", check=True).stdout.splitlines()
    header, rows, legend = lines[0], lines[1:-1], lines[-1]
    assert header.split() == ["ID", "STATUS", "CATEGORY", "CONF", "ACT", "SCOPE", "STATEMENT"]
    assert len(rows) == 3 and {row.index("User ") for row in rows} == {header.index("STATEMENT")}
    assert {row.index("agent:") if "agent:" in row else row.index("global") for row in rows} == {
        header.index("SCOPE")}
    assert all(re.search(r"  [01]\.\d\d  +-?\d+\.\d\d  ", row) for row in rows)  # two decimals, one way
    assert legend.startswith("conf: confidence") and "act: activation" in legend


def test_a_path_read_once_is_never_called_never_ingested_after_a_rename_or_a_reset(agents):
    """Messages read under a path stay read under it: `files` knows a file's current path only, and
    `init --from-start` empties it, so the ledger's paths are kept apart (store/migrations.py m022)."""
    from conftest import append, message_line, new_session

    old = new_session(agents)
    append(old, message_line("thanks!", message_id="u0000001"))  # no belief, so no evidence names the path
    distill("run", "--source", str(agents), check=True)
    new = old.with_name("renamed.jsonl")
    old.rename(new)
    append(new, message_line("ok", message_id="u0000002"))
    distill("run", "--source", str(agents), check=True)
    distill("init", "--from-start", check=True)
    for path in (old, new):
        assert cli_json("beliefs", "forget", "--source", str(path), "--dry-run")["beliefs"] == []
    never = distill("beliefs", "forget", "--source", str(old.with_name("other.jsonl")), "--dry-run")
    assert never.returncode == 1 and "never ingested" in never.stderr
