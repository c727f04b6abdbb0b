"""Offline quality on Synthetic-Persona-Chat: what the prefilter keeps, and what the rules extractor learns.

    python tests/bench/quality.py [--split held-out|tune|all] [--transcripts DIR] [--limit N] [--show N] [--top N]
                                  [--request-tokens N]

The conversations are converted into OpenClaw transcripts (tests/bench/personachat.py; into a temp dir unless
--transcripts names a converted one), read back through the OpenClaw reader and screened as the scan screens them
(`screen`: clean, prefilter, redact). Every user turn that the prefilter keeps is an evidence item; the items are
packed into requests as the pipeline packs them (its request budget, `--request-tokens`; 0: one request per
session), given to the rules extractor through the pipeline's splitting, and verified as the pipeline verifies
them; the beliefs that pass are what is measured. Conversations are split in two halves by a hash of their number:
rules are tuned on `tune` and the figures quoted are those of `held-out`.

Definitions, operational and deliberately simple (read the figures with them in mind):

- Content stems: the words of a text, lower-cased, minus stop words (pronouns, auxiliaries, function words and
  generic verbs of liking, having and doing), cut to a crude stem ("baking", "bakes" and "bake" are one stem).
- A persona sentence is *stated* by a sentence of a turn when that sentence is not a question and shares at least
  half of the persona sentence's content stems (and at least one). A **fact-carrying turn** is a user turn with a
  sentence that states one of the user's own persona sentences. Every other user turn is "other". The labels are
  word overlap, not annotation: a turn that says a true fact which is not in the persona counts as "other" (so the
  drop rate of other turns is understated), and one that merely echoes persona words can count as fact-carrying.
- A belief **recalls** a persona sentence when it shares at least half of that sentence's content stems.
  Precision is the share of beliefs that recall one of the user's persona sentences (a true fact outside the
  persona counts against it); recall is the share of persona sentences that some belief recalls.
- A belief is **not self-contained** when, a month later and without the conversation, it cannot be read as a
  fact: it holds a pronoun or deictic word whose referent is not the user (it, this, that, these, those, them,
  they, there, here, one, you, your, he, she, his, her, we, our …), names its object only as "the <aspect>" ("The
  user likes the food."), holds a relative time (today, yesterday, tomorrow, tonight, last/next/this week …), ends
  on a word that needs a continuation ("to", "the", "and" …), or has no content stem beyond its verb ("The user
  likes to.").
- A fact-carrying turn **yields a belief** when the extractor returns a belief that cites it.
- `--top N` also runs the real pipeline (`distill run`, rules extractor) over the split's transcripts into a
  temporary store and measures the first N beliefs of `distill beliefs list` (strongest first): what a person
  reads first, where statements repeated across many sessions, vague ones included, rise to the top.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from distiller.batches.model import ITEM_OVERHEAD_TOKENS, estimate_tokens
from distiller.config import Settings
from distiller.extract.base import ExtractRequest, Item
from distiller.extract.rules import PROMPT_VERSION, RulesExtractor
from distiller.pipeline.distill import extract_splitting
from distiller.records import EvidenceItem, Message
from distiller.screen import screen
from distiller.screen.prefilter import KEEP
from distiller.sources.openclaw import parse as openclaw
from distiller.verify import Source, verify

sys.path.insert(0, str(Path(__file__).resolve().parent))
from personachat import DATA, read_conversations, sessions_of, write_transcripts

STOP = frozenset(
    """
    a an the and or but if then than so as at by for from in into of on onto to with without about up down out over
    off back here there this that these those it its it's i i'm i've i'd i'll me my mine myself we our ours us you
    your yours he him his she her they them their theirs themselves who whom what which when where why how is are
    was were be been being am do does did doing done have has had having get gets got getting go goes going went
    can could would will should shall may might must not no nor don't doesn't didn't can't won't isn't aren't very
    really just also too much many lot lots some any all every each more most other such own same only one ones
    like likes liked love loves loved enjoy enjoys enjoyed prefer want wants wanted plan plans hope user user's
    thing things stuff something anything everything time times lot kind way well yes yeah oh wow great good nice
    cool fun always never often usually sometimes now currently still ever big little favorite favourite make
    makes made since because while during am 'm 's 're 've 'd 'll n't
    """.split()
)
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_NOT_SELF_CONTAINED_WORDS = frozenset(
    """
    it its itself this that these those them they there here one ones you your yours yourself yourselves u ur he
    him his she her hers himself herself we us our ours ourselves today yesterday tomorrow tonight
    """.split()
)
_RELATIVE_TIME = re.compile(r"\b(?:last|next|this|coming) (?:week|weekend|month|year|night|morning|summer|winter|"
                            r"spring|fall|autumn|time)\b|\b(?:right now|the other day|a while ago)\b")
# "The user likes the food." — the food of what the other party spoke of.
_BARE_ASPECT = re.compile(
    r"^the user(?:'s)? \w+(?: to)? the (?:food|people|culture|story|plot|characters?|atmosphere|scenery|views?|"
    r"weather|colou?rs?|design|taste|sound|vibe|energy|idea|challenge|ending|movies?|books?|show|songs?|music|game|"
    r"place|way|part)(?:(?:,| and) the \w+)*\.?$"
)
_DANGLING_END = frozenset(
    "to a an the and or but of with for in on at so than how what when that which because like from by as my their "
    "is are was were be".split()
)
_VERBS = frozenset("the user is has likes dislikes prefers wants decided plans planning does not works lives from "
                   "allergic switched name favorite goal their to a an".split())  # fmt: skip


# A statement with no object, or a vague one: nothing a person can use a month later ("The user won't quit.",
# "The user is a huge fan.", "The user has been thinking.", "The user has three.", "The user started.").
_ADVERBS = frozenset("just also still really finally recently usually often now actually".split())
_FUTURE = frozenset("won't will would wouldn't".split())
_NEEDS_OBJECT = frozenset("started began quit stopped joined moved left switched finished bought adopted visited won "
                          "signed".split())
_INTENSIFIERS = frozenset("huge big great real true total massive avid die-hard diehard".split())
_RELATIONAL_HEADS = frozenset("fan fans member part fact lover follower supporter beat beats lyrics imagery "
                              "camaraderie competition diversity privacy residents".split())
_WHEN_WORDS = frozenset("ever since for years months weeks days ages long while".split())
_NUMBER = re.compile(r"^(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|several)$")


def vagueness(statement: str) -> str | None:
    """`no-object` or `vague-object` for a "The user <verb> …" statement (the kinds named above), else None."""
    words = _TOKEN.findall(statement.lower().replace("\u2019", "'"))
    if words[:2] != ["the", "user"]:
        return None
    rest = [word for word in words[2:] if word not in _ADVERBS]
    if rest and rest[0] in _FUTURE:
        return "no-object" if len(rest) <= 2 else None  # "won't quit"
    if rest[:2] in (["has", "been"], ["have", "been"]) and len(rest) > 2 and rest[2].endswith("ing"):
        after = rest[3:]
        return "no-object" if all(w in STOP or w in _WHEN_WORDS for w in after) else None  # "has been playing"
    if len(rest) == 1 and rest[0] in _NEEDS_OBJECT:
        return "no-object"  # "started"
    after = rest[1:]
    if after and any(_NUMBER.match(w) for w in after) and all(w in STOP or _NUMBER.match(w) for w in after):
        return "no-object"  # "has three", "has two of their own"
    if after and after[-1] in _RELATIONAL_HEADS and all(
            w in STOP or w in _INTENSIFIERS or w in _RELATIONAL_HEADS for w in after):
        return "vague-object"  # "is a huge fan", "likes the lyrics": of what?
    return None


def stem(word: str) -> str:
    word = word.split("'")[0]
    for suffix in ("ies", "ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def content_stems(text: str) -> frozenset[str]:
    return frozenset(stem(token) for token in _TOKEN.findall(text.lower().replace("\u2019", "'")) if token not in STOP)


def states(sentence_stems: frozenset[str], persona_stems: frozenset[str]) -> bool:
    shared = len(sentence_stems & persona_stems)
    return shared >= 1 and shared * 2 >= len(persona_stems)


def fact_carrying(text: str, personas: list[frozenset[str]]) -> bool:
    for sentence in _SENTENCE.findall(text):
        if sentence.strip() and not sentence.rstrip().endswith("?"):
            stems = content_stems(sentence)
            if any(states(stems, persona) for persona in personas if persona):
                return True
    return False


def self_containment_problem(statement: str) -> str | None:
    """Why a belief cannot be read on its own a month later, or None."""
    lowered = statement.lower().replace("\u2019", "'")
    words = _TOKEN.findall(lowered)
    for position, word in enumerate(words):
        bare = word.split("'")[0]
        following = words[position + 1] if position + 1 < len(words) else None
        if bare == "one" and following is not None and following not in STOP:
            continue  # "one older sister" names something; "a new one" does not
        if bare == "that" and position > 0 and words[position - 1] not in STOP:
            continue  # a relative clause: "a dog that barks"
        if bare == "ones" and position > 0 and words[position - 1] == "loved":
            continue
        if bare in _NOT_SELF_CONTAINED_WORDS:
            return f"pronoun:{bare}"
    if _BARE_ASPECT.match(lowered):
        return "anaphoric-definite"
    if _RELATIVE_TIME.search(lowered):
        return "relative-time"
    if words and words[-1] in _DANGLING_END:
        return "dangling"
    if not [word for word in words if word not in _VERBS and word not in STOP]:
        return "no-content"
    return vagueness(statement)


@dataclass
class Tally:
    fact_turns: int = 0
    fact_kept: int = 0
    other_turns: int = 0
    other_dropped: int = 0
    fact_with_belief: int = 0
    beliefs: int = 0
    beliefs_recalling: int = 0
    not_self_contained: int = 0
    persona_sentences: int = 0
    persona_recalled: int = 0
    reasons: Counter = field(default_factory=Counter)  # (reason, fact?, kept?)
    problems: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)  # by verification, per reason
    examples: dict = field(default_factory=dict)


def read_sessions(root: Path) -> dict[str, list[Message]]:
    by_session: dict[str, list[Message]] = {}
    for path in sorted(root.glob("agents/*/sessions/*.jsonl")):
        offset = 0
        for line in path.read_bytes().splitlines(keepends=True):
            entry = orjson.loads(line)
            session_id = path.stem
            result = openclaw.to_message(entry, agent=path.parent.parent.name, session_id=session_id,
                                         file=str(path), byte_start=offset, byte_end=offset + len(line))  # fmt: skip
            offset += len(line)
            if isinstance(result, Message):
                by_session.setdefault(session_id, []).append(result)
    return by_session


def packed(agent: str, items: list[Item], budget_tokens: int) -> list[ExtractRequest]:
    """The items in requests of at most `budget_tokens` (estimated), in reading order, as the pipeline packs one
    agent's items (batches/model.py)."""
    requests: list[list[Item]] = []
    used = 0
    for item in items:
        cost = estimate_tokens(item.text) + ITEM_OVERHEAD_TOKENS
        if not requests or (used + cost > budget_tokens and used > 0):
            requests.append([])
            used = 0
        requests[-1].append(item)
        used += cost
    return [ExtractRequest(f"{agent}-q{n}", agent, tuple(group)) for n, group in enumerate(requests, 1)]


