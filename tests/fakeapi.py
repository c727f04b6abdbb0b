"""A fake Anthropic Messages API on 127.0.0.1, so the real SDK is exercised over HTTP without the network.

Replies come from a FIFO that tests fill (`enqueue_*`). When it is empty the fake answers with no candidates,
or, in auto mode, with a deterministic extraction derived from the request (for benchmarks). Token usage is
estimated from text length, and prompt caching is emulated as the API does it: only a prefix that ends in a
cache_control marker and reaches the model's minimum cacheable length (the price table's, unless a test sets
one) is cached; the first request with it reports cache-creation tokens, later ones cache-read tokens, and any
other request bills its whole prompt as input, silently.

Endpoints (the ones anthropic 2.x calls): POST /v1/messages, POST /v1/messages/batches,
GET /v1/messages/batches/{id} and GET {results_url} (/v1/messages/batches/{id}/results, JSONL).
"""

from __future__ import annotations

import hashlib
import html
import itertools
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import orjson
import pytest

from distiller import prices

FAKE_CREATED_AT = "2026-11-01T12:00:00Z"
FAKE_EXPIRES_AT = "2026-11-02T12:00:00Z"
SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
RETRYABLE = {408, 409, 429}
_DROP = "x-fake-drop"  # internal: the handler breaks the body off half-way
Response = tuple[int, dict[str, str], bytes]  # status, headers, body

_ITEM = re.compile(r'<item id="([^"]*)" role="([^"]*)" ts="([^"]*)" cite="(yes|no)">\n(.*?)\n</item>', re.DOTALL)
_FIRST_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s|$)|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request as the fake saw it; header names are lowercase."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = 0.0  # time.monotonic() when it arrived
    in_flight: int = 0  # Messages calls being answered when it arrived, itself included


@dataclass(frozen=True, slots=True)
class SentItem:
    """One item of a request as the model sees it (unescaped)."""

    item_id: str
    role: str
    ts: str
    citable: bool
    text: str


def request_items(params: dict[str, Any]) -> list[SentItem]:
    return [SentItem(html.unescape(i), r, t, c == "yes", html.unescape(x)) for i, r, t, c, x in
            _ITEM.findall(_user_text(params))]


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted reply: a message (text, stop reason, usage overrides), an error (status and JSON body), or in a
    batch a bare result type such as "expired"."""

    status: int = 200
    text: str = ""
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    batch_result: str | None = None


def tokens(text: str) -> int:
    """A rough token count (4 characters a token), enough for plausible usage figures."""
    return max(1, len(text) // 4) if text else 0


def message_body(text: str, *, model: str = "claude-haiku-5-5", stop_reason: str = "end_turn",
                 input_tokens: int = 1200, cache_creation_input_tokens: int = 0, cache_read_input_tokens: int = 0,
                 output_tokens: int | None = None, message_id: str = "msg_fake") -> dict[str, Any]:
    """A Messages API reply whose only content block is `text` (no block at all when text is empty)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": tokens(text) if output_tokens is None else output_tokens,
            "cache_creation_input_tokens": cache_creation_input_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": cache_creation_input_tokens,
                               "ephemeral_1h_input_tokens": 0},
            "service_tier": "standard",
        },
    }


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_fake"}


def candidate(item_id: str, quote: str, statement: str | None = None, **fields: Any) -> dict[str, Any]:
    """A well-formed output candidate citing one item; override any field by keyword."""
    out = {
        "statement": statement or f"The user said: {quote}"[:200],
        "category": "fact",
        "subject": "user",
        "attribute": "said-" + hashlib.sha1(quote.encode()).hexdigest()[:8],
        "confidence": 0.8,
        "evidence_type": "explicit",
        "importance": 5,
        "decay_sensitivity": "medium",
        "valid_from": None,
        "evidence": [{"item_id": item_id, "quote": quote}],
    }
    out.update(fields)
    return out


def candidates_reply(candidates: list[dict[str, Any]], **usage: Any) -> Reply:
    return Reply(text=orjson.dumps({"candidates": candidates}).decode(), usage=usage)


