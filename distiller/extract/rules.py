"""The offline extractor: first-person declarations become beliefs, with the sentence itself as the evidence.

Deterministic and conservative: it only reads sentences the user states about themselves ("I prefer…", "my goal
is…", "we decided…"), never questions or conditionals, and never assistant text. It is what runs when no API key
is set, so a fresh install produces real, verifiable beliefs.

Few but right: a statement must make sense a month later, without the conversation. So what follows the lead-in
must name something (not "it", "that one", "your icecream", "there", "him"), must not be cut off, must not be
vague ("a huge fan", "three", "the lyrics", a bare "started" or "been thinking"), and must be about the user, not
the other party. Relative times ("last week") are cut off the end, and anything that cannot be fixed
so is left alone. A declaration the user repeats within a request is one belief with every mention as evidence,
and more confident than one said once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from distiller import prices
from distiller.extract.base import (
    Candidate,
    EvidenceRef,
    Extraction,
    ExtractRequest,
    OverloadListener,
)

PROMPT_VERSION = "rules-3"  # rules-3: no object or a vague one is no belief
SINGLE_CONFIDENCE = 0.6  # below the store's threshold for an active belief: one mention stays provisional
_MAX_OBJECT_WORDS = 18

_CLAUSE = re.compile(r"(?:[^.!?。！？\n;:—–]|(?<=\d)\.(?=\d))+[.!?。！？]?")
# A new first-person clause starts a new statement: "I love reading, I'm a stunt double".
_AND_FIRST_PERSON = re.compile(r",?\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|we|my)\b)|,\s+(?=(?:i|i'm|i've|my)\b)", re.IGNORECASE)
_LEADING_FILLER = re.compile(
    r"^(?:(?:and|but|also|so|ok|okay|well|actually|btw|fyi|oh|anyway|update|yes|yeah|yep|sure|perfect|thanks|lol|"
    r"haha|now|one more thing|for the record|honestly|personally|me too|same here|no|nope|wow|cool|nice|great)\b"
    r"[,!\s]*)+",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(
    r",\s+(?:so|but|because|which|since|although|though|while)\b|\s+[—–]\s+|\s+-\s+|"
    r"\s+(?:that|which|who|because|so|since|but|and|when|if|as)\s+(?=(?:i|i'm|i've|i'd|i'll|we|we're)\b)|"
    r"\s+(?:so|and|but)\s+(?=(?:there|it|it's|that|that's|they|they're|you|you're|he|she)\b)",
    re.IGNORECASE,
)
_NOT_A_STATEMENT = re.compile(
    r"^(?:if|when|whether|unless|maybe|do|does|did|can|could|would|should|will|what|why|how|who|where|is|are)\b",
    re.IGNORECASE,
)
_TRAILING_FILLER = re.compile(
    r"(?:,?\s+(?:too|as well|also|though|either|so much|very much|a lot|lol|haha|honestly|really|anyway|"
    r"right now|at the moment|for now))+$",
    re.IGNORECASE,
)
_TIME_UNIT = r"(?:week|weekend|month|year|night|morning|afternoon|evening|summer|winter|spring|fall|autumn|semester)"
_RELATIVE_TIME = (
    rf"today|yesterday|tomorrow|tonight|this {_TIME_UNIT}|last {_TIME_UNIT}|next {_TIME_UNIT}|the other day|"
    r"(?:a|one|two|three|a few|a couple of) (?:days|weeks|months|years?) ago|recently|lately|earlier|soon|"
    r"in a (?:few|couple of) (?:days|weeks|months)"
)
_TRAILING_TIME = re.compile(rf"(?:,?\s+(?:{_RELATIVE_TIME}))+$", re.IGNORECASE)
_NOW = re.compile(r",?\s+(?:right now|at the moment|these days|nowadays)\b", re.IGNORECASE)  # "my favorite song right now is"
_ANY_TIME = re.compile(rf"\b(?:{_RELATIVE_TIME})\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# Words whose referent is outside the statement: the other party, someone named before, a thing pointed at.
_DEICTIC = frozenset(
    """
    it it's its itself this these those they they're they've them their theirs themselves there here you you're
    you've you'll your yours yourself u ur he he's him his himself she she's her hers herself we we're we've us our
    ours ourselves i i'm i've i'd i'll mine y'all somebody someone ones same
    """.split()
)
# Words that carry no content of their own: a statement made only of them says nothing.
_EMPTY = frozenset(
    """
    a an the and or but if of to in on at by for from with without about into onto over up down out off as than
    so too very really just also much many more most lot lots bit some any all both every each other same such
    own thing things stuff something anything everything nothing way kind sort type one ones time times well
    good great nice fun cool awesome amazing better best bad worse worst pretty quite little big sure right okay
    be been being is are was were am do does did done doing have has had having get gets got go goes going went
    gone make makes made making take takes took see saw seen say said think thought know knew try tried want need
    like likes love loves feel felt keep kept come came look looks still even ever never always now then again
    there here what which who whom whose when where why how whatever not no yes few several couple each either
    """.split()
)
# Verbs that open a stance or a reply rather than a fact: "I think…", "I can tell…", "I have to go".
_WEAK_VERBS = frozenset(
    """
    think guess know hope mean feel see agree understand believe wonder bet imagine suppose remember forget forgot
    try tried say said tell told ask asked hear heard wish need want can could would will should must might may
    appreciate promise doubt relate help go do be get wanted hoped needed
    """.split()
)
_DANGLING = frozenset(
    "a an the and or but of to with for in on at so than how what when that which because like from by as is are "
    "was were be very really my their into about".split()
)
# A thing named only as "the <aspect>" points back at what the other party talked about.
_ASPECT = (
    r"(?:food|people|culture|story|plot|characters?|atmosphere|scenery|views?|weather|colou?rs?|walls|design|taste|"
    r"smell|sound|vibe|energy|idea|concept|challenge|ending|writing|acting|graphics|gameplay|soundtrack|staff|"
    r"service|movies?|books?|show|songs?|music|game|place|way|feeling|part)"
)
# Nouns that name a relation to something else, which a statement ending on them leaves out: "a huge fan" (of
# what?), "the lyrics", "the competition", "the fact". An intensifier adds nothing: "a big fan" is as vague.
_RELATIONAL = frozenset(
    """
    fan fans member members part fact lover lovers follower supporter beat beats lyrics imagery camaraderie
    competition diversity privacy residents
    """.split()
)
_INTENSIFIERS = frozenset("huge big great real true total massive avid die-hard diehard".split())
# What may follow an activity without naming anything: "I've been playing for years", "ever since".
_WHEN = frozenset("ever since for years months weeks days ages long while".split())
# An event that is a whole fact without an object: "I retired", "I got married".
_COMPLETE_ALONE = frozenset("retired graduated married engaged divorced promoted".split())
_NUMBER = re.compile(r"\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|several")
_ANAPHORIC_DEFINITE = re.compile(rf"the {_ASPECT}(?:(?:,|,? and|,? or) the {_ASPECT})*")
_NAME_PLACEHOLDER = re.compile(r"[\[\](){}<>]|\bname\b|\buser ?\d", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    category: str
    attribute: str | None  # a fixed slot, or None to key the slot on what follows the verb
    rewrite: str  # third-person replacement of the lead-in: "{verb}" is its captured verb in the third person,
    # "{word}" its captured word as it is
    importance: int
    decay: str
    # What follows starts with the lead's own verb ("started", "been playing"), which must have an object after it:
    # "The user started." and "The user has been thinking." say nothing.
    needs_object: bool = False


def _rule(lead: str, category: str, rewrite: str, attribute: str | None = None, importance: int = 5,
          decay: str = "medium", needs_object: bool = False) -> _Rule:
    # \b(?!') : a lead-in is a whole word, never the start of a contraction ("won" is not "won't").
    return _Rule(re.compile(rf"^\s*(?:{lead})\b(?!')\s*", re.IGNORECASE), category, attribute, rewrite, importance, decay,
                 needs_object)


_ACTIVITY_VERBS = (
    "play|own|drive|volunteer|teach|study|collect|cook|bake|paint|write|read|watch|listen to|go to|run|swim|hike|"
    "knit|sing|dance|ride|raise|grow|train|practice|practise|use|eat|drink|speak|attend|visit|coach|build|sell|"
    "wear|work out|draw|garden|fish|hunt|surf|ski|climb|meditate|rescue|foster|breed|sew|compete|produce|manage|"
    "lead|design|develop|program|code|commute|travel|spend"
)
_RELATIONS = (
    "wife|husband|partner|boyfriend|girlfriend|fiancée?|son|daughter|kids?|children|baby|mom|mother|dad|father|"
    "parents|brother|sister|siblings?|grandma|grandmother|grandpa|grandfather|grandparents|family|dog|cat|dogs|cats|"
    "puppy|kitten|pets?|best friend|roommate|boss|uncle|aunt|cousin|twin"
)

RULES: tuple[_Rule, ...] = (
    _rule(r"my name is", "identity", "The user's name is", "name", 9, "low"),
    _rule(r"i(?:'m| am) (a|an)(?= )", "identity", "The user is {word}", "role", 8, "low"),
    _rule(r"i work (as|at|for|on|in)", "identity", "The user works {word}", "work", 8, "low"),
    _rule(r"i live in", "identity", "The user lives in", "home-location", 8, "low"),
    _rule(r"i grew up in", "identity", "The user grew up in", "origin", 7, "low"),
    _rule(r"i was born(?= (?:in|on) )", "identity", "The user was born", "birth", 7, "low"),
    _rule(r"i(?:'m| am) from", "identity", "The user is from", "origin", 7, "low"),
    _rule(r"i(?:'m| am) allergic to", "fact", "The user is allergic to", None, 9, "low"),
    _rule(r"i(?:'m| am) (?:vegetarian|vegan)", "identity", "The user is", "diet", 7, "low"),
    _rule(r"i(?:'m| am) (?=(?:married|single|divorced|engaged|widowed|retired|pregnant)\b)", "identity",
          "The user is", "status", 7, "low"),
    _rule(r"i(?:'m| am) (?=\d+ years old\b)", "identity", "The user is", "age", 7, "low"),
    _rule(r"i prefer", "preference", "The user prefers", None, 5),
    _rule(r"i (?:really |also |absolutely |just )?(?:like|love|enjoy|adore)", "preference", "The user likes", None, 5),
    _rule(r"i (?:really )?(?:hate|dislike|can't stand)", "preference", "The user dislikes", None, 5),
    _rule(r"i (?:don't|do not) (?:like|enjoy)", "preference", "The user does not like", None, 5),
    _rule(r"i(?:'m| am) (?:a (?:huge|big) fan of|really into|obsessed with|passionate about)", "preference",
          "The user is a fan of", None, 5),
    _rule(r"my favou?rite(?= (?!(?:is|are|was|were|one|ones|part|thing|things)\b))", "preference",
          "The user's favorite", None, 5),
    _rule(r"my goal is", "goal", "The user's goal is", None, 7),
    _rule(r"my dream is", "goal", "The user's dream is", None, 6),
    _rule(r"i (?:want|plan|hope|intend) to", "goal", "The user wants to", None, 6),
    _rule(r"i(?:'m| am) (?:planning|trying|hoping|saving up) to", "goal", "The user is planning to", None, 6),
    _rule(r"we(?:'re| are) planning to", "goal", "The user and their household or team plan to", None, 6),
    _rule(r"(?:i|we) (?:have )?decided to", "decision", "The user decided to", None, 6),
    _rule(r"(?:i|we) (?:have )?decided", "decision", "The user decided", None, 6),
    _rule(r"i(?:'ve| have) switched to", "decision", "The user switched to", None, 6),
    _rule(r"i(?:'ve| have) never", "fact", "The user has never", None, 4),
    _rule(r"i(?:'ve| have) been(?= \w+ing\b)", "fact", "The user has been", None, 5, needs_object=True),
    _rule(r"i have(?! to\b| no idea\b| been\b| a question\b| fun\b| a (?:good|great|nice) (?:time|day)\b)", "fact",
          "The user has", None, 5, "high"),
    _rule(r"i (?:just |recently |finally )?(?=(?:switched|moved|joined|started|quit|left|adopted|bought|graduated|"
          r"finished|signed up|visited|won|got (?:married|engaged|divorced|promoted|a new)|began|became|retired)\b(?!'))",
          "fact", "The user", None, 6, needs_object=True),
    _rule(rf"i (?:usually |often |also |still |regularly |sometimes )?({_ACTIVITY_VERBS})", "fact", "The user {verb}",
          None, 5),
    _rule(r"i can(?!'t| not)", "fact", "The user can", None, 4),
    _rule(rf"my ({_RELATIONS})(?= (?:is|was|are|has|have|works|lives|loves|likes|turns|turned|just|started|got|"
          r"passed|recently|plays|goes|names?d?)\b)", "fact", "The user's {word}", None, 5),
    _rule(r"i(?:'m| am) on call", "fact", "The user is on call", "on-call", 5, "high"),
    _rule(r"i(?:'m| am) (?:now )?the", "identity", "The user is the", "role", 7, "low"),
)

# Every rule's lead-in at once, each whole pattern its own alternative in rule order: the alternation matches where
# the first rule that matches would, so one match finds that rule instead of up to one per rule.
_ANY_LEAD = re.compile("|".join(f"(?P<r{n}>{rule.pattern.pattern})" for n, rule in enumerate(RULES)), re.IGNORECASE)


def first_rule(clause: str) -> tuple[_Rule, re.Match[str]] | None:
    """The first rule whose lead-in opens the clause, with its match."""
    found = _ANY_LEAD.match(clause)
    if found is None or found.lastgroup is None:
        return None
    rule = RULES[int(found.lastgroup[1:])]
    matched = rule.pattern.match(clause)
    return None if matched is None else (rule, matched)

# "mine" alone points outside the statement and is rejected before this rewrite.
_PRONOUNS = ((re.compile(r"\bmy\b", re.IGNORECASE), "their"), (re.compile(r"\bmyself\b", re.IGNORECASE), "themselves"),
             (re.compile(r"\bme\b", re.IGNORECASE), "the user"))


def _third_person(rest: str) -> str:
    for pattern, replacement in _PRONOUNS:
        rest = pattern.sub(replacement, rest)
    return rest


def _third_person_verb(verb: str) -> str:
    """play → plays, teach → teaches, study → studies; "listen to" → "listens to"."""
    head, _, tail = verb.lower().partition(" ")
    if head.endswith(("s", "sh", "ch", "x", "z", "o")):
        head += "es"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return f"{head} {tail}".strip()


def _slot(words: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", words.casefold())[:4]) or "statement"


def _vague(words: list[str], needs_object: bool) -> bool:
    """No object, or a vague one: a count with nothing counted ("three"), a relational noun with nothing it relates
    to ("a huge fan", "the lyrics"), or the lead's own verb with nothing after it ("started", "been playing for
    years")."""
    if _NUMBER.fullmatch(words[0]) and all(w in ("of", "my", "own", "each", "them") for w in words[1:]):
        return True
    if words[-1] in _RELATIONAL and all(w in _EMPTY or w in _INTENSIFIERS or w in _RELATIONAL for w in words):
        return True
    return needs_object and words[0] not in _COMPLETE_ALONE and all(
        w in _EMPTY or w in _WEAK_VERBS or w in _WHEN for w in words[1:])


