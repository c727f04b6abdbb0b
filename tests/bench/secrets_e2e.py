"""End to end: do planted secrets survive anywhere distill writes or prints? (a report, not a test)

    python tests/bench/secrets_e2e.py [--seeds 20] [--keep DIR]

Each seed's cases (`tests/secretclasses.py`: every class of secret, fresh values, train and held-out forms, half
of the seeds with a zero-width character planted inside the secret) are written into an OpenClaw tree, each in
one of the places a transcript holds text: a user turn (inside prose), an assistant turn, an assistant's thinking
block, a tool call's arguments and a tool result; keys split across two consecutive user turns too; and the
harmless look-alikes in user turns. Then, with real processes of `python -m distiller`:

1. `run --dry-run --show all --json`: the text the model would see;
2. `run --no-llm`: the batch files staged for an external agent;
3. `commit` of a parrot agent's answer, which states and quotes every citable item's text verbatim: the most a
   model could store of what it was shown (the store's last guard then refuses what it still finds);
4. `beliefs export` as JSONL and Markdown.

Every secret (with and without the planted invisible character) is sought whole in the dry run's output, the batch
files, the exports, every string column of every table of the database (through SQL: DuckDB compresses strings on
disk) and the raw bytes of every file in the state dir (its WAL included); a secret shorter than 8 characters (a
CVV) as a word in what its own message became in the dry run (three digits occur anywhere by chance; every later
place holds only what the dry run shows). A look-alike counts as a false positive
when its text reaches the dry run altered by redaction. Exit 1 when a secret is found or more than one look-alike
in 36 is redacted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secretclasses import INVISIBLE, SPLITS, cases, lookalikes, split_across_messages

PLACES = ("user", "assistant", "thinking", "tool-call", "tool-result")
SHORT = 8  # a secret shorter than this (a CVV, a PIN) is sought as a word in texts only


def _entry(message: dict, n: int) -> dict:
    return {"type": "message", "id": f"{n:08x}", "parentId": None, "timestamp": "2026-03-01T10:00:01.000Z",
            "message": {**message, "timestamp": 1772359200000}}


def _text_message(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _placed(place: str, text: str, n: int) -> list[dict]:
    """The lines that put text in one place of a transcript (an ordinary user turn before each, so every
    session has something to distill)."""
    if place == "user":
        return [_entry(_text_message("user", f"Quick note for later: {text} Thanks, that is all."), n)]
    if place == "assistant":
        return [_entry(_text_message("assistant", f"Here is what you gave me: {text}"), n)]
    if place == "thinking":
        return [_entry({"role": "assistant", "content": [{"type": "thinking", "thinking": f"The user wrote {text}"},
                                                         {"type": "text", "text": "Noted."}]}, n)]
    if place == "tool-call":
        return [_entry({"role": "assistant", "content": [
            {"type": "toolCall", "id": f"call{n}", "name": "exec", "arguments": {"command": text}}]}, n)]
    return [_entry({"role": "toolResult", "toolCallId": f"call{n}", "toolName": "exec",
                    "content": [{"type": "text", "text": text}]}, n)]


def _session(directory: Path, entries: list[dict]) -> None:
    session_id = str(uuid.uuid4())
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-03-01T10:00:00.000Z",
              "cwd": "/home/u"}
    lines = [header, *entries]
    (directory / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def write_tree(root: Path, seeds: range) -> tuple[list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]],
                                                  list[tuple[str, str, str, str]]]:
    """The OpenClaw tree; the planted (class, form, place, secrets, message ids) and the look-alikes (form, split,
    text, message id)."""
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    planted: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = []
    looks: list[tuple[str, str, str, str]] = []
    n = 0
    for seed in seeds:
        entries: list[dict] = []
        for index, case in enumerate(cases(seed, invisible=seed % 2 == 0)):
            place = PLACES[(index + seed) % len(PLACES)]
            n += 1
            entries.extend(_placed(place, case.text, n))
            planted.append((f"{case.cls} [{case.split}]", case.form, place, case.secrets, (f"{n:08x}",)))
        for pair in split_across_messages(seed):
            n += 2
            entries.append(_entry(_text_message("user", pair.first), n - 1))
            entries.append(_entry(_text_message("user", pair.second), n))
            # each piece is sought too: both messages must be redacted, not only one
            label = pair.first[:pair.first.index(pair.pieces[0])].split(":")[0].strip() or "(bare)"  # never a piece
            planted.append((f"split-across-messages [{pair.split}]", label.replace("\n", " "), "user",
                            (pair.key, *pair.pieces), (f"{n - 1:08x}", f"{n:08x}")))
        for look in lookalikes(seed):
            n += 1
            entries.append(_entry(_text_message("user", look.text), n))
            looks.append((look.form, look.split, look.text, f"{n:08x}"))
        _session(sessions, entries)
    return planted, looks


def _distill(state: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DISTILL_STATE_DIR": str(state)}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "distiller", *args], capture_output=True, text=True, env=env,
                          check=False)


def _parrot(batch_file: Path) -> str:
    """An external agent that believes every citable item verbatim."""
    batch = json.loads(batch_file.read_text())
    lines = []
    for entry in batch["items"]:
        item = entry["item"]
        words = item["text"].split()
        if not item["evidence"] or len(words) < 3:
            continue
        text = " ".join(words[:60])
        lines.append(json.dumps({"statement": text, "category": "fact", "subject": "user", "attribute": "said",
                                 "confidence": 0.9, "evidence_type": "explicit", "importance": 5,
                                 "decay_sensitivity": "low", "valid_from": None,
                                 "evidence": [{"item_id": item["item_id"], "quote": text}]}))
    return "\n".join(lines) + "\n"


def _database_strings(db: Path, tables: tuple[str, ...] | None = None) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        columns = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                              "WHERE data_type IN ('VARCHAR', 'JSON') OR data_type LIKE '%[]'").fetchall()
        found = []
        for table, column in columns:
            if tables is not None and table not in tables:
                continue
            found.extend(str(v) for (v,) in con.execute(f'SELECT "{column}"::VARCHAR FROM "{table}"').fetchall())
    return "\n".join(found)


def measure(work: Path, seeds: range) -> dict:
    planted, looks = write_tree(work / "openclaw", seeds)
    state = work / "state"
    source = str(work / "openclaw" / "agents")
    places: dict[str, str] = {}

    shown = _distill(state, "--json", "run", "--dry-run", "--show", "all", "--source", source)
    assert shown.returncode == 0, shown.stderr
    shown_texts: dict[str, str] = {}
    for line in shown.stdout.splitlines():
        if line.startswith("{"):
            decision = json.loads(line)
            message_id = decision["message_id"].split("#")[0]
            shown_texts[message_id] = shown_texts.get(message_id, "") + "\n" + (decision.get("text") or "")
    places["dry run"] = "\n".join(shown_texts.values())
    staged = _distill(state, "--json", "run", "--no-llm", "--source", source)
    assert staged.returncode == 0, staged.stderr
    batch_files = [Path(p) for p in json.loads(staged.stdout)["staged"]]
    places["batch files"] = "\n".join(entry["item"]["text"] for p in batch_files
                                       for entry in json.loads(p.read_text())["items"])
    for batch_file in batch_files:
        answer = work / f"{batch_file.stem}.answer.jsonl"
        answer.write_text(_parrot(batch_file))
        committed = _distill(state, "commit", batch_file.stem, "--beliefs", str(answer), "--accept-empty")
        assert committed.returncode == 0, committed.stderr
    exports = work / "exports"
    exports.mkdir()
    for fmt in ("jsonl", "markdown"):
        exported = _distill(state, "beliefs", "export", "--format", fmt, "-o", str(exports / f"beliefs.{fmt}"))
        assert exported.returncode == 0, exported.stderr
    places["exports"] = "\n".join(p.read_text() for p in exports.iterdir())
    places["database"] = _database_strings(state / "distill.duckdb")
    places["statements and quotes"] = _database_strings(state / "distill.duckdb", ("beliefs", "evidence"))
    raw = b"\n".join(p.read_bytes() for p in state.rglob("*") if p.is_file())

    leaks: Counter[str] = Counter()
    leaked_where: dict[str, set[str]] = {}
    for cls, form, place, secrets, message_ids in planted:
        for secret in secrets:
            bare = secret.translate({ord(c): None for c in INVISIBLE})
            if len(bare) >= SHORT:
                hits = {name for name, text in places.items() if secret in text or bare in text}
                if bare.encode() in raw or secret.encode() in raw:
                    hits.add("state dir bytes")
            else:  # a CVV or a PIN: sought as a word in what its own message became (three digits occur anywhere)
                word = re.compile(rf"(?<![0-9A-Za-z]){re.escape(bare)}(?![0-9A-Za-z])")
                hits = {"dry run"} if any(word.search(shown_texts.get(m, "")) for m in message_ids) else set()
            if hits:
                leaks[f"{cls} / {form} ({place})"] += 1
                leaked_where.setdefault(f"{cls} / {form} ({place})", set()).update(hits)
    redacted_looks = [(form, split, text) for form, split, text, message_id in looks
                      if "[REDACTED" in shown_texts.get(message_id, "")]
    by_split = Counter(case[0].rsplit("[", 1)[1].rstrip("]") for case in planted for _ in case[3])
    return {"secrets": sum(len(case[3]) for case in planted), "cases": len(planted), "by_split": by_split, "leaks": leaks,
            "leaked_where": leaked_where, "lookalikes": len(looks), "lookalikes_redacted": redacted_looks,
            "lookalikes_by_split": Counter(split for _, split, _, _ in looks),
            "beliefs": places["database"].count("\n")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="work in this dir and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="distill-secrets-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(work, range(1, args.seeds + 1))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{result['cases']} planted cases, {result['secrets']} secrets, {args.seeds} seeds")
    print(f"secrets found whole anywhere: {sum(result['leaks'].values())}")
    for split in SPLITS:
        print(f"  of {split} forms: {sum(n for name, n in result['leaks'].items() if f'[{split}]' in name)} "
              f"of {result['by_split'][split]}")
    for place in PLACES:
        print(f"  planted in {place}: {sum(n for name, n in result['leaks'].items() if name.endswith(f'({place})'))}")
    for name, count in result["leaks"].most_common():
        print(f"  {count:3d}  {name}: {', '.join(sorted(result['leaked_where'][name]))}")
    redacted = result["lookalikes_redacted"]
    print(f"look-alikes redacted: {len(redacted)} of {result['lookalikes']}")
    for split in SPLITS:
        print(f"  of {split} forms: {sum(s == split for _, s, _ in redacted)} of {result['lookalikes_by_split'][split]}")
    for (form, split), count in Counter((form, split) for form, split, _ in redacted).most_common():
        print(f"  {count:3d}  {form} [{split}]")
    for form, split, text in redacted[:20]:
        print(f"  {form} [{split}]: {text[:100]!r}")
    per_seed = len(redacted) / max(1, result["lookalikes"]) * 36
    sys.exit(1 if result["leaks"] or per_seed > 1 else 0)


if __name__ == "__main__":
    main()