def auto_candidates(user_text: str) -> list[dict[str, Any]]:
    """One candidate per citable item that has the word "I", quoting the item's first sentence."""
    out = []
    for item_id, _role, _ts, cite, text in _ITEM.findall(user_text):
        if cite == "yes" and re.search(r"\bI\b", text):
            sentence = _FIRST_SENTENCE.search(text)
            if sentence:
                out.append(candidate(html.unescape(item_id), sentence.group(0)))
    return out


class FakeServer:
    """What both fakes share: a threaded HTTP server on 127.0.0.1 at a free port whose every request the subclass's
    `handle(method, path, headers, body)` answers; a context manager. `URL_PATH` is what the SDK's base URL ends in."""

    URL_PATH = ""
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Response:
        raise NotImplementedError

    def _next_reply(self, items: list[SentItem]) -> Any:
        """The reply to a request with these items: the queue's first, else the responder's (a hostile model), else
        None (the default answer). Every item is recorded as seen, in order (a subclass keeps `_queue`, `_lock`,
        `seen_items` and `responder`)."""
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
            earlier = list(self.seen_items)
            self.seen_items.extend(items)
        if reply is None and self.responder is not None:
            reply = self.responder(items, earlier)
        return reply

    def start(self) -> Self:
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.hang_up()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the fake is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.URL_PATH}"


