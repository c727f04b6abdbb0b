"""The offline extractor: first-person declarations become beliefs, with the sentence itself as the evidence.

Deterministic and conservative: it only reads sentences the user states about themselves ("I prefer…", "my goal
is…", "we decided…"), never questions or conditionals, and never assistant text. It is what runs when no API key
is set, so a fresh install produces real, verifiable beliefs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distiller.extract.base import Candidate, EvidenceRef, Extraction, ExtractRequest

PROMPT_VERSION = "rules-1"

_CLAUSE = re.compile(r"(?:[^.!?。！？\n;:—–]|(?<=\d)\.(?=\d))+[.!?。！？]?")
_AND_FIRST_PERSON = re.compile(r",?\s+(?:and|but)\s+(?=(?:i|i'm|we|my)\b)", re.I)
_LEADING_FILLER = re.compile(
    r"^(?:(?:and|but|also|so|ok|okay|well|actually|btw|fyi|oh|anyway|update|yes|yeah|sure|perfect|thanks|lol|haha|"
    r"now|one more thing|for the record)\b[,\s]*)+",
    re.I,
)
_CLAUSE_END = re.compile(r",\s+(?:so|and|but|because|which)\b|\s+[—–]\s+|\s+-\s+")
_NOT_A_STATEMENT = re.compile(
    r"^(?:if|when|whether|unless|maybe|do|does|did|can|could|would|should|will|what|why|how|who|where|is|are)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    category: str
    attribute: str | None  # a fixed slot, or None to key the slot on what follows the verb
    rewrite: str  # third-person replacement of the matched lead-in
    importance: int
    decay: str


def _rule(lead: str, category: str, rewrite: str, attribute: str | None = None, importance: int = 5,
          decay: str = "medium") -> _Rule:
    return _Rule(re.compile(rf"^\s*(?:{lead})\b\s*", re.I), category, attribute, rewrite, importance, decay)


RULES: tuple[_Rule, ...] = (
    _rule(r"my name is", "identity", "The user's name is", "name", 9, "low"),
    _rule(r"i(?:'m| am) (?:a|an)(?= )", "identity", "The user is a", "role", 8, "low"),
    _rule(r"i work (?:as|at|for|on)", "identity", "The user works", "work", 8, "low"),
    _rule(r"i live in", "identity", "The user lives in", "home-location", 8, "low"),
    _rule(r"i(?:'m| am) from", "identity", "The user is from", "origin", 7, "low"),
    _rule(r"i(?:'m| am) allergic to", "fact", "The user is allergic to", None, 9, "low"),
    _rule(r"i(?:'m| am) (?:vegetarian|vegan)", "identity", "The user is", "diet", 7, "low"),
    _rule(r"i prefer", "preference", "The user prefers", None, 5),
    _rule(r"i (?:really )?(?:like|love|enjoy)", "preference", "The user likes", None, 5),
    _rule(r"i (?:really )?(?:hate|dislike|can't stand)", "preference", "The user dislikes", None, 5),
    _rule(r"i (?:don't|do not) like", "preference", "The user does not like", None, 5),
    _rule(r"my favou?rite", "preference", "The user's favorite", None, 5),
    _rule(r"my goal is", "goal", "The user's goal is", None, 7),
    _rule(r"i (?:want|plan|hope|intend) to", "goal", "The user wants to", None, 6),
    _rule(r"i(?:'m| am) (?:planning|trying|hoping) to", "goal", "The user is planning to", None, 6),
    _rule(r"we(?:'re| are) planning to", "goal", "The user and their household or team plan to", None, 6),
    _rule(r"(?:i|we) (?:have )?decided to", "decision", "The user decided to", None, 6),
    _rule(r"(?:i|we) (?:have )?decided", "decision", "The user decided", None, 6),
    _rule(r"i(?:'ve| have) switched to", "decision", "The user switched to", None, 6),
    _rule(r"i have", "fact", "The user has", None, 5, "high"),
    _rule(r"i(?= (?:just |recently )?(?:switched|moved|joined|started|quit|left|adopted|bought)\b)", "fact",
          "The user", None, 6),
    _rule(r"i(?:'m| am) on call", "fact", "The user is on call", "on-call", 5, "high"),
    _rule(r"i(?:'m| am) (?:now )?the", "identity", "The user is the", "role", 7, "low"),
)

_PRONOUNS = ((re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bmine\b", re.I), "theirs"),
             (re.compile(r"\bmyself\b", re.I), "themselves"), (re.compile(r"\bme\b", re.I), "them"),
             (re.compile(r"\bI(?:'m| am)\b"), "they are"), (re.compile(r"\bI\b"), "they"))


def _third_person(rest: str) -> str:
    for pattern, replacement in _PRONOUNS:
        rest = pattern.sub(replacement, rest)
    return rest


def _slot(words: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", words.casefold())[:4]) or "statement"


def candidates_from(item_id: str, text: str) -> list[Candidate]:
    found = []
    clauses = (part for match in _CLAUSE.finditer(text) for part in _AND_FIRST_PERSON.split(match.group()))
    for sentence in clauses:
        sentence = sentence.strip()
        if len(sentence) < 8 or sentence.endswith("?") or _NOT_A_STATEMENT.match(sentence):
            continue
        clause = _LEADING_FILLER.sub("", sentence)
        for rule in RULES:
            lead = rule.pattern.match(clause)
            if lead is None:
                continue
            rest = _CLAUSE_END.split(clause[lead.end():])[0].rstrip(" .!。！,")
            if not rest:
                break
            statement = f"{rule.rewrite} {_third_person(rest)}."
            if len(statement) > 200:
                break
            found.append(
                Candidate(
                    statement=statement,
                    category=rule.category,
                    subject="user",
                    attribute=rule.attribute or f"{rule.category}-{_slot(rest)}",
                    confidence=0.7,
                    evidence_type="explicit",
                    importance=rule.importance,
                    decay_sensitivity=rule.decay,
                    valid_from=None,
                    evidence=(EvidenceRef(item_id, sentence),),
                )
            )
            break
    return found


class RulesExtractor:
    name = "rules"
    model = None
    prompt_version = PROMPT_VERSION

    def extract(self, request: ExtractRequest) -> Extraction:
        found: list[Candidate] = []
        for item in request.items:
            if item.evidence and item.role == "user":
                found.extend(candidates_from(item.item_id, item.text))
        return Extraction(request.request_id, tuple(found), ())
