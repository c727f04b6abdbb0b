"""Hand-written lines of Claude Code, Codex and Gemini CLI transcripts, in the shapes of
`shared/reference/transcript-formats.md` §5–6 (what the real CLIs wrote, §5.8 and §6.5) and Gemini CLI's
chatRecordingService: builders for tests and benchmarks, not a copy of anyone's files."""

from __future__ import annotations

import itertools
import uuid

import orjson

_n = itertools.count(1)
TS = "2026-03-01T22:38:47.557Z"


def dumps(*entries: dict) -> bytes:
    return b"".join(orjson.dumps(entry) + b"\n" for entry in entries)


# --- Claude Code -------------------------------------------------------------------------------------------------

def cc_envelope(session: str, kind: str, **extra) -> dict:
    line = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/Users/alice/src/app",
            "sessionId": session, "version": "2.1.197", "gitBranch": "HEAD", "type": kind,
            "uuid": str(uuid.uuid4()), "timestamp": TS}
    line.update(extra)
    return line


def cc_user(session: str, text: str | list, **extra) -> dict:
    return cc_envelope(session, "user", message={"role": "user", "content": text}, promptSource="typed", **extra)


def cc_assistant_blocks(session: str, *blocks: dict, stop_reason: str = "end_turn", message_id: str | None = None
                        ) -> list[dict]:
    """One API response, one line per content block sharing message.id and requestId (§5.2, §5.8)."""
    message_id = message_id or f"msg_{next(_n):024x}"
    return [cc_envelope(session, "assistant", requestId=f"req_{message_id}",
                        message={"model": "claude-opus-4-6", "id": message_id, "type": "message", "role": "assistant",
                                 "content": [block], "stop_reason": stop_reason, "usage": {"input_tokens": 3}})
            for block in blocks]


def cc_reply(session: str, text: str, thinking: str = "Let me think.") -> list[dict]:
    return cc_assistant_blocks(session, {"type": "thinking", "thinking": thinking, "signature": "Eo8D"},
                               {"type": "text", "text": text})


def cc_tool_turn(session: str, output: str) -> list[dict]:
    call = cc_assistant_blocks(session, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"cmd": "ls"}},
                               stop_reason="tool_use")
    result = cc_envelope(session, "user", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": output, "is_error": False}]},
        toolUseResult={"stdout": output})
    return [*call, result]


def cc_bookkeeping(session: str) -> list[dict]:
    return [{"type": "last-prompt", "lastPrompt": "…", "leafUuid": str(uuid.uuid4()), "sessionId": session},
            {"type": "ai-title", "aiTitle": "Moving house", "sessionId": session},
            cc_envelope(session, "system", subtype="turn_duration", durationMs=1200, isMeta=False)]


def cc_session(session: str, turns: list[tuple[str, str]]) -> bytes:
    """A session as the terminal UI writes it: snapshot, user line, attachments, the reply's blocks, bookkeeping."""
    lines: list[dict] = []
    for user, reply in turns:
        prompt = cc_user(session, user)
        lines.append({"type": "file-history-snapshot", "messageId": prompt["uuid"],
                      "snapshot": {"messageId": prompt["uuid"], "trackedFileBackups": {}, "timestamp": TS},
                      "isSnapshotUpdate": False})
        lines.append(prompt)
        lines.append(cc_envelope(session, "attachment", attachment={"type": "task_reminder", "content": [],
                                                                    "itemCount": 0}))
        lines.extend(cc_reply(session, reply))
        lines.extend(cc_bookkeeping(session))
    return dumps(*lines)


# --- Codex -------------------------------------------------------------------------------------------------------

def cx(kind: str, payload: dict, ordinal: int | None = None) -> dict:
    line = {"timestamp": TS, "type": kind, "payload": payload}
    if ordinal is not None:
        line["ordinal"] = ordinal
    return line


def cx_meta(session: str, source: object = "cli", **extra) -> dict:
    payload = {"id": session, "timestamp": TS, "cwd": "/Users/alice", "originator": "codex-tui",
               "cli_version": "0.125.0", "source": source, "model_provider": "openai",
               "base_instructions": {"text": "You are Codex."}}
    payload.update(extra)
    return cx("session_meta", payload)


def cx_message(role: str, *texts: str, phase: str | None = None) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    payload = {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]}
    if phase:
        payload["phase"] = phase
    return cx("response_item", payload)


def cx_scaffolding() -> list[dict]:
    return [cx_message("developer", "<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>"),
            cx_message("user", "# AGENTS.md instructions for /Users/alice\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>",
                       "<environment_context>\n  <cwd>/Users/alice</cwd>\n</environment_context>")]


