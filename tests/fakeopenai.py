"""A fake OpenAI-compatible Chat Completions server on 127.0.0.1, so the real `openai` client is exercised over HTTP
without the network (the HTTP plumbing is fakeapi.py's).

Replies come from a FIFO that tests fill (`enqueue_*`); when it is empty, a `responder` (a hostile model) is asked,
else the fake answers with no candidates, or in auto mode with one candidate per citable item that has the word
"I" (fakeapi.auto_candidates). A server that does not take a structured-output mode is `rejects={"json_schema"}`:
such a request gets `reject_status` (400 by default, 422 as vLLM answers) with an error in `error_style` ("openai":
{"error": {"message": …}}, "ollama": {"error": "…"}). Usage is estimated from text length unless a reply says
otherwise (`usage=None` sends none at all).

Endpoints: POST /v1/chat/completions, GET /v1/models.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from fakeapi import (
    _ITEM,
    FakeServer,
    Recorded,
    SentItem,
    auto_candidates,
    tokens,
)

Response = tuple[int, dict[str, str], bytes]
_DEFAULT = object()


@dataclass(frozen=True)
class Reply:
    """A scripted reply: a completion (content, finish reason, usage: a dict, _DEFAULT for an estimate, None for
    no usage field) or an error (status, message, headers)."""

    status: int = 200
    content: str | None = ""
    finish_reason: str | None = "stop"
    usage: Any = _DEFAULT
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # sent as is instead of a completion (a garbled body)


def user_text(params: dict[str, Any]) -> str:
    """The text of the request's user messages (the system prompt's worked examples hold <item> tags too)."""
    parts = []
    for message in params.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            parts.append(message["content"])
    return "\n".join(parts)


def items_of(params: dict[str, Any]) -> list[SentItem]:
    return [SentItem(html.unescape(i), r, t, c == "yes", html.unescape(x)) for i, r, t, c, x in
            _ITEM.findall(user_text(params))]


class FakeOpenAI(FakeServer):
    """The fake server; use as a context manager or via the `fake_openai` fixture."""

    URL_PATH = "/v1"

    def __init__(self, *, auto: bool = False, rejects: frozenset[str] | set[str] = frozenset(),
                 reject_status: int = 400, error_style: str = "openai", models: tuple[str, ...] = (),
                 key: str | None = None) -> None:
        self.auto = auto
        self.rejects = set(rejects)
        self.reject_status = reject_status
        self.error_style = error_style
        self.models = models  # when given, any other model is a 404, as Ollama answers an unpulled one
        self.key = key  # when given, any other bearer token is a 401
        self.responder: Callable[[list[SentItem], list[SentItem]], Reply | None] | None = None
        self.seen_items: list[SentItem] = []
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # scripting

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    def enqueue_content(self, content: str | None, *, finish_reason: str | None = "stop", usage: Any = _DEFAULT
                        ) -> None:
        self.enqueue(Reply(content=content, finish_reason=finish_reason, usage=usage))

    def enqueue_candidates(self, candidates: list[dict[str, Any]], **kwargs: Any) -> None:
        self.enqueue_content(orjson.dumps({"candidates": candidates}).decode(), **kwargs)

    def enqueue_error(self, status: int, message: str = "scripted error", headers: dict[str, str] | None = None
                      ) -> None:
        """An error reply; a retryable one carries `retry-after-ms: 1` so the client's retries are instant."""
        extra = {"retry-after-ms": "1"} if status in (408, 409, 429) or status >= 500 else {}
        self.enqueue(Reply(status, message=message, headers={**extra, **(headers or {})}))

    def completion_requests(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/chat/completions requests, the client's retries included."""
        return [r.body for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")]

    def modes(self) -> list[str]:
        """The structured-output mode of each completion request: json_schema, json_object or text."""
        return [(body.get("response_format") or {}).get("type", "text") for body in self.completion_requests()]

    # serving

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Response:
        body = orjson.loads(raw) if raw else None
        completions = method == "POST" and path.rstrip("/").endswith("/chat/completions")
        with self._lock:
            self.in_flight += completions
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.requests.append(Recorded(method, path, headers, body, time.monotonic(), self.in_flight))
        try:
            if self.key is not None and headers.get("authorization") != f"Bearer {self.key}":
                return self._error(401, "invalid api key")
            if completions:
                return self._complete(body)
            if method == "GET" and path.rstrip("/").endswith("/models"):
                names = self.models or ("fake-model",)
                return _json(200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "fake"}
                                                               for n in names]})
            return self._error(404, f"{method} {path} is not served by the fake")
        finally:
            with self._lock:
                self.in_flight -= completions

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        if self.error_style == "ollama":
            body: dict[str, Any] = {"error": message}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        return _json(status, body, headers)

    def _complete(self, params: dict[str, Any]) -> Response:
        if self.models and params.get("model") not in self.models:
            return self._error(404, f"model '{params.get('model')}' not found, try pulling it first")
        mode = (params.get("response_format") or {}).get("type", "text")
        if mode in self.rejects:
            return self._error(self.reject_status, f"response_format {mode} is not supported by this server")
        items = items_of(params)
        reply = self._next_reply(items)
        if reply is not None and reply.status != 200:
            return self._error(reply.status, reply.message, reply.headers)
        if reply is not None and reply.body is not None:
            return 200, {"content-type": "application/json"}, (reply.body if isinstance(reply.body, bytes)
                                                               else orjson.dumps(reply.body))
        if reply is None:
            found = auto_candidates(user_text(params)) if self.auto else []
            reply = Reply(content=orjson.dumps({"candidates": found}).decode())
        prompt = "".join(m.get("content") or "" for m in params.get("messages") or [] if isinstance(m, dict))
        usage = ({"prompt_tokens": tokens(prompt), "completion_tokens": tokens(reply.content or ""),
                  "total_tokens": tokens(prompt) + tokens(reply.content or "")}
                 if reply.usage is _DEFAULT else reply.usage)
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{next(self._ids):06d}", "object": "chat.completion", "created": 1_780_000_000,
            "model": params.get("model", "?"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                         "finish_reason": reply.finish_reason}],
        }
        if usage is not None:
            completion["usage"] = usage
        return _json(200, completion)


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return status, {"content-type": "application/json", **(headers or {})}, orjson.dumps(body)


@pytest.fixture
def fake_openai():
    """A running FakeOpenAI; point the client at `fake_openai.base_url`."""
    with FakeOpenAI() as fake:
        yield fake