def measure(root: Path, split: str, budget_tokens: int) -> Tally:
    """Screen every session, extract from the kept turns in requests packed as the pipeline packs them (one
    agent's sessions one after the other, `budget_tokens` each; 0: one request per session), through the
    pipeline's splitting and verification, then score each session's beliefs against its persona."""
    labels = [orjson.loads(line) for line in (root / "personas.jsonl").read_bytes().splitlines() if line.strip()]
    labels = [label for label in labels if split == "all" or label["split"] == split]
    messages = read_sessions(root)
    tally = Tally()
    extractor = RulesExtractor()
    sessions = []
    by_agent: dict[str, list[list[Item]]] = {}  # each agent's kept items, session by session
    all_sources: dict[str, Source] = {}
    for label in labels:
        personas = [content_stems(sentence) for sentence in label["persona"]]
        previous_user_text = None
        items = []
        sources: dict[str, Source] = {}
        fact_ids = set()
        for message in messages.get(label["session_id"], []):
            screened = screen(message, previous_user_text=previous_user_text)
            if message.role != "user":
                continue
            previous_user_text = screened.decisions[-1].text or previous_user_text
            kept = [d for d in screened.decisions if d.decision == KEEP]
            is_fact = fact_carrying(message.text, personas)
            reason = (kept or list(screened.decisions))[0].reason
            tally.reasons[(reason, is_fact, bool(kept))] += 1
            if is_fact:
                tally.fact_turns += 1
                tally.fact_kept += bool(kept)
                fact_ids.update(d.item_id for d in screened.decisions)
                if not kept:
                    tally.examples.setdefault("fact dropped", []).append(f"[{reason}] {message.text}")
            else:
                tally.other_turns += 1
                tally.other_dropped += not kept
                if kept:
                    tally.examples.setdefault("other kept", []).append(f"[{reason}] {message.text}")
            for d in kept:
                items.append(Item(d.item_id, "user", message.ts, d.text, True))
                sources[d.item_id] = Source(d.text, True, EvidenceItem(
                    d.item_id, message.session_id, message.agent, message.file, message.byte_start,
                    message.byte_end, message.ts, ""))  # fmt: skip
        sessions.append((label["session_id"], personas, fact_ids))
        by_agent.setdefault(f"persona-{label['split']}", []).append(items)
        all_sources.update(sources)
    requests = [request for agent, per_session in by_agent.items()
                for request in (packed(agent, [i for items in per_session for i in items], budget_tokens)
                                if budget_tokens else
                                [ExtractRequest(f"{agent}-q{n}", agent, tuple(items))
                                 for n, items in enumerate(per_session, 1)])]
    by_session: dict[str, list] = {}
    for request in requests:
        extraction, _ = extract_splitting(extractor, request)
        verified = verify(extraction, all_sources, extractor="rules", model=None, prompt_version=PROMPT_VERSION,
                          scope={item.item_id for item in request.items})
        tally.rejected.update(dict(verified.rejected))
        for belief in verified.beliefs:
            for session_id in {e.session_id for e in belief.evidence}:
                by_session.setdefault(session_id, []).append(belief)
    for session_id, personas, fact_ids in sessions:
        beliefs = by_session.get(session_id, [])
        statements = {}
        for belief in beliefs:
            statements.setdefault(belief.statement, belief)
        cited = {item.message_id for belief in beliefs for item in belief.evidence}
        tally.fact_with_belief += len(cited & fact_ids)
        recalled = set()
        for statement, belief in statements.items():
            tally.beliefs += 1
            stems = content_stems(statement)
            hits = {n for n, persona in enumerate(personas) if persona and states(stems, persona)}
            recalled |= hits
            tally.beliefs_recalling += bool(hits)
            problem = self_containment_problem(statement)
            if problem:
                tally.not_self_contained += 1
                tally.problems[problem] += 1
                tally.examples.setdefault("not self-contained", []).append(
                    f"{statement}  <- {belief.evidence[0].quote}")
            elif not hits:
                tally.examples.setdefault("outside the persona", []).append(statement)
            else:
                tally.examples.setdefault("recalling", []).append(statement)
        tally.persona_sentences += sum(1 for persona in personas if persona)
        tally.persona_recalled += len(recalled)
    return tally


