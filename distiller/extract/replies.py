"""What a provider's reply is worth, whichever provider: the wait a push-back asks for, a token count as far as it
can be believed, and the JSON object inside a model's text (prose, a code fence or a <think> block around it).
Shared by every model extractor and the profile, so each reads them the same way."""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

# More tokens than any model's context window and reply together: a usage count above it is not believed.
MAX_REPORTED_TOKENS = 100_000_000


def count(value: object) -> int | None:
    """A token count as the API should report it, or None: only a non-negative int (not a bool) within reason."""
    if type(value) is int and 0 <= value <= MAX_REPORTED_TOKENS:
        return value
    return None


def retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """The wait a response asks for, in seconds: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date
    (a date already past is no wait); None when it names none or only unreadable ones (negative, NaN, infinite,
    garbage). How long a wait is honoured is the pace's business (pipeline/pace.py clamps it)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        seconds: float | None
        try:
            seconds = float(value) / scale
        except (ValueError, OverflowError):
            seconds = _seconds_until(value, now) if scale == 1.0 else None
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _seconds_until(http_date: str, now: Callable[[], float]) -> float | None:
    """Seconds from now until an HTTP date (0 once it is past); None when it is not one."""
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are in GMT; one without a zone is read as UTC
        when = when.replace(tzinfo=UTC)
    try:
        return max(0.0, when.timestamp() - now())
    except (OverflowError, ValueError, OSError):
        return None


def without_thinking(text: str) -> str:
    """The reply with a reasoning model's <think> blocks taken out, stripped."""
    return _THINK.sub("", text).strip()


def embedded_object(text: str, key: str) -> str | None:
    """The first JSON object in `text` (inside a code fence or among prose, <think> blocks skipped) that has a
    list under `key`, as JSON text; None when there is none. Only finding: what it holds is the caller's to check."""
    stripped = without_thinking(text)
    chunks: list[str] = [*_FENCE.findall(stripped), stripped]
    for chunk in chunks:
        decoder = json.JSONDecoder()
        start = chunk.find("{")
        while start != -1:
            try:
                value, end = decoder.raw_decode(chunk, start)
            except ValueError:
                value, end = None, start + 1
            if isinstance(value, dict) and isinstance(value.get(key), list):
                return chunk[start:end]
            start = chunk.find("{", start + 1)
    return None