def _object_problem(rest: str, needs_object: bool = False) -> str | None:
    """Why what follows the lead-in cannot stand alone, or None: it points outside itself, is cut off, is empty, or
    has no object or a vague one (`_vague`)."""
    if not rest or "?" in rest or _NAME_PLACEHOLDER.search(rest):
        return "empty" if not rest else "placeholder"
    if rest.count('"') % 2 or rest.count("\u201c") != rest.count("\u201d"):
        return "cut-off"  # a title cut at a full stop inside its quotes
    words = _WORD.findall(rest.lower().replace("\u2019", "'"))
    if not words or len(words) > _MAX_OBJECT_WORDS:
        return "length"
    for position, word in enumerate(words):
        if word in _DEICTIC and not (word == "ones" and words[position - 1] == "loved"):
            return "deictic"
        if word == "that" and (position == 0 or words[position - 1] in _EMPTY):
            return "deictic"  # "that book", "like that"; "the dog that barks" is a relative clause
        if word == "one" and (position + 1 == len(words) or words[position + 1] in _EMPTY):
            return "deictic"  # "a new one", "one of"; "one sister" names something
    if words[0] in ("how", "what", "why", "where", "when", "who", "which", "whatever"):
        return "deictic"
    if words[-1] in _DANGLING:
        return "dangling"
    if _ANY_TIME.search(rest):
        return "relative-time"
    if all(word in _EMPTY or word in _WEAK_VERBS for word in words):
        return "empty"
    if _ANAPHORIC_DEFINITE.fullmatch(rest.lower()):
        return "deictic"  # "the food and the culture": of what?
    if words[0] in _WEAK_VERBS or (words[0] == "to" and len(words) > 1 and words[1] in _WEAK_VERBS | _EMPTY):
        return "empty"
    if _vague(words, needs_object):
        return "vague"
    return None


