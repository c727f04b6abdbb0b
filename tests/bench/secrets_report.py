"""Recall and precision of secret redaction on generated secrets by class, beside the PyPI detectors (not a test).

    python tests/bench/secrets_report.py [--seeds 20] [--detectors ours,detect-secrets,credsweeper] [--persona]
                                         [--show-misses N] [--forms SPLIT]

Secrets come from tests/secretclasses.py: every class of issue 22's section 3, each in several forms marked train
(looked at while writing the rules) or held-out (never looked at: their figures say how the rules generalise),
fresh values per seed. A case is caught when none of its secrets survives whole in the redacted text (a short
secret, such as a CVV, counts only as a whole token; a long one also counts when wrapped over lines). The texts
are first put in canonical form as screening does (Unicode format characters removed, NFKC); `ours, raw` also
plants a zero-width character inside each key and skips that step, to show what canonical text buys. A look-alike is a false positive when the detector changes
anything in it. Speed is µs per message over the cases and look-alikes.

detect-secrets and credsweeper are not dependencies: install them beside the project (`pip install
detect-secrets credsweeper`) to compare; a detector that cannot be imported is skipped. For them a text is
"redacted" by replacing every value they report.

A detector that takes longer than `--time-limit` seconds (default 2; a message takes microseconds) on one text is
stopped there: the text counts as left unredacted, and the report lists the forms that ran out of time (a
redaction that backtracks for minutes would stall a run as surely as a leak spoils it).

`--forms SPLIT` lists, per detector, that split's forms with a secret left whole (caught/planted) and its look-alike
forms changed (changed/shown).

`--persona` also counts the lines of the labelled persona data (/work/shared/data/synthetic-persona-chat: persona
sentences and conversation turns) on which any redaction rule fires.
"""

from __future__ import annotations

import argparse
import csv
import re
import signal
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from secretclasses import SPLITS, cases, lookalikes, split_across_messages

from distiller.redact import redact, split_secret

PERSONA = Path("/work/shared/data/synthetic-persona-chat/valid.csv")


def canonical(text: str) -> str:
    """The stand-in for screening's canonical text: format characters (Cf) removed, then NFKC."""
    return unicodedata.normalize("NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf"))


def ours(text: str) -> str:
    return redact(text).text


def detect_secrets_redactor() -> Callable[[str], str]:
    """detect-secrets as its CLI scans a file (its filters and entropy limits apply; `scan_line` alone reports
    every fragment of every plugin), one message per temporary file."""
    import os
    import tempfile

    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    folder = tempfile.mkdtemp(prefix="secrets-report-")

    def run(text: str) -> str:
        path = os.path.join(folder, "message.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        collection = SecretsCollection()
        with default_settings():
            collection.scan_file(path)
        return _replace(text, [s.secret_value for _, s in collection if s.secret_value])

    return run


def credsweeper_redactor() -> Callable[[str], str]:
    import logging

    from credsweeper.app import CredSweeper
    from credsweeper.file_handler.string_content_provider import StringContentProvider

    logging.disable(logging.WARNING)
    sweeper = CredSweeper()

    def run(text: str) -> str:
        sweeper.credential_manager.set_credentials([])
        provider = StringContentProvider(text.splitlines(), file_path="message.txt")
        sweeper.credential_manager.extend_credentials(sweeper.file_scan(provider))
        sweeper.post_processing(None)
        values = [ld.value for c in sweeper.credential_manager.get_credentials() for ld in c.line_data_list
                  if ld.value]
        return _replace(text, values)

    return run


def _replace(text: str, values: list[str]) -> str:
    for value in sorted(set(values), key=len, reverse=True):
        text = text.replace(value, "[REDACTED]")
    return text


def survives(secret: str, text: str) -> bool:
    """Whether secret is whole in text; a long one also when it is wrapped over lines or blanks (a key wrapped in a
    fence, seed words on several lines are still whole to a reader)."""
    if len(secret) >= 8:
        return secret in text or "".join(secret.split()) in "".join(text.split())
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(secret) + r"(?![A-Za-z0-9])", text) is not None


