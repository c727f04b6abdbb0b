"""The OpenClaw adapter on real line shapes (transcript-formats.md §2)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from distiller.sources.openclaw.parse import (
    MAX_ID_CHARS,
    _timestamp,
    bounded_id,
    joined_text,
    message_text,
    parse_header,
    to_message,
)

KW = {"agent": "main", "session_id": "s1", "file": "/f.jsonl", "byte_start": 10, "byte_end": 20}


def line(raw: str):
    return orjson.loads(raw)


def test_user_message_keeps_only_text_blocks():
    entry = line('{"type":"message","id":"813a837d","parentId":"431dc59d","timestamp":"2026-02-25T05:18:55.858Z",'
                 '"message":{"role":"user","content":[{"type":"text","text":"first"},{"type":"image","data":"QUJD",'
                 '"mimeType":"image/png"},{"type":"text","text":"second"}],"timestamp":1771996735857}}')
    message = to_message(entry, **KW)
    assert (message.message_id, message.parent_id, message.role) == ("813a837d", "431dc59d", "user")
    assert message.text == "first\nsecond"
    assert message.ts == "2026-02-25T05:18:55.858Z"
    assert (message.byte_start, message.byte_end, message.session_id) == (10, 20, "s1")


def test_assistant_thinking_and_tool_calls_are_not_text():
    entry = line('{"type":"message","id":"dd433acd","parentId":"813a837d","timestamp":"2026-02-25T05:19:12.471Z",'
                 '"message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},'
                 '{"type":"toolCall","id":"c1","name":"exec","arguments":{"command":"ls"}}],"provider":"opencode"}}')
    assert to_message(entry, **KW) == "no_text"


def test_skip_reasons():
    assert to_message(line('{"type":"model_change","id":"a","provider":"x"}'), **KW) == "non_message"
    assert to_message(line('{"type":"totally_new","id":"a"}'), **KW) == "unknown_type"
    assert to_message(line('{"type":"message","id":"a","message":{"role":"toolResult","content":[]}}'),
                      **KW) == "tool_result"
    assert to_message(line('{"type":"message","id":"a","message":{"role":"bashExecution"}}'), **KW) == "other_role"
    mirror = ('{"type":"message","id":"a","message":{"role":"assistant","provider":"openclaw",'
              '"model":"delivery-mirror","content":[{"type":"text","text":"hi"}]}}')
    assert to_message(line(mirror), **KW) == "transcript_only"
    assert to_message(line(mirror.replace("delivery-mirror", "gateway-injected")), **KW) == "transcript_only"
    assert to_message(line('{"type":"message","message":{"role":"user","content":"hi"}}'), **KW) == "no_message_id"
    assert to_message([1, 2], **KW) == "not_an_object"


def test_inter_session_and_string_content_and_epoch_timestamp():
    entry = line('{"type":"message","id":"b1","message":{"role":"user","content":"forwarded words",'
                 '"provenance":{"kind":"inter_session"},"timestamp":1771996735857}}')
    message = to_message(entry, **KW)
    assert message.inter_session and message.text == "forwarded words"
    assert message.ts.startswith("2026-02-25T05:18:55.857")


def test_header_gives_the_session_id():
    assert parse_header(line('{"type":"session","version":4,"id":"uuid-1"}')).session_id == "uuid-1"
    assert parse_header(line('{"type":"message","id":"x"}')).session_id is None
    assert message_text({"content": None}) == ""


def test_tool_results_are_recognised_without_parsing_and_nothing_else_is():
    from distiller.sources.openclaw.parse import is_tool_result_line

    tool = (b'{"type":"message","id":"e0f1c758","parentId":"dd433acd","timestamp":"2026-02-25T05:19:12.544Z",'
            b'"message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[]}}')
    assert is_tool_result_line(tool)
    quoting = (b'{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":'
               b'[{"type":"text","text":"\\"role\\":\\"toolResult\\""}]}}')
    assert not is_tool_result_line(quoting)
    assert to_message(orjson.loads(quoting), **KW).text == '"role":"toolResult"'
    reordered = b'{"message":{"role":"toolResult","content":[]},"type":"message","id":"x"}'
    assert not is_tool_result_line(reordered)
    assert to_message(orjson.loads(reordered), **KW) == "tool_result"


def test_oversized_ids_become_stable_digests_and_an_oversized_timestamp_is_dropped():
    from distiller.sources.openclaw.parse import MAX_ID_CHARS

    long_id, other = "a" * 100_000, "a" * 99_999 + "b"
    entry = {"type": "message", "id": long_id, "parentId": other, "timestamp": "9" * 100_000,
             "message": {"role": "user", "content": "hello"}}
    message = to_message(entry, **KW)
    assert len(message.message_id) <= MAX_ID_CHARS and len(message.parent_id) <= MAX_ID_CHARS
    assert message.message_id != message.parent_id
    assert message.message_id == to_message(entry, **KW).message_id  # a reread gives the same key
    assert message.ts is None
    assert parse_header({"type": "session", "id": long_id}).session_id == message.message_id
    normal = {**entry, "id": "x" * MAX_ID_CHARS}
    assert to_message(normal, **KW).message_id == "x" * MAX_ID_CHARS


_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "thinking", "toolCall", "image"]),
                           "text": st.one_of(st.text(max_size=5), st.integers(), st.none())}),
    st.fixed_dictionaries({"type": st.just("text")}),
    st.text(max_size=3), st.integers(), st.none(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK, max_size=3))
def test_the_one_text_block_shortcut_equals_joining_the_blocks(content):
    assert message_text({"content": content}) == joined_text(content)
    assert type(message_text({"content": content})) is str


_ID = st.one_of(st.text(min_size=1, max_size=3), st.text(min_size=MAX_ID_CHARS - 1, max_size=MAX_ID_CHARS + 1))


@settings(max_examples=200, deadline=None)
@given(_ID, st.one_of(_ID, st.none(), st.integers()), st.one_of(_ID, st.none(), st.integers(0, 2**40)),
       st.one_of(st.none(), st.integers(0, 2**40)))
def test_ids_and_timestamps_are_bounded_as_bounded_id_and_the_timestamp_rule_say(message_id, parent, ts, epoch):
    entry = {"type": "message", "id": message_id, "message": {"role": "user", "content": "words"}}
    if parent is not None:
        entry["parentId"] = parent
    if ts is not None:
        entry["timestamp"] = ts
    if epoch is not None:
        entry["message"]["timestamp"] = epoch
    message = to_message(entry, **KW)
    assert message.message_id == bounded_id(message_id)
    assert message.parent_id == (bounded_id(parent) if isinstance(parent, str) else None)
    assert message.ts == _timestamp(entry, entry["message"])