def cx_turn(user: str, reply: str, *, newer: bool = False) -> list[dict]:
    """A turn of an older build (event_msg user_message / agent_message) or of 0.171 (item_completed)."""
    lines = [cx("turn_context", {"turn_id": str(uuid.uuid4()), "cwd": "/Users/alice", "model": "gpt-5.5"}),
             cx_message("user", user)]
    if newer:
        lines.append(cx("event_msg", {"type": "item_completed", "item": {"type": "UserMessage", "content": [
            {"type": "text", "text": user}]}}))
    else:
        lines.append(cx("event_msg", {"type": "user_message", "message": user, "images": []}))
    lines += [cx("response_item", {"type": "reasoning", "summary": [], "content": None,
                                   "encrypted_content": "gAAAAA"}),
              cx("response_item", {"type": "function_call", "name": "exec_command",
                                   "arguments": "{\"cmd\":\"ls\"}", "call_id": "call_1"}),
              cx("response_item", {"type": "function_call_output", "call_id": "call_1", "output": "a\nb\n"}),
              cx_message("assistant", reply, phase="final_answer")]
    if newer:
        lines.append(cx("event_msg", {"type": "item_completed", "item": {"type": "AgentMessage", "content": [
            {"type": "text", "text": reply}]}}))
        lines.append(cx("token_usage_record", {"input_tokens": 10}))
    else:
        lines.append(cx("event_msg", {"type": "agent_message", "message": reply, "phase": "final_answer"}))
    lines.append(cx("event_msg", {"type": "token_count", "info": None}))
    return lines


def cx_session(session: str, turns: list[tuple[str, str]], *, newer: bool = False) -> bytes:
    lines = [cx_meta(session), *cx_scaffolding()]
    for user, reply in turns:
        lines += cx_turn(user, reply, newer=newer)
    return dumps(*lines)


# --- Gemini CLI --------------------------------------------------------------------------------------------------

def gm_header(session: str) -> dict:
    return {"sessionId": session, "projectHash": "9f2c" * 16, "startTime": TS, "lastUpdated": TS, "kind": "main"}


def gm_message(kind: str, content: object, message_id: str | None = None, **extra) -> dict:
    line = {"id": message_id or str(uuid.uuid4()), "timestamp": TS, "type": kind, "content": content}
    line.update(extra)
    return line


def gm_session(session: str, turns: list[tuple[str, str]]) -> bytes:
    lines: list[dict] = [gm_header(session)]
    for user, reply in turns:
        lines.append(gm_message("user", [{"text": user}]))
        reply_id = str(uuid.uuid4())
        lines.append(gm_message("gemini", reply, reply_id, model="gemini-2.5-pro"))
        lines.append(gm_message("gemini", reply, reply_id, model="gemini-2.5-pro", tokens={"input": 10}))
        lines.append({"$set": {"lastUpdated": TS}})
    return dumps(*lines)


# --- whole transcripts for the spine's tests (tests/test_format_spine.py, tests/test_crash.py) -----------------------
# Each returns (its dir below the tree, its file name, its bytes); a Claude Code response is three lines, the
# earlier two with stop_reason null as older builds write them.

SPINE_SESSION = "5e55a0b1-0000-4000-8000-000000000001"
FACTS = ["I moved to Lisbon in 2021 with my wife.", "My favourite drink is green tea.", "I teach chemistry.",
         "I have two dogs named Rex and Kit.", "I started learning the cello last spring."]


def claude_code_transcript(turns: int, session: str = SPINE_SESSION) -> tuple[str, str, bytes]:
    lines = []
    for n in range(turns):
        lines.append(cc_user(session, FACTS[n % len(FACTS)]))
        if n % 2:
            lines += cc_tool_turn(session, "output " * 20)
        blocks = cc_assistant_blocks(session, {"type": "thinking", "thinking": "hm", "signature": "s"},
                                     {"type": "text", "text": f"Reply {n}, part one."},
                                     {"type": "text", "text": f"Reply {n}, part two."})
        for line in blocks[:-1]:
            line["message"]["stop_reason"] = None
        lines += blocks
        lines += cc_bookkeeping(session)
    return "projects/-Users-alice-app", f"{session}.jsonl", dumps(*lines)


def codex_transcript(turns: int, session: str = SPINE_SESSION) -> tuple[str, str, bytes]:
    lines = [cx_meta(session), *cx_scaffolding()]
    for n in range(turns):
        lines += cx_turn(FACTS[n % len(FACTS)], f"Reply {n}.", newer=bool(n % 2))
    return "sessions/2026/04/29", f"rollout-2026-04-29T10-58-39-{session}.jsonl", dumps(*lines)


def gemini_transcript(turns: int, session: str = SPINE_SESSION) -> tuple[str, str, bytes]:
    lines = [gm_header(session)]
    for n in range(turns):
        lines.append(gm_message("user", [{"text": FACTS[n % len(FACTS)]}], f"u{n}"))
        lines.append(gm_message("gemini", f"Reply {n}.", f"g{n}"))
        lines.append(gm_message("gemini", f"Reply {n}.", f"g{n}", tokens={"input": n}))
        lines.append({"$set": {"lastUpdated": f"t{n}"}})
    return f"tmp/{'9f2c' * 16}/chats", f"session-2026-10-02T10-00-{session[:8]}.jsonl", dumps(*lines)


TRANSCRIPTS = {"claude-code": claude_code_transcript, "codex": codex_transcript, "gemini": gemini_transcript}
