"""How often verification rejects honest candidates, and how often the injection check catches plain messages.

    PYTHONPATH=. python tests/bench/verify_report.py [--data ../shared/data/synthetic-persona-chat/valid.csv]

Honest candidates come from two places, on the dev set (each conversation read twice, once with each speaker as
the user and the other as the assistant) and on the user turns of tests/fixtures/labelled.jsonl:
- the offline rules extractor: verbatim first-person sentences rewritten in the third person;
- persona pairs (dev set only): each persona sentence of the speaker, in the third person, as the statement, with
  the speaker's sentence that shares at least half of its content words as the quote. The pairing is by plain
  lowercase words, so it says little about the content-word rule and much about the number and name rules.
The persona pairing is loose, so most of its rejections are true ones (the persona says "three dogs", the sentence
"my dogs"): read its figure as an upper bound. The injection figure is the share of all turns of the dev set (and of
the fixture's user turns, cleaned first as screening does) that the check would demote to context, with the
"remember …" turns counted apart, and of every persona sentence wrapped in the user's own ways of asking to be
remembered ("Remember that …", "From now on, remember …"). Nothing here is tuned to: it is a report.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections import Counter
from pathlib import Path

from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest, Item
from distiller.extract.rules import RulesExtractor
from distiller.records import EvidenceItem
from distiller.screen.clean import clean as clean_as
from distiller.screen.injection import suspect_injection
from distiller.sources.openclaw.envelopes import CLEANING
from distiller.support import content_stems
from distiller.verify import Source, verify


def clean(text, role, extra_blocks=()):
    return clean_as(text, role, extra_blocks, CLEANING)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "synthetic-persona-chat" / "valid.csv"
FIXTURE = ROOT / "tests" / "fixtures" / "labelled.jsonl"
TS = "2026-03-01T10:00:00Z"
_TURN = re.compile(r"^User ([12]):\s*(.*)$")
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORD = re.compile(r"[a-z0-9']+")
_PAIRING_STOPWORDS = frozenset("""i a an the to of and my me am is are was in on at for it i'm i've have has with
like likes love loves enjoy enjoys really very do not be can so lot that this""".split())
# The user's own requests to remember, wrapped around each persona sentence of the dev set.
_REMEMBER = ("Remember that {}", "Please remember: {}", "Don't forget that {}", "Note for later: {}",
             "For the record, {}", "Save this to memory: {}", "From now on, remember {}", "Keep in mind that {}")
_THIRD_PERSON = [(re.compile(p, re.IGNORECASE), r) for p, r in [
    (r"\bI'm\b", "the user is"), (r"\bI am\b", "the user is"), (r"\bI've\b", "the user has"),
    (r"\bI have\b", "the user has"), (r"\bI was\b", "the user was"), (r"\bI\b", "the user"), (r"\bmy\b", "the user's"),
    (r"\bme\b", "the user"), (r"\bmyself\b", "themselves"),
]]


def third_person(sentence: str) -> str:
    for pattern, replacement in _THIRD_PERSON:
        sentence = pattern.sub(replacement, sentence)
    sentence = sentence.strip()
    return sentence[0].upper() + sentence[1:] if sentence else sentence


def conversations(path: Path) -> list[tuple[dict[str, list[str]], list[tuple[str, str]]]]:
    """(personas by speaker, turns as (speaker, text)) of every row."""
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            personas = {"1": row["user 1 personas"].splitlines(), "2": row["user 2 personas"].splitlines()}
            turns = [(m.group(1), m.group(2)) for line in row["Best Generated Conversation"].splitlines()
                     if (m := _TURN.match(line.strip()))]
            out.append((personas, turns))
    return out


def request_of(turns: list[tuple[str, str]], user: str, name: str) -> tuple[ExtractRequest, dict[str, Source]]:
    items, sources = [], {}
    for number, (speaker, text) in enumerate(turns, start=1):
        item_id = f"m{number}"
        citable = speaker == user
        items.append(Item(item_id, "user" if citable else "assistant", TS, text, citable))
        sources[item_id] = Source(text, citable, EvidenceItem(item_id, name, "main", "/f", 0, 1, TS, ""))
    return ExtractRequest(name, "main", tuple(items)), sources


def _content(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _PAIRING_STOPWORDS


def persona_candidates(personas: list[str], request: ExtractRequest) -> list[Candidate]:
    out = []
    for persona in personas:
        wanted = _content(persona)
        if not wanted:
            continue
        best, best_score = None, 0.0
        for item in request.items:
            if not item.evidence:
                continue
            for sentence in _SENTENCE.findall(item.text):
                score = len(wanted & _content(sentence)) / len(wanted)
                if score > best_score and len(sentence.split()) >= 3:
                    best, best_score = (item.item_id, sentence.strip()), score
        if best is not None and best_score >= 0.5:
            out.append(Candidate(third_person(persona), "fact", "user", "persona", 0.9, "explicit", 5, "medium",
                                 None, (EvidenceRef(*best),)))
    return out


def tally(label: str, candidates: int, rejected: Counter[str]) -> None:
    bad = sum(rejected.values())
    share = bad / candidates if candidates else 0.0
    reasons = ", ".join(f"{k} {v}" for k, v in rejected.most_common()) or "none"
    print(f"{label:<44} {candidates:>7} candidates, {bad:>5} rejected ({share:6.2%}): {reasons}")


def vacuous(candidate: Candidate) -> bool:
    """A statement without a single content word ("The user likes it."): nothing it could share with a quote."""
    return not content_stems(candidate.statement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rules = RulesExtractor()
    by_source: dict[str, tuple[int, Counter[str]]] = {}

    def check(label: str, extraction: Extraction, sources: dict[str, Source]) -> None:
        for name, candidates in ((label, extraction.candidates),
                                 ("  of which with a content word", [c for c in extraction.candidates
                                                                      if not vacuous(c)])):
            result = verify(Extraction(extraction.request_id, tuple(candidates), ()), sources, extractor="bench",
                            model=None, prompt_version="bench")
            key = f"{label} / {name}" if name != label else label
            count, rejected = by_source.get(key, (0, Counter()))
            rejected.update(dict(result.rejected))
            by_source[key] = (count + len(candidates), rejected)

    turns_seen = flagged = remember = remember_flagged = asked = asked_flagged = 0
    examples: list[str] = []
    for index, (personas, turns) in enumerate(conversations(args.data)):
        for user in ("1", "2"):
            request, sources = request_of(turns, user, f"c{index}u{user}")
            check("dev set, rules extractor", rules.extract(request), sources)
            check("dev set, persona pairs", Extraction(request.request_id,
                                                       tuple(persona_candidates(personas[user], request)), ()),
                  sources)
        for persona in personas["1"] + personas["2"]:
            for template in _REMEMBER:
                asked += 1
                asked_flagged += suspect_injection(template.format(persona[:1].lower() + persona[1:]))
        for _, text in turns:
            turns_seen += 1
            hit = suspect_injection(text)
            flagged += hit
            if hit and len(examples) < 5:
                examples.append(text)
            if re.search(r"\bremember\b", text, re.IGNORECASE):
                remember += 1
                remember_flagged += hit

    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    fixture_turns = fixture_flagged = 0
    for number, row in enumerate(rows):
        message = row["line"]["message"]
        text = "\n".join(b["text"] for b in message["content"] if b.get("type") == "text")
        if message["role"] != "user":
            continue
        fixture_turns += 1
        fixture_flagged += any(suspect_injection(part) for part in clean(text, "user").parts)
        request, sources = request_of([("u", text)], "u", f"f{number}")
        check("fixture user turns, rules extractor", rules.extract(request), sources)

    print("False rejections of honest candidates")
    total, everything = 0, Counter()
    for label, (count, rejected) in by_source.items():
        tally(label.split(" / ")[-1], count, rejected)
        if " / " not in label:
            total += count
            everything.update(rejected)
    tally("all", total, everything)
    print("\nInjection check on plain messages")
    print(f"dev set: {flagged} of {turns_seen} turns flagged ({flagged / turns_seen:.3%}); "
          f"turns saying 'remember': {remember_flagged} of {remember} flagged")
    print(f"persona sentences asked to be remembered ({len(_REMEMBER)} phrasings each): {asked_flagged} of {asked} "
          f"flagged ({asked_flagged / asked:.3%})")
    print(f"fixture user turns, cleaned as screening does: {fixture_flagged} of {fixture_turns} flagged")
    for example in examples:
        print(f"  flagged: {example[:120]!r}")


if __name__ == "__main__":
    main()