class FakeAnthropic(FakeServer):
    """The fake server; use as a context manager (`with FakeAnthropic() as fake:`) or via `fake_anthropic`."""

    def __init__(self, *, auto: bool = False, min_cacheable_tokens: int | None = None) -> None:
        self.auto = auto
        self.min_cacheable_tokens = min_cacheable_tokens  # None: each model's own, from the price table
        self.delay_seconds = 0.0  # before each POST /v1/messages reply: for client timeout tests
        self.drop_results = 0  # the next N batch-results downloads break off mid-body (a dropped connection)
        # The next batch creates answer (status, error type, whether the batch was created all the same) instead.
        self.create_failures: deque[tuple[int, str, bool]] = deque()
        # A hostile model: called with each Messages request's items (and every item sent before) when the queue
        # is empty; returns the reply to send, or None for the default.
        self.responder: Callable[[list[SentItem], list[SentItem]], Reply | None] | None = None
        self.seen_items: list[SentItem] = []
        self.requests: list[Recorded] = []
        self.in_flight = 0  # Messages calls being answered now
        self.most_in_flight = 0
        self._queue: deque[Reply] = deque()
        self._cached: set[str] = set()
        self._batches: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # scripting

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    def enqueue_json(self, obj: Any, **usage: Any) -> None:
        """A successful reply whose text is `obj` as JSON (e.g. {"candidates": [...]})."""
        self.enqueue_text(orjson.dumps(obj).decode(), **usage)

    def enqueue_candidates(self, candidates: list[dict[str, Any]], **usage: Any) -> None:
        self.enqueue_json({"candidates": candidates}, **usage)

    def enqueue_text(self, text: str, *, stop_reason: str = "end_turn", **usage: Any) -> None:
        """A reply with this exact text; usage keywords of `message_body` override the emulated figures."""
        self.enqueue(Reply(text=text, stop_reason=stop_reason, usage=usage))

    def enqueue_stop_reason(self, stop_reason: str, text: str = "", **usage: Any) -> None:
        """E.g. "refusal" (no content) or "max_tokens" with the truncated text."""
        self.enqueue_text(text, stop_reason=stop_reason, **usage)

    def enqueue_error(self, status: int, error_type: str, message: str = "scripted error",
                      headers: dict[str, str] | None = None) -> None:
        """An error reply; retryable ones carry `retry-after-ms: 1` so SDK retries are instant, unless `headers`
        name a retry-after of their own."""
        own = any(name.lower().startswith("retry-after") for name in headers or {})
        extra = {"retry-after-ms": "1"} if (status in RETRYABLE or status >= 500) and not own else {}
        self.enqueue(Reply(status, body=error_body(error_type, message), headers={**extra, **(headers or {})}))

    def enqueue_batch_result(self, result_type: str) -> None:
        """A batch entry that ends without a message: "expired" or "canceled"."""
        self.enqueue(Reply(batch_result=result_type))

    def end_batches(self) -> None:
        """Finish every batch in progress, answering its requests in order from the queue."""
        with self._lock:
            pending = [b for b in self._batches.values() if b["processing_status"] == "in_progress"]
        for batch in pending:
            self._end_batch(batch)

    def message_requests(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/messages requests, retries included."""
        return [r.body for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    # serving

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Response:
        body = orjson.loads(raw) if raw else None
        messages = (method, path.strip("/")) == ("POST", "v1/messages")
        with self._lock:
            self.in_flight += messages
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.requests.append(Recorded(method, path, headers, body, time.monotonic(), self.in_flight))
        try:
            return self._route(method, path, headers, body)
        finally:
            with self._lock:
                self.in_flight -= messages

    def _route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Response:
        if "authorization" not in headers and "x-api-key" not in headers:
            return _json(401, error_body("authentication_error", "missing credentials"))
        match method, path.strip("/").split("/"):
            case "POST", ["v1", "messages"]:
                return self._messages(body)
            case "POST", ["v1", "messages", "batches"]:
                return self._create_batch(body)
            case "GET", ["v1", "messages", "batches", batch_id]:
                return self._retrieve_batch(batch_id)
            case "GET", ["v1", "messages", "batches", batch_id, "results"]:
                return self._batch_results(batch_id)
        return _json(404, error_body("not_found_error", f"{method} {path} is not served by the fake"))

    def _messages(self, params: dict[str, Any]) -> Response:
        with self._lock:
            cached_on_arrival = frozenset(self._cached)  # an entry exists once a writer's reply has begun, not
        if self.delay_seconds:                        # while requests sent alongside it are still waiting
            time.sleep(self.delay_seconds)
        status, body, headers = self._reply_for(params, cached_on_arrival)
        return _json(status, body, headers)

    def _reply_for(self, params: dict[str, Any], cached: frozenset[str] | None = None
                   ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The next scripted reply (or the default) for one set of Messages params, as (status, body, headers)."""
        rejected = [name for name in SAMPLING_PARAMS if name in params]
        if rejected:
            return 400, error_body("invalid_request_error", f"{rejected[0]} is not supported by this model"), {}
        items = request_items(params)
        reply = self._next_reply(items)
        if reply is not None and reply.batch_result is not None:
            return 500, error_body("api_error", "a batch result was scripted, but this is a Messages call"), {}
        if reply is not None and reply.status != 200:
            return reply.status, reply.body or {}, reply.headers
        usage = self._usage(params, cached)
        if reply is None:
            found = auto_candidates(_user_text(params)) if self.auto else []
            text = orjson.dumps({"candidates": found}).decode()
            stop_reason = "end_turn"
        else:
            text, stop_reason = reply.text, reply.stop_reason
            usage.update(reply.usage)
        message_id = f"msg_fake_{next(self._ids):06d}"
        return 200, message_body(text, model=params.get("model", "?"), stop_reason=stop_reason,
                                 message_id=message_id, **usage), {}

    def _usage(self, params: dict[str, Any], cached: frozenset[str] | None = None) -> dict[str, int]:
        """Input tokens split as the API would: a cached prefix (system up to the last cache_control) or not.
        `cached` is the cache as the request found it on arrival (None: as it is now)."""
        system = params.get("system") or []
        blocks = [{"text": system}] if isinstance(system, str) else system
        cut = max((i + 1 for i, b in enumerate(blocks) if b.get("cache_control")), default=0)
        prefix = "".join(b.get("text", "") for b in blocks[:cut])
        rest = "".join(b.get("text", "") for b in blocks[cut:]) + _user_text(params)
        prefix_tokens = tokens(prefix + orjson.dumps(params.get("output_config")).decode()) if prefix else 0
        usage = {"input_tokens": tokens(rest), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        minimum = self.min_cacheable_tokens
        if minimum is None:
            minimum = prices.MIN_CACHEABLE_TOKENS.get(params.get("model"), prices.UNPUBLISHED_MIN_CACHEABLE_TOKENS)
        if prefix_tokens and prefix_tokens < minimum:
            usage["input_tokens"] += prefix_tokens
        elif prefix_tokens:
            key = hashlib.sha256(orjson.dumps([params.get("model"), prefix, params.get("output_config")])).hexdigest()
            with self._lock:
                hit = key in (self._cached if cached is None else cached)
                self._cached.add(key)
            usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = prefix_tokens
        return usage

    def _create_batch(self, body: dict[str, Any]) -> Response:
        requests = body.get("requests") or []
        with self._lock:
            failure = self.create_failures.popleft() if self.create_failures else None
        if failure is not None and not failure[2]:
            return _json(failure[0], error_body(failure[1], "scripted batch create failure"))
        with self._lock:
            batch_id = f"msgbatch_fake_{next(self._ids):06d}"
            batch = {
                "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                                   "expired": 0},
                "created_at": FAKE_CREATED_AT, "expires_at": FAKE_EXPIRES_AT, "ended_at": None,
                "cancel_initiated_at": None, "archived_at": None, "results_url": None,
                "_requests": requests, "_results": None,
            }
            self._batches[batch_id] = batch
            public = _public(batch)
        if self.auto:
            self._end_batch(batch)
        if failure is not None:
            return _json(failure[0], error_body(failure[1], "scripted batch create failure after creating it"))
        return _json(200, public)

    def _end_batch(self, batch: dict[str, Any]) -> None:
        results, counts = [], {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for request in batch["_requests"]:
            with self._lock:
                scripted = self._queue[0] if self._queue and self._queue[0].batch_result else None
                if scripted:
                    self._queue.popleft()
            if scripted:
                result: dict[str, Any] = {"type": scripted.batch_result}
            else:
                status, body, _headers = self._reply_for(request["params"])
                result = ({"type": "succeeded", "message": body} if status == 200
                          else {"type": "errored", "error": body})
            counts[result["type"]] += 1
            results.append({"custom_id": request["custom_id"], "result": result})
        results.reverse()  # the API promises no order: callers must match on custom_id
        with self._lock:
            batch.update(processing_status="ended", ended_at=FAKE_CREATED_AT, request_counts=counts,
                         results_url=f"{self.base_url}/v1/messages/batches/{batch['id']}/results", _results=results)

    def _retrieve_batch(self, batch_id: str) -> Response:
        with self._lock:
            batch = self._batches.get(batch_id)
            public = _public(batch) if batch else None
        if public is None:
            return _json(404, error_body("not_found_error", f"no batch {batch_id}"))
        return _json(200, public)

    def _batch_results(self, batch_id: str) -> Response:
        with self._lock:
            batch = self._batches.get(batch_id)
            results = batch["_results"] if batch else None
        if results is None:
            return _json(404, error_body("not_found_error", f"no results for batch {batch_id}"))
        data = b"".join((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n" for line in results)
        with self._lock:
            drop = self.drop_results > 0
            self.drop_results -= drop
        return 200, {"content-type": "application/binary", **({_DROP: "1"} if drop else {})}, data


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _user_text(params: dict[str, Any]) -> str:
    """All text of the request's messages (content as a string or as text blocks)."""
    parts = []
    for message in params.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(block.get("text", "") for block in content or [] if isinstance(block, dict))
    return "\n".join(parts)


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return status, {"content-type": "application/json", **(headers or {})}, orjson.dumps(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_requests: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self.open_requests.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self.open_requests.discard(request)
        super().shutdown_request(request)

    def hang_up(self) -> None:
        """End the connections a client keeps alive: their handler threads would otherwise outlive the server
        (and a test that forks only from a process without other threads would find them)."""
        with self._open_lock:
            requests = list(self.open_requests)
        for request in requests:
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + 2.0  # a handler held up on purpose (a test's slow reply) is left to finish
        while self.open_requests and time.monotonic() < deadline:
            time.sleep(0.005)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test, a killed benchmark) is not worth a traceback; a bug is."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler_for(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes; Nagle would add ~40 ms

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if len(raw) < length:  # the client went away mid-body (a killed run): no request reached the API
                self.close_connection = True
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, reply_headers, data = fake.handle(self.command, self.path.split("?")[0], headers, raw)
            drop = reply_headers.pop(_DROP, None)
            self.send_response(status)
            for name, value in {"request-id": "req_fake", **reply_headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if drop:  # half the promised body, then the connection closes
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake_anthropic():
    """A running FakeAnthropic; point the SDK at `fake_anthropic.base_url`."""
    with FakeAnthropic() as fake:
        yield fake
