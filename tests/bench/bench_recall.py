"""Recall: speed over a large store, and quality on the persona development set.

    python tests/bench/bench_recall.py speed [--beliefs 10000] [--repeat 30]
    python tests/bench/bench_recall.py quality [--limit 300] [--split all|tune|held-out]

speed: a store of N beliefs (1–3 evidence items each, 12 words of statement, through the real write path) and
  - `select` in process on an open connection, and `api.recall` (open, select, render, close), median and p95 of
    prompts drawn from the store's vocabulary;
  - the Claude Code hook end to end: `distill hook claude-code` as Claude Code runs it (a new process, the event
    on stdin): the first prompt after a write (it reads the store and saves the snapshot), then the median and
    p95 of later prompts (from the snapshot), against `python -c pass` and `python -c "import duckdb"` for scale.

quality: each persona conversation's speaker becomes a user with an agent of their own (so a recall's scope is
  that user), the corpus is distilled offline (rules), and for each persona sentence a question is asked built
  from its last two content words ("What about my <w1> <w2>?"). A hit is a recalled belief that states the
  sentence (it shares at least half of its content stems: tests/bench/quality.py's rule); recall@10 is the share
  of sentences with a hit among the first 10 recalled (the recalled tier alone, limit 10), MRR the mean of
  1/rank of the first hit. The reference is BM25 over the user's raw turns with the same terms (a turn that
  states the sentence is a hit): what a store of beliefs should approach with ten short lines instead of a
  transcript. The ceiling is the share of sentences some belief of the user states at all (extraction recall).
  Also: how many of the users' own turns the echo screen would cut against the store built from them (a false
  positive each).
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from distiller.recall import api, render
from distiller.recall.select import Limits, select
from distiller.records import Belief, EvidenceItem
from distiller.store import writes
from distiller.store.db import connect, transaction
from distiller.terms import STOP_WORDS, terms, words

NOW = datetime(2026, 6, 1, tzinfo=UTC)
CATEGORIES = ("identity", "goal", "preference", "decision", "fact")


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"median {statistics.median(values) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms"


def build_store(path: Path, n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"{a}{b}" for a in ("bar", "cor", "dal", "fen", "gor", "hal", "kin", "lor", "mar", "nor", "pel", "ros",
                                 "sal", "tor", "val", "wen") for b in ("a", "ex", "ing", "on", "um", "ix", "ard",
                                                                     "ette", "ol", "us", "ine", "ock")]
    beliefs = []
    for i in range(n):
        statement = f"The user {rng.choice(['likes', 'owns', 'plans', 'uses', 'visited'])} " + " ".join(
            rng.choice(vocab) for _ in range(10)) + f" item {i}"
        evidence = tuple(
            EvidenceItem(f"m{i}-{k}", f"s{rng.randrange(n // 5 + 1)}", "main", "/agents/main/sessions/x.jsonl", 0,
                         10, (NOW - timedelta(hours=rng.randrange(1, 24 * 365))).isoformat(),
                         " ".join(rng.choice(vocab) for _ in range(6)))
            for k in range(rng.randint(1, 3)))
        beliefs.append(Belief(statement, rng.choice(CATEGORIES), "user", "", rng.uniform(0.5, 0.95), "explicit",
                              rng.randint(1, 9), "medium", None, rng.choice(["agent:main"] * 4 + ["global"]),
                              evidence, "rules", None, "bench"))
    with connect(path) as con, transaction(con):
        writes.upsert(con, beliefs, "bench", now=NOW)
    return vocab


def speed(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        db = state / "distill.duckdb"
        started = time.perf_counter()
        vocab = build_store(db, args.beliefs)
        with connect(db, read_only=True) as con:
            counts = con.execute("SELECT count(*), (SELECT count(*) FROM evidence), (SELECT count(*) FROM "
                                 "belief_terms) FROM beliefs").fetchone()
        print(f"store: {counts[0]} beliefs, {counts[1]} evidence items, {counts[2]} term rows "
              f"(built in {time.perf_counter() - started:.1f} s)")
        rng = random.Random(1)
        prompts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 12))) + " what do you think?"
                   for _ in range(args.repeat)]
        with connect(db, read_only=True) as con:
            select(con, prompts[0], agent="main", now=NOW)  # warm: the first query plans and loads
            times, cpu_times = [], []
            for prompt in prompts:
                t0, c0 = time.perf_counter(), time.process_time()
                render(select(con, prompt, agent="main", now=NOW))
                times.append(time.perf_counter() - t0)
                cpu_times.append(time.process_time() - c0)
        print(f"select + render, open connection ({args.repeat} prompts):  {_ms(times)}; CPU {_ms(cpu_times)}")
        times = []
        for prompt in prompts:
            t0 = time.perf_counter()
            api.recall(db, prompt, agent="main", now=NOW)
            times.append(time.perf_counter() - t0)
        print(f"api.recall (open, select, render, close):         {_ms(times)}")
        distill = Path(sys.executable).with_name("distill")
        hook = [str(distill), "hook", "claude-code", "--state-dir", str(state), "--agent", "main"]

        cpu: list[float] = []

        def run(command: list[str], prompt: str) -> float:
            """Wall time; the process's CPU time (user + system) goes to `cpu`: on a loaded machine it is the
            figure that says what the process itself costs."""
            event = orjson.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(command, input=event, capture_output=True)
            elapsed = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            assert done.returncode == 0 and (command is not hook or b"additionalContext" in done.stdout), done
            return elapsed

        print(f"{'hook, first prompt after a write (reads the store, saves the snapshot)':<72}"
              f"{run(hook, prompts[0]) * 1000:6.1f} ms")
        print(f"  snapshot: {(state / 'recall-snapshot.json').stat().st_size / 1e6:.1f} MB")
        count = max(5, args.repeat // 3)
        for label, command in (("python -c pass", [sys.executable, "-c", "pass"]),
                               ("python -c 'import duckdb'", [sys.executable, "-c", "import duckdb"]),
                               ("hook end to end, from the snapshot (every later prompt)", hook)):
            cpu.clear()
            walls = [run(command, prompt) for prompt in prompts[:count]]
            print(f"{label:<72}{_ms(walls)}; CPU {_ms(cpu)}")


# -- quality ---------------------------------------------------------------------------------------------------

def content_stems(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def states(text_stems: frozenset[str], persona: frozenset[str]) -> bool:
    shared = len(text_stems & persona)
    return shared >= 1 and shared * 2 >= len(persona)


def question(sentence: str) -> str:
    content = [w for w in words(sentence) if w not in STOP_WORDS]
    return "What about my " + " ".join(content[-2:]) + "?"


def bm25_rank(docs: list[Counter], query: Counter, k1: float = 1.2, b: float = 0.75) -> list[int]:
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs) / max(n, 1)
    df = Counter(t for d in docs for t in d)
    scores = []
    for index, doc in enumerate(docs):
        dl = sum(doc.values())
        score = sum(qtf * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * doc[t] * (k1 + 1)
                    / (doc[t] + k1 * (1 - b + b * dl / avgdl)) for t, qtf in query.items() if t in doc)
        if score > 0:
            scores.append((-score, index))
    return [index for _, index in sorted(scores)]


def quality(args: argparse.Namespace) -> None:
    from personachat import read_conversations, sessions_of, transcript_lines

    sessions = [s for s in sessions_of(read_conversations(limit=args.limit))
                if args.split == "all" or s.conversation.split == args.split]
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "agents", Path(tmp) / "state"
        agents = {}
        for session in sessions:
            agent = f"u{session.session_id[:12]}"
            agents[session.session_id] = agent
            folder = root / agent / "sessions"
            folder.mkdir(parents=True)
            (folder / f"{session.session_id}.jsonl").write_bytes(b"\n".join(transcript_lines(session)) + b"\n")
        started = time.perf_counter()
        done = subprocess.run([str(Path(sys.executable).with_name("distill")), "--state-dir", str(state), "--json",
                               "run", "--source", str(root)], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()
        print(f"{len(sessions)} users distilled (rules) in {time.perf_counter() - started:.1f} s")
        hits = {"beliefs": [], "turns": []}
        with connect(state / "distill.duckdb", read_only=True) as con:
            from distiller.screen import echo
            from distiller.store.terms import live_statements

            echoes = echo.index(live_statements(con))
        turns_all = [text for s in sessions for speaker, text in s.conversation.turns if speaker == s.speaker]
        user_turns, echoed = len(turns_all), sum(echo.strip(text, echoes)[1] > 0 for text in turns_all)
        ceiling = sentences = 0
        db = state / "distill.duckdb"
        with connect(db, read_only=True) as con:
            for session in sessions:
                agent = agents[session.session_id]
                statements = [row[0] for row in con.execute(
                    "SELECT statement FROM beliefs WHERE scope = $s AND status IN ('active', 'provisional')",
                    {"s": f"agent:{agent}"}).fetchall()]
                turns = [text for speaker, text in session.conversation.turns if speaker == session.speaker]
                turn_terms = [terms(text) for text in turns]
                for sentence in session.persona:
                    persona = content_stems(sentence)
                    if not persona:
                        continue
                    sentences += 1
                    ceiling += any(states(content_stems(s), persona) for s in statements)
                    lines = select(con, question(sentence), agent=agent, limits=Limits(0, 0, 10), now=NOW)
                    ranked = [line.statement for line in lines if line.tier == "recalled"]
                    hits["beliefs"].append(next((r for r, s in enumerate(ranked, 1)
                                                 if states(content_stems(s), persona)), None))
                    order = bm25_rank(turn_terms, terms(question(sentence)))[:10]
                    hits["turns"].append(next((r for r, i in enumerate(order, 1)
                                               if states(frozenset(turn_terms[i]), persona)), None))
    print(f"{sentences} persona sentences; a belief of the user states {ceiling / sentences:.1%} of them (ceiling)")
    print(f"echo screen against the store built from these users: {echoed} of {user_turns} user turns would lose "
          f"words ({echoed / max(user_turns, 1):.2%}): a user's own words are not echoes of statements")
    for label, ranks in (("recall, beliefs (BM25 over the term table)", hits["beliefs"]),
                         ("reference, BM25 over the raw user turns", hits["turns"])):
        found = [r for r in ranks if r is not None]
        print(f"  {label:<45} recall@10 {len(found) / len(ranks):6.1%}   "
              f"MRR {sum(1 / r for r in found) / len(ranks):.3f}")
    found = sum(r is not None for r in hits["beliefs"])
    print(f"  recall finds {found / max(ceiling, 1):.1%} of the sentences the store states at all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    fast = sub.add_parser("speed")
    fast.add_argument("--beliefs", type=int, default=10_000)
    fast.add_argument("--repeat", type=int, default=30)
    good = sub.add_parser("quality")
    good.add_argument("--limit", type=int, default=300, help="conversations (two users each)")
    good.add_argument("--split", choices=("all", "tune", "held-out"), default="all")
    args = parser.parse_args()
    speed(args) if args.what == "speed" else quality(args)


if __name__ == "__main__":
    main()