def top_of_list(root: Path, split: str, top: int) -> list[tuple[str, str | None]]:
    """The first `top` beliefs `distill beliefs list` shows after a real run over the split, with their problem."""
    from distiller import manage, pipeline
    from distiller.config import Settings
    from distiller.store.reads import Filters

    agents = root / "agents" if split == "all" else root / "agents" / f"persona-{split}" / "sessions"
    with tempfile.TemporaryDirectory(prefix="distill-quality-store-") as state:
        settings = Settings(state_dir=Path(state), extractor="rules")
        pipeline.run_once(settings, [agents])
        shown = manage.list_beliefs(settings, Filters(limit=top))
    return [(b.statement, self_containment_problem(b.statement)) for b in shown]


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.3f}" if whole else f"{part}/0"


def report(tally: Tally, split: str, show: int) -> None:
    print(f"split: {split}")
    print("prefilter (user turns)")
    print(f"  fact-carrying turns kept      {_share(tally.fact_kept, tally.fact_turns):>24}   target >= 0.97")
    print(f"  other turns dropped           {_share(tally.other_dropped, tally.other_turns):>24}   target >= 0.54")
    print("rules extractor")
    print(f"  beliefs (verified, distinct per session) {tally.beliefs}")
    if tally.rejected:
        print("  rejected by verification: " + ", ".join(f"{k} {v}" for k, v in tally.rejected.most_common()))
    print(f"  not self-contained            {_share(tally.not_self_contained, tally.beliefs):>24}   target <= 0.10")
    print(f"  fact turns yielding a belief  {_share(tally.fact_with_belief, tally.fact_turns):>24}   target >= 0.08")
    print(f"  precision vs persona          {_share(tally.beliefs_recalling, tally.beliefs):>24}")
    print(f"  recall of persona sentences   {_share(tally.persona_recalled, tally.persona_sentences):>24}")
    if tally.problems:
        print("  not self-contained by cause: " + ", ".join(f"{k} {v}" for k, v in tally.problems.most_common()))
    print()
    print(f"{'reason':<20} {'fact kept':>10} {'fact dropped':>13} {'other kept':>11} {'other dropped':>14}")
    for reason in sorted({reason for reason, _, _ in tally.reasons}):
        counts = [tally.reasons[(reason, fact, kept)] for fact, kept in ((1, 1), (1, 0), (0, 1), (0, 0))]
        print(f"{reason:<20} {counts[0]:>10} {counts[1]:>13} {counts[2]:>11} {counts[3]:>14}")
    if show:
        for title, lines in tally.examples.items():
            print(f"\n{title} (first {show} of {len(lines)}):")
            for line in lines[:show]:
                print("  " + line.replace("\n", " "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("held-out", "tune", "all"), default="held-out")
    parser.add_argument("--transcripts", type=Path, default=None, help="a dir written by personachat.py")
    parser.add_argument("--csv", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--show", type=int, default=0, help="print N examples of each kind")
    parser.add_argument("--top", type=int, default=0, help="also measure the first N of `beliefs list` after a run")
    parser.add_argument("--request-tokens", type=int, default=Settings().request_budget_tokens,
                        help="pack requests as the pipeline does (default: its request budget); 0: one per session")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="distill-quality-") as folder:
        root = args.transcripts
        if root is None:
            root = Path(folder)
            write_transcripts(root, sessions_of(read_conversations(args.csv, args.limit)))
        report(measure(root, args.split, args.request_tokens), args.split, args.show)
        if args.top:
            report_top(top_of_list(root, args.split, args.top), args.show)


def report_top(shown: list[tuple[str, str | None]], show: int) -> None:
    bad = [(statement, problem) for statement, problem in shown if problem]
    print(f"\nfirst {len(shown)} of `beliefs list` after a run")
    print(f"  not self-contained            {_share(len(bad), len(shown)):>24}   target <= 0.10")
    if bad:
        print("  by cause: " + ", ".join(f"{k} {v}" for k, v in Counter(p for _, p in bad).most_common()))
    for statement, problem in (shown if show else [])[:show]:
        print(f"  {'!' if problem else ' '} {statement}" + (f"  [{problem}]" if problem else ""))


if __name__ == "__main__":
    main()
