"""Human output never carries control characters from transcripts, dir names or model answers to the terminal."""

from __future__ import annotations

from conftest import append, distill, message_line, new_session

from distiller.terminal import printable

RAW = ("\x1b", "\x07", "\x00", "\u202e", "\r")


def test_printable_escapes_controls_and_bidi_overrides():
    assert printable("a\x1b[31mb\x07c\x00d\u202ee\r\nf\tg") == "a\\x1b[31mb\\x07c\\x00d\\u202ee\\r\\nf\\tg"
    assert printable("two\nlines\x9b", newlines=True) == "two\nlines\\x9b"
    assert printable("plain, ünïcode, 我") == "plain, ünïcode, 我"


def test_invisible_characters_are_shown_as_escapes():
    assert printable("ag\u200bent\u2060 \U000e0041x") == "ag\\u200bent\\u2060 \\U000e0041x"


def test_run_verbose_show_and_beliefs_list_escape_what_came_from_transcripts(agents):
    path = new_session(agents, agent="evil\x1b]0;pwned\x07dir")
    append(path, message_line("I prefer green tea \x1b[2J\x07 over\u202e coffee \x00 every\rmorning"))
    outputs = []
    for args in (["-v", "run", "--show-beliefs", "--show", "all", "--source", str(agents)],
                 ["beliefs", "list"], ["status"], ["runs"]):
        result = distill(*args, check=True)
        outputs.append(result.stdout + result.stderr)
    text = "".join(outputs)
    assert "evil\\x1b]0;pwned\\x07dir" in text  # the agent dir named in -v diagnostics
    assert "green tea" in text
    assert not [c for c in RAW if c in text], [c for c in RAW if c in text]