def _object(clause: str, end: int, needs_object: bool = False) -> str | None:
    """What follows the lead-in, trimmed to a phrase that can stand alone; None when no such phrase exists."""
    rest = _CLAUSE_END.split(clause[end:])[0].rstrip(" .!。！,")
    head, comma_and, _ = rest.partition(", and ")
    if comma_and and "," not in head:  # "a, b, and c" is a list; "x, and always y" starts another statement
        rest = head
    for attempt in (rest, rest.split(",")[0]):
        attempt = _NOW.sub("", attempt)
        attempt = _TRAILING_TIME.sub("", _TRAILING_FILLER.sub("", attempt.strip())).rstrip(" .!,")
        attempt = _TRAILING_FILLER.sub("", attempt).rstrip(" .!,")
        if _object_problem(attempt, needs_object) is None:
            return attempt
    return None


def _statement(rule: _Rule, lead: re.Match[str], rest: str) -> str:
    rewrite = rule.rewrite
    if lead.groups():
        captured = lead.group(1).lower()
        rewrite = rewrite.format(verb=_third_person_verb(captured) if "{verb}" in rewrite else "", word=captured)
    return f"{rewrite} {_third_person(rest)}."


def candidates_from(item_id: str, text: str) -> list[Candidate]:
    found = []
    clauses = (part for match in _CLAUSE.finditer(text) for part in _AND_FIRST_PERSON.split(match.group()))
    for sentence in clauses:
        sentence = sentence.strip()
        if len(sentence) < 8 or sentence.endswith("?") or _NOT_A_STATEMENT.match(sentence):
            continue
        led = first_rule(_LEADING_FILLER.sub("", sentence))
        if led is None:
            continue
        rule, lead = led
        rest = _object(lead.string, lead.end(), rule.needs_object)
        if rest is None:
            continue
        statement = _statement(rule, lead, rest)
        if len(statement) > 200:
            continue
        found.append(
            Candidate(
                statement=statement,
                category=rule.category,
                subject="user",
                attribute=rule.attribute or f"{rule.category}-{_slot(rest)}",
                confidence=SINGLE_CONFIDENCE,
                evidence_type="explicit",
                importance=rule.importance,
                decay_sensitivity=rule.decay,
                valid_from=None,
                evidence=(EvidenceRef(item_id, sentence),),
            )
        )
    return found


