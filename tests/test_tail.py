"""The line reader against a naive model, at every chunk size and line cap."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from distiller.tail import complete_lines_end, read_head, read_lines, tail_digest

BOM = b"\xef\xbb\xbf"
# Lines of any bytes, some of them runs of NULs (a crashed writer's), some with a NUL run inside.
_piece = st.one_of(st.binary(max_size=40), st.integers(1, 60).map(lambda n: b"\x00" * n),
                   st.tuples(st.binary(max_size=10), st.integers(1, 60)).map(lambda t: t[0] + b"\x00" * t[1] + t[0]))
lines_strategy = st.lists(_piece.map(lambda b: b.replace(b"\n", b"")), max_size=30)


def naive(data: bytes, start: int, cap: int):
    """Split on newlines; each line without its NULs, judged against the cap so, and without a BOM at offset 0;
    a last piece of nothing but NULs is a line too."""
    out, offset = [], start
    pieces = data[start:].split(b"\n")
    for piece in pieces[:-1]:
        end = offset + len(piece) + 1
        bare = piece.replace(b"\x00", b"")
        fits = len(bare) <= cap
        if offset == 0 and bare.startswith(BOM):
            bare = bare[len(BOM):]
        out.append((offset, end, bare if fits else None, b"\x00" in piece and fits))
        offset = end
    if pieces[-1] and not pieces[-1].strip(b"\x00"):
        out.append((offset, offset + len(pieces[-1]), b"", True))
    return out


@given(lines=lines_strategy, tail=_piece.map(lambda b: b.replace(b"\n", b"")), bom=st.booleans(),
       chunk=st.integers(1, 64), cap=st.integers(0, 50), skip=st.integers(0, 5))
def test_read_lines_matches_a_naive_split(lines, tail, bom, chunk, cap, skip):
    data = (BOM if bom else b"") + b"".join(line + b"\n" for line in lines) + tail
    start = (3 if bom and skip else 0) + sum(len(line) + 1 for line in lines[:skip])
    got = [(x.start, x.end, x.data, x.nul and x.data is not None)
           for x in read_lines(io.BytesIO(data), start, len(data), max_line_bytes=cap, chunk_bytes=chunk)]
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


def test_a_nul_tail_is_complete_and_wide_encodings_are_named():
    from distiller.tail import wide_encoding

    assert complete_lines_end(io.BytesIO(b"one\n" + b"\x00" * 5000), 5004) == 5004
    assert complete_lines_end(io.BytesIO(b"one\n" + b"\x00" * 50 + b"{"), 55) == 4
    assert complete_lines_end(io.BytesIO(b"\x00" * 5000), 5000) == 5000
    line = '{"type":"session"}\n'
    assert [wide_encoding(line.encode(e)) for e in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be")] \
        == ["utf16", "utf16", "utf16", "utf32", "utf32"]
    assert [wide_encoding(b) for b in (line.encode(), b"\xef\xbb\xbf" + line.encode(), b"\x00" * 9 + line.encode(),
                                       b"\x00" * 9)] == [None] * 4
    head = read_head(io.BytesIO(b"\xef\xbb\xbf" + line.encode()))
    assert head.line == b'{"type":"session"}' and head.encoding is None
    assert read_head(io.BytesIO(b"\x00" * 100)).line is None  # read, so its NULs are consumed