class _OutOfTime(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _OutOfTime


def bounded(run: Callable[[str], str], limit: float, slow: list[str]) -> Callable[[str], str]:
    """run, stopped after limit seconds (POSIX interval timer): the text comes back unredacted and its first 80
    characters are added to slow."""
    def call(text: str) -> str:
        previous = signal.signal(signal.SIGALRM, _stop)
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return run(text)
        except _OutOfTime:
            slow.append(text[:80])
            return text
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return call


def evaluate(name: str, unbounded: Callable[[str], str], seeds: int, raw: bool, show_misses: int,
             time_limit: float) -> dict:
    slow: list[str] = []
    out_of_time: dict[str, int] = defaultdict(int)  # "form (split)" -> texts stopped at the time limit
    run = bounded(unbounded, time_limit, slow)
    caught: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_form: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (split, form) -> caught, planted
    looks_by_form: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (split, form) -> changed, shown
    misses: dict[str, str] = {}
    fp_forms: dict[str, int] = defaultdict(int)
    fp_total = looks = 0
    texts = 0
    started = time.perf_counter()
    for seed in range(seeds):
        for case in cases(seed, invisible=raw):
            text = case.text if raw else canonical(case.text)
            stopped = len(slow)
            out = run(text)
            if len(slow) > stopped:
                out_of_time[f"{case.form} ({case.split})"] += 1
            texts += 1
            seen = canonical(out)  # a secret with a zero-width character inside is still whole to a reader
            ok = not any(survives(canonical(s), seen) for s in case.secrets)
            tally = caught[(case.cls, case.split)]
            tally[0] += ok
            tally[1] += 1
            by_form[(case.split, case.form)][0] += ok
            by_form[(case.split, case.form)][1] += 1
            if not ok and case.form not in misses:
                misses[case.form] = f"{case.split}: {text!r} -> {out!r}"
        for look in lookalikes(seed):
            text = canonical(look.text)
            stopped = len(slow)
            out = run(text)
            if len(slow) > stopped:
                out_of_time[f"{look.form} (look-alike, {look.split})"] += 1
            texts += 1
            looks += 1
            looks_by_form[(look.split, look.form)][0] += out != text
            looks_by_form[(look.split, look.form)][1] += 1
            if out != text:
                fp_total += 1
                fp_forms[f"{look.form} ({look.split})"] += 1
                misses.setdefault("FP " + look.form, f"{text!r} -> {out!r}")
    elapsed = time.perf_counter() - started
    split = {name: [0, 0] for name in SPLITS}
    for (_, s), (a, b) in caught.items():
        split[s][0] += a
        split[s][1] += b
    pairs = [pair for seed in range(seeds) for pair in split_across_messages(seed)]
    # as the pipeline screens them: each message redacted, then the pair's split-key join; caught when neither
    # piece survives (each message is read alone, so a piece left whole is a leak)
    pair_tally = {name: [0, 0] for name in SPLITS}
    for pair in pairs:
        first, second = run(pair.first), run(pair.second)
        if name.startswith("ours"):
            joined = split_secret(first, second)
            if joined is not None:
                first, second = joined.before, joined.after
        pair_tally[pair.split][0] += not (survives(pair.pieces[0], first) or survives(pair.pieces[1], second))
        pair_tally[pair.split][1] += 1
    return {"name": name, "caught": dict(caught), "split": split, "fp_forms": dict(fp_forms), "fp_total": fp_total,
            "looks": looks, "us": elapsed / texts * 1e6, "misses": list(misses.items())[:show_misses],
            "pairs": pair_tally, "by_form": dict(by_form), "looks_by_form": dict(looks_by_form),
            "out_of_time": dict(out_of_time), "slow": slow}


def persona_lines() -> list[str]:
    lines = []
    with PERSONA.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            for column in ("user 1 personas", "user 2 personas", "Best Generated Conversation"):
                lines.extend(line.split(": ", 1)[-1] for line in row[column].splitlines() if line.strip())
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--detectors", default="ours,detect-secrets,credsweeper")
    parser.add_argument("--persona", action="store_true")
    parser.add_argument("--show-misses", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=2.0, help="seconds a detector may take on one text")
    parser.add_argument("--forms", choices=SPLITS, default=None, help="list this split's slipped forms and changed "
                        "look-alikes")
    args = parser.parse_args()
    makers = {"ours": lambda: ours, "detect-secrets": detect_secrets_redactor, "credsweeper": credsweeper_redactor}
    results = []
    for name in args.detectors.split(","):
        try:
            run = makers[name]()
        except ImportError as error:
            print(f"{name}: skipped ({error})", file=sys.stderr)
            continue
        results.append(evaluate(name, run, args.seeds, raw=False, show_misses=args.show_misses,
                                time_limit=args.time_limit))
        if name == "ours":
            results.append(evaluate("ours, raw", run, args.seeds, raw=True, show_misses=args.show_misses,
                                    time_limit=args.time_limit))
    classes = sorted({cls for r in results for cls, _ in r["caught"]})
    width = max(map(len, classes)) + 2
    column = 2 + max(30, *(len(" | ".join("{}/{}".format(*r["split"][s]) for s in SPLITS)) for r in results))
    print(f"{args.seeds} seeds; recall = cases with no secret left whole, " + " | ".join(SPLITS))
    print(f"{'class':<{width}}" + "".join(f"{r['name']:>{column}}" for r in results))

    def cell(r: dict, cls: str, split: str) -> str:
        a, b = r["caught"].get((cls, split), (0, 0))
        return f"{a}/{b}" if b else "-"

    for cls in classes:
        print(f"{cls:<{width}}" + "".join(f"{' | '.join(cell(r, cls, s) for s in SPLITS):>{column}}" for r in results))
    print(f"{'ALL':<{width}}" + "".join(
        " | ".join("{}/{}".format(*r["split"][s]) for s in SPLITS).rjust(column) for r in results))

    def looks_in(r: dict, split: str) -> list[int]:
        counts = [n for (s, _), n in r["looks_by_form"].items() if s == split]
        return [sum(c for c, _ in counts), sum(t for _, t in counts)]

    print(f"{'look-alikes changed':<{width}}" + "".join(
        f"{r['fp_total']}/{r['looks']} ({len(r['fp_forms'])} forms)".rjust(column) for r in results))
    print(f"{'  by split':<{width}}" + "".join(
        " | ".join("{}/{}".format(*looks_in(r, s)) if looks_in(r, s)[1] else "-" for s in SPLITS).rjust(column)
        for r in results))
    print(f"{'key split, no piece left':<{width}}" + "".join(
        " | ".join("{}/{}".format(*r["pairs"][s]) if r["pairs"][s][1] else "-" for s in SPLITS).rjust(column)
        for r in results))
    print(f"{'µs per message':<{width}}" + "".join(f"{r['us']:>{column}.1f}" for r in results))
    print(f"{'texts stopped at the time limit':<{width}}" + "".join(f"{len(r['slow']):>{column}}" for r in results))
    for r in results:
        if r["out_of_time"]:
            print(f"{r['name']} stopped after {args.time_limit:g} s by form: {r['out_of_time']}")
        if r["fp_forms"]:
            print(f"{r['name']} false positives by form: {r['fp_forms']}")
        for form, example in r["misses"]:
            print(f"  {r['name']} miss [{form}] {example[:300]}")
    if args.forms:
        for r in results:
            slipped = [(form, a, b) for (s, form), (a, b) in r["by_form"].items() if s == args.forms and a < b]
            changed = [(form, a, b) for (s, form), (a, b) in r["looks_by_form"].items() if s == args.forms and a]
            print(f"{r['name']}: {args.forms} forms with a secret left whole: {len(slipped)} of "
                  f"{sum(s == args.forms for s, _ in r['by_form'])}")
            for form, a, b in slipped:
                print(f"  {form}: caught {a}/{b}")
            print(f"{r['name']}: {args.forms} look-alike forms changed: {len(changed)} of "
                  f"{sum(s == args.forms for s, _ in r['looks_by_form'])}")
            for form, a, b in changed:
                print(f"  {form}: changed {a}/{b}")
    if args.persona and PERSONA.exists():
        lines = persona_lines()
        fired = [line for line in lines if redact(line).counts]
        print(f"persona data: {len(fired)} of {len(lines)} lines redacted")
        for line in fired[:10]:
            print("  ", line[:160], "->", redact(line).text[:160])


if __name__ == "__main__":
    main()