def _merged(found: list[Candidate]) -> list[Candidate]:
    """One candidate per statement, every message that states it its evidence. A repeat raises no confidence here:
    the store combines independent sessions over all of a belief's evidence, however the messages were batched."""
    by_statement: dict[str, list[Candidate]] = {}
    for candidate in found:
        by_statement.setdefault(candidate.statement.casefold(), []).append(candidate)
    merged = []
    for group in by_statement.values():
        evidence = tuple({ref.item_id: ref for candidate in group for ref in candidate.evidence}.values())
        first = group[0]
        merged.append(
            Candidate(first.statement, first.category, first.subject, first.attribute, SINGLE_CONFIDENCE,
                      first.evidence_type, first.importance, first.decay_sensitivity, first.valid_from, evidence)
        )  # fmt: skip
    return merged


class RulesExtractor:
    """Offline and free: patterns over the user's own sentences, no model, nothing sent anywhere."""

    name = "rules"
    model: str | None = None
    prompt_version = PROMPT_VERSION
    offline = True
    billed = False
    rates = prices.FREE

    def extract(self, request: ExtractRequest, *, max_tokens: int | None = None,
                on_overload: OverloadListener | None = None) -> Extraction:
        found: list[Candidate] = []
        for item in request.items:
            if item.evidence and item.role == "user":
                found.extend(candidates_from(item.item_id, item.text))
        return Extraction(request.request_id, tuple(_merged(found)), ())
