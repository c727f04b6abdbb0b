"""Benchmark (not a test): scan speed per transcript format on corpora of the same conversations and size.

    python tests/bench/bench_formats.py [--mb 20] [--repeat 3] [--tool-share 0.6]

One seeded list of sessions (user turns stating facts or chatting, assistant replies, tool calls whose outputs
make --tool-share of the bytes) is written as OpenClaw, Claude Code, Codex and Gemini CLI transcripts, each scaled
to --mb MB, each as its CLI writes it (`gemini-minimal`: the least favourable Gemini shape, see its writer). For
each, `run_once(dry_run=True)` with the scan in the main process alone (`scan_workers = 0`: the reader's own
speed, no worker processes): parse, clean, prefilter, redact and pack, nothing recorded. One untimed run of each
first (imports, compiled patterns), then --repeat rounds, each timing every format once, in turn from a different
one (the load of a shared host drifts). Figures are the median per format, in MB/s of transcript bytes and in
messages/s, and each format's speed as a share of OpenClaw's (the target: within 20 %).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]
from agent_lines import (
    cc_assistant_blocks,
    cc_bookkeeping,
    cc_envelope,
    cc_user,
    cx,
    cx_message,
    cx_meta,
    cx_scaffolding,
    dumps,
    gm_header,
    gm_message,
)

from distiller.config import Settings
from distiller.pipeline import run as pipeline

FACTS = ["I moved to Lisbon in 2021 with my wife.", "My favourite drink is green tea.",
         "I teach chemistry at a high school in Porto.", "I have two dogs named Rex and Kit.", "I started learning the cello last spring.",
         "We are planning a trip to Japan in April.", "I can't eat gluten, so I bake my own bread."]
CHAT = ["thanks!", "ok, what next?", "Can you run the tests again?", "Looks good to me.", "Why did that fail?"]
WORDS = "the build failed because the config path was wrong so I changed it and reran the tests".split()


def sessions(rng: random.Random, count: int, tool_share: float) -> list[list[tuple[str, str, str | None]]]:
    """Each session: turns of (user text, assistant reply, tool output or None)."""
    out = []
    for _ in range(count):
        turns = []
        for _ in range(rng.randint(8, 30)):
            user = rng.choice(FACTS) if rng.random() < 0.3 else rng.choice(CHAT)
            reply = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 80)))
            tool = None
            if rng.random() < 0.6:
                size = int(rng.expovariate(1 / (1200 * tool_share / (1 - tool_share + 1e-9))))
                tool = "\n".join(f"line {i}: " + " ".join(rng.choice(WORDS) for _ in range(8))
                                 for i in range(max(1, size // 60)))
            turns.append((user, reply, tool))
        out.append(turns)
    return out


def openclaw(n: int, turns) -> tuple[str, bytes]:
    sid = f"00000000-0000-4000-8000-{n:012d}"
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}]
    for k, (user, reply, tool) in enumerate(turns):
        def line(i, message, k=k):
            return {"type": "message", "id": f"{n:06x}{k:04x}{i}", "parentId": None,
                    "timestamp": "2026-03-01T10:00:01.000Z", "message": {**message, "timestamp": 1772359200000}}
        lines.append(line(0, {"role": "user", "content": [{"type": "text", "text": user}]}))
        if tool is not None:
            lines.append(line(1, {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "exec",
                                                                    "arguments": {"command": "make test"}}]}))
            lines.append(line(2, {"role": "toolResult", "toolCallId": "c1", "toolName": "exec",
                                  "content": [{"type": "text", "text": tool}], "isError": False}))
        lines.append(line(3, {"role": "assistant", "content": [{"type": "text", "text": reply}]}))
    return f"agents/main/sessions/{sid}.jsonl", dumps(*lines)


def claude_code(n: int, turns) -> tuple[str, bytes]:
    sid = f"00000000-0000-4000-8000-{n:012d}"
    lines = []
    for user, reply, tool in turns:
        lines.append(cc_user(sid, user))
        if tool is not None:
            lines += cc_assistant_blocks(sid, {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                               "input": {"command": "make test"}}, stop_reason="tool_use")
            lines.append(cc_envelope(sid, "user", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": tool, "is_error": False}]},
                toolUseResult={"stdout": tool, "stderr": "", "interrupted": False}))
        lines += cc_assistant_blocks(sid, {"type": "thinking", "thinking": "Let me answer.", "signature": "Eo8D"},
                                     {"type": "text", "text": reply})
        lines += cc_bookkeeping(sid)
    return f"claude/projects/-w/{sid}.jsonl", dumps(*lines)


def codex(n: int, turns) -> tuple[str, bytes]:
    sid = f"00000000-0000-4000-8000-{n:012d}"
    lines = [cx_meta(sid), *cx_scaffolding()]
    for user, reply, tool in turns:
        lines += [cx("turn_context", {"turn_id": "t", "cwd": "/w", "model": "gpt-5.5"}), cx_message("user", user),
                  cx("event_msg", {"type": "user_message", "message": user, "images": []})]
        if tool is not None:
            lines += [cx("response_item", {"type": "function_call", "name": "exec_command",
                                           "arguments": "{\"cmd\":\"make test\"}", "call_id": "call_1"}),
                      cx("response_item", {"type": "function_call_output", "call_id": "call_1", "output": tool})]
        lines += [cx_message("assistant", reply, phase="final_answer"),
                  cx("event_msg", {"type": "agent_message", "message": reply, "phase": "final_answer"})]
    return f"codex/sessions/2026/04/29/rollout-2026-04-29T10-58-39-{sid}.jsonl", dumps(*lines)


def gemini_minimal(n: int, turns) -> tuple[str, bytes]:
    """This bench's first Gemini CLI corpus, kept as the least favourable shape: the reply and its tool call in
    one record, the output once, none of the fields the CLI adds (1.23 times OpenClaw's messages per MB)."""
    sid = f"00000000-0000-4000-8000-{n:012d}"
    lines = [gm_header(sid)]
    for k, (user, reply, tool) in enumerate(turns):
        lines.append(gm_message("user", [{"text": user}], f"u{k}"))
        calls = [{"id": "t1", "name": "run_shell_command", "args": {"command": "make test"},
                  "result": [{"functionResponse": {"id": "t1", "response": {"output": tool}}}]}] if tool else []
        lines.append(gm_message("gemini", reply, f"g{k}", toolCalls=calls))
        lines.append({"$set": {"lastUpdated": "2026-10-02T10:00:00Z"}})
    return f"gemini/tmp/{'9f2c' * 16}/chats/session-2026-10-02T10-00-{n:08d}.jsonl", dumps(*lines)


GM_TS = "2026-10-02T10:00:00.000Z"
GM_TOKENS = {"input": 10422, "output": 61, "cached": 8120, "thoughts": 88, "tool": 0, "total": 10571}


def gemini(n: int, turns) -> tuple[str, bytes]:
    """What gemini-cli's ChatRecordingService appends (the golden recording's fields, tests/fixtures/gemini/): the
    user's record and `$set lastUpdated` after every recordMessage; a tool call the model made without text is a
    gemini record of its own with empty content, written by recordToolCalls once the call completed: the output
    in `result` (the function response) and again in `resultDisplay`, with the tool's display name, description
    and status; the reply then is a new gemini record with `thoughts`, `tokens` and `model`."""
    sid = f"00000000-0000-4000-8000-{n:012d}"
    lines = [gm_header(sid)]
    for k, (user, reply, tool) in enumerate(turns):
        lines += [gm_message("user", [{"text": user}], f"{sid[:24]}u{k:04d}", timestamp=GM_TS),
                  {"$set": {"lastUpdated": GM_TS}}]
        if tool is not None:
            call = {"id": f"run_shell_command-{n}-{k}", "name": "run_shell_command", "args": {"command": "make test"},
                    "result": [{"functionResponse": {"id": f"run_shell_command-{n}-{k}", "name": "run_shell_command",
                                                     "response": {"output": tool}}}],
                    "status": "success", "timestamp": GM_TS, "resultDisplay": tool, "displayName": "Shell",
                    "description": "make test", "renderOutputAsMarkdown": False}
            lines.append(gm_message("gemini", "", f"{sid[:24]}c{k:04d}", timestamp=GM_TS, toolCalls=[call],
                                    thoughts=[], model="gemini-3.1-pro-preview"))
        lines += [gm_message("gemini", reply, f"{sid[:24]}g{k:04d}", timestamp=GM_TS, thoughts=[],
                             tokens=GM_TOKENS, model="gemini-3.1-pro-preview"),
                  {"$set": {"lastUpdated": GM_TS}}]
    return f"gemini/tmp/{'9f2c' * 16}/chats/session-2026-10-02T10-00-{n:08d}.jsonl", dumps(*lines)


WRITERS = {"openclaw": openclaw, "claude-code": claude_code, "codex": codex, "gemini": gemini,
           "gemini-minimal": gemini_minimal}
ROOTS = {"openclaw": "agents", "claude-code": "claude", "codex": "codex", "gemini": "gemini",
         "gemini-minimal": "gemini"}


def write(root: Path, name: str, all_sessions, target: int) -> int:
    """The sessions in one format, repeated (with fresh ids) until `target` bytes."""
    written = n = 0
    while written < target:
        turns = all_sessions[n % len(all_sessions)]
        relative, data = WRITERS[name](n, turns)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written += len(data)
        n += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tool-share", type=float, default=0.6)
    args = parser.parse_args()
    rng = random.Random(0)
    base = sessions(rng, 200, args.tool_share)
    work = Path(tempfile.mkdtemp(prefix="distill-bench-formats-"))
    try:
        sizes = {name: write(work / name, name, base, int(args.mb * 1_000_000)) for name in WRITERS}
        times: dict[str, list[float]] = {name: [] for name in WRITERS}
        messages: dict[str, int] = {}

        def timed(name: str) -> float:
            settings = Settings(state_dir=work / f"state-{name}", scan_workers=0)
            started = time.perf_counter()
            messages[name] = pipeline.run_once(settings, [work / name / ROOTS[name]], dry_run=True).tally.messages
            return time.perf_counter() - started

        for name in WRITERS:  # untimed: the first run in a process pays for imports and compiled patterns
            timed(name)
        for round_ in range(args.repeat):  # interleaved, each round from another format: a shared host's load
            names = list(WRITERS)          # drifts, and a format timed all in a row would take one phase of it
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                times[name].append(timed(name))
        results = {}
        for name in WRITERS:
            median = statistics.median(times[name])
            results[name] = (sizes[name] / median / 1e6, messages[name] / median, sizes[name], messages[name])
        reference = results["openclaw"][0]
        print(f"{'format':14} {'MB':>6} {'messages':>9} {'MB/s':>7} {'msg/s':>8} {'vs OpenClaw':>11}")
        for name, (mbps, mps, size, count) in results.items():
            print(f"{name:14} {size / 1e6:6.1f} {count:9,} {mbps:7.1f} {mps:8,.0f} {mbps / reference:10.0%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
