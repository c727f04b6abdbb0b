"""The line reader against a naive model, at every chunk size and line cap."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from distiller.tail import complete_lines_end, read_head, read_lines, tail_digest

lines_strategy = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30)


def naive(data: bytes, start: int, cap: int):
    out, offset = [], start
    for piece in data[start:].split(b"\n")[:-1]:
        end = offset + len(piece) + 1
        out.append((offset, end, piece if len(piece) <= cap else None))
        offset = end
    return out


@given(lines=lines_strategy, tail=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
       chunk=st.integers(1, 64), cap=st.integers(0, 50), skip=st.integers(0, 5))
def test_read_lines_matches_a_naive_split(lines, tail, chunk, cap, skip):
    data = b"".join(line + b"\n" for line in lines) + tail
    start = sum(len(line) + 1 for line in lines[:skip])
    got = [(x.start, x.end, x.data) for x in read_lines(io.BytesIO(data), start, len(data), max_line_bytes=cap,
                                                          chunk_bytes=chunk)]
    assert got == naive(data, start, cap)


def test_stop_bounds_the_read_even_if_the_file_is_longer():
    data = b"a\nbb\nccc\n"
    got = [x.data for x in read_lines(io.BytesIO(data), 0, 5, max_line_bytes=10)]
    assert got == [b"a", b"bb"]


def test_oversized_line_is_never_held_whole():
    class Recorder(io.BytesIO):
        biggest = 0

        def read(self, n=-1):
            chunk = super().read(n)
            Recorder.biggest = max(Recorder.biggest, len(chunk))
            return chunk

    data = b"x" * 5_000_000 + b"\nok\n"
    got = [(x.data, x.end) for x in read_lines(Recorder(data), 0, len(data), max_line_bytes=1000, chunk_bytes=4096)]
    assert got == [(None, 5_000_001), (b"ok", 5_000_004)]
    assert Recorder.biggest <= 4096


def test_head_needs_a_complete_first_line():
    assert read_head(io.BytesIO(b'{"type":"session"')) is None
    head = read_head(io.BytesIO(b'{"type":"session"}\nrest'))
    assert head.line == b'{"type":"session"}'
    assert head.fingerprint != read_head(io.BytesIO(b'{"type":"session","id":1}\n')).fingerprint


def test_complete_lines_end_and_tail_digest():
    f = io.BytesIO(b"one\ntwo\nthr")
    assert complete_lines_end(f, 11) == 8
    assert complete_lines_end(io.BytesIO(b"no newline"), 10) == 0
    f.seek(3)
    digest = tail_digest(f, 8)
    assert f.tell() == 3
    assert digest != tail_digest(io.BytesIO(b"one\ntwO\nthr"), 8)
