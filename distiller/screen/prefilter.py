"""Decide, for every cleaned message, whether it may become evidence, serves only as context, or is dropped.

Recall comes first: a dropped fact is lost for good while a kept chit-chat turn costs a few tokens. So a message is
dropped only when every sentence in it is recognisably empty of facts (acknowledgements, reactions, greetings,
impersonal questions and commands), and any first-person statement, in any of the languages below, keeps it.
Pronoun-dropping statements ("Just adopted a puppy!") survive because they contain content words.
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache

from distiller.textscan import blank_except, fold

KEEP = "keep"
CONTEXT = "context"
DROP = "drop"

REASONS: tuple[str, ...] = (
    "personal",
    "content",
    "assistant-context",
    "ack-filler",
    "emoji-only",
    "too-short",
    "question",
    "other-party",
    "reaction",
    "command",
    "slash-command",
    "code-or-log",
    "url-only",
    "oversized-paste",
    "assistant-refusal",
    "meta-question",
    "synthetic-prompt",
    "echo",
    "empty-after-clean",
    "inter-session",
    "cron-session",
    "dreaming-session",
)


@dataclass(frozen=True)
class Prefiltered:
    """The prefilter's decision on one cleaned part (keep | context | drop) and its reason; screening makes it a
    `Decision` on the item, with the text."""

    decision: str
    reason: str


@cache
def _verdict(decision: str, reason: str) -> Prefiltered:
    """They are immutable and few: each is made once."""
    return Prefiltered(decision, reason)


_LONG_MESSAGE = 600
_OVERSIZED = 6000
_ALWAYS_OVERSIZED = 40000

# First-person words are looked up per word (a set probe per word beats a regex alternation the engine would try
# at every position); the unspaced scripts have no words, so they keep a pattern, whose alternatives all start with
# a literal so that the engine skips to those characters.
_FIRST_PERSON_WORDS = frozenset(
    """
    i im ive my mine myself we our ours ourselves
    yo mi mis mío mía nosotros nosotras nuestro nuestra nuestros nuestras soy estoy tengo
    je j moi mon ma mes nous notre suis
    ich mein meine meinen meinem meiner mir mich wir unser unsere unseren unserem unserer bin habe
    eu meu minha meus minhas nós nosso nossa nossos nossas sou estou tenho moro
    io mio mia miei mie noi nostro nostra nostri nostre sono ho
    я мой моя моё мои мне меня мы наш наша наши
    """.split()
)
_FIRST_PERSON_UNSPACED = re.compile(r"我|俺|僕|私(?!立)|わたし|あたし|自分|저는|제가|저의|저도|저를|나는|내가|나도|나를|우리")
_WORD_RUN = re.compile(r"\w+")
# Enough to label a long message, which is kept either way, without a regex scan over it.
_COMMON_FIRST_PERSON = (" i ", " i'", " my ", " we ", " our ", "我", "私", "僕", "저는", "제가", "나는", " ich ", " je ", " j'", " yo ", " mi ", " я ", " eu ")
_STANDING_INSTRUCTION = re.compile(
    r"^(?:always|never|from now on|going forward|in (?:the )?future|remember|call me|"
    r"book|schedule|reserve|remind|cancel|reschedule|renew|order|buy)\b"
)
# First-person phrases that are politeness, not facts: removed before looking for a first-person marker. Every
# alternative starts with one of the letters in the lookahead, which lets the engine skip other words at once.
_HOLLOW_FIRST_PERSON = re.compile(
    r"\b(?=[gilmostw])(?:i (?:see|agree|guess|know|bet|mean|understand|wonder|think|believe|feel you|hear you|"
    r"can imagine|can'?t wait|cannot wait|hope so|think so|appreciate (?:it|that|you|this))|"
    r"i (?:really |totally |just |also )?(?:love|like|adore|enjoy|enjoyed|loved|liked) "
    r"(?:it|that|this|them|these|those|you|your|(?:how|what|the way) (?=you|your))|"
    r"i'?m (?:so |really |very |super |just )?(?:happy|glad|sorry|proud|excited|thrilled|sure|not sure|curious|"
    r"in|good|fine|ok|okay|great|well|here|listening|all ears|rooting)(?: for you| to hear| that you| to see)?|"
    r"i'?m doing (?:well|good|great|fine|ok|okay|alright)|i'?d love to (?:hear|see|know)|"
    r"i hope (?:you|your|that|it|everything|so)|i wish you|i'?ll (?:keep that in mind|try|check)|"
    r"me too|me neither|same here|let me know|tell me|show me|give me|my pleasure|my bad|oh my|my god|"
    r"my goodness|we'?ll see|shall we|let'?s|"
    r"i (?:will|do|am|did|can|could|would|have|was|know|don'?t know|do not know|don'?t|won'?t|can'?t|might|may)"
    r"(?: too| not| so| as well| definitely| totally| though)?(?=[\s.!,]*$)|"
    r"i'?ll (?:text|call|let|see|talk to|catch|message) you|"
    r"i'?ve heard (?:good things|great things|of (?:it|that|them)|that|about (?:it|that))|i can (?:see|tell|understand|relate)|"
    r"i(?:'d| would) (?:love|like) to(?: \w+){0,2}? (?:it|that|this|them|sometime|someday|you|with you)(?=[\s.!,]*$)|"
    r"i(?:'d| would) love to(?=[\s.!,]*$)|i'?m (?:really |so )?looking forward to (?:it|that|this|seeing you|"
    r"hearing|talking|meeting you|chatting)|i'?m glad (?:i|we) (?:could|got to|met|had|talked|ran into)|"
    r"i hope we (?:can|could|get to|will|'ll)[^,.!?]*|"
    r"i(?:'ll| will| might| may| should| need to| have to)(?: have to| need to| definitely| totally| probably| really|"
    r" just)*"
    r" (?:check (?:it|that|them|those) out|give (?:it|that|them) a (?:try|shot|go)|try (?:it|that|them)|"
    r"look (?:it|that) up|look into (?:it|that))|i'?ve been meaning to|"
    r"we (?:should|could|must|can|will|'ll|'re going to|are going to)(?: definitely| totally| really)?"
    r" (?:hang out|get together|meet up|talk|chat|be (?:best |good |great )?friends))\b"
)
# A feeling about something else ("I'm sure you'll love it", "I love that book"): once removed, a sentence without
# another first-person word is a reaction, not news about the speaker. Opinions ("I think the bus is late") are not
# feelings: their remainder is judged as any sentence.
_EMOTIVE_STANCE = re.compile(
    r"\bi(?:'m| am)?(?: so| really| just| totally| truly| also| too| very| absolutely| definitely)* (?:love|like|"
    r"adore|enjoy|glad|happy|sure|sorry|proud|excited|thrilled|impressed|amazed|jealous|admire|appreciate|bet|hope|"
    r"wish|can tell|can see|can imagine|can't believe|agree)\b"
    r"(?: (?:that|how|what|the way|when|for|to hear|to see|with))?"
    r" (?:you|your|u|ur|it|that|this|these|those|they|them|he|she|him|her)\b"
)
# Second-person words: a sentence with one and no first-person word is about the other party.
_SECOND_PERSON_WORDS = frozenset("you your yours yourself yourselves youre youve youll youd u ur".split())
_INSTRUCTION_WORDS = frozenset("always never remember forget stop please don future forward".split())
_ME_TO = re.compile(r"\bme to (?!the\b|a\b|an\b)[a-z]")
_INSTRUCTION_START = re.compile(r"(?:please |so |and |ok,? |okay,? )?(?:you (?:should|must|need to|have to|can)\b|"
                                r"please\b|don'?t\b|do not\b|never\b|always\b|remember\b|stop\b)")
# Reactions: what the other said, judged. A deictic opener, or a judging verb, and a judging word.
_REACTION_OPENER = re.compile(
    r"^(?:\W*(?:oh|ohh|wow|well|yeah|yes|haha|man|dude|omg|ah|aw|aww|ooh|hmm|cool|nice|great|awesome|really)\b\W*)*"
    r"(?:that|this|those|these|sounds|looks|seems|what an?|how|so|such)\b"
)
# "It's a great way to stay in shape": praise of what the other does, whatever follows.
_GOOD_WAY = re.compile(
    r"^(?:\W*(?:oh|wow|well|yeah|yes|and|but|i agree|me too)\b\W*)*(?:it|that|this|they)(?:'s|'re| is| are| was| were|"
    r"'ll be| will be| can be| would be)(?: \w+)? (?:a|an|the|such a)(?: \w+)? (?:great|good|fun|nice|best|wonderful|"
    r"perfect|fantastic|awesome|amazing|excellent|healthy|easy|cool|interesting) (?:way|reason|idea|start|goal|"
    r"opportunity|choice|option|hobby|skill|thing to do)\b"
)
_WELL_WISH_INTERJECTIONS = frozenset("oh ohh wow well yeah yes haha aw aww omg hey ah ooh".split())
_WELL_WISH = re.compile(  # "Oh wow, congrats on the promotion!": interjections first are a well-wish all the same
    r"^\W*(?:(?:" + "|".join(sorted(_WELL_WISH_INTERJECTIONS)) + r")\b\W*)*"
    r"(?:thanks|thank you|thx|ty|good luck|best of luck|congrats|congratulations|happy (?:birthday|anniversary)|"
    r"have (?:a|an|fun)|take care|talk soon|see you|bye)\b"
)
_WELL_WISH_LEADS = frozenset(
    "thanks thank thx ty good best congrats congratulations happy have take talk see bye".split()
)
_JUDGING_VERBS = frozenset("sounds sound sounded looks look looked seems seem seemed".split())
_EVALUATIVE_WORDS_TEXT = """
    great good nice cool awesome amazing fantastic wonderful lovely beautiful gorgeous incredible funny hilarious
    interesting exciting sweet perfect excellent brilliant neat wild crazy insane cute adorable sad tough hard bad
    terrible awful rough scary impressive inspiring special fun delicious tasty challenging rewarding relaxing
    fascinating unique amazingly delightful fabulous terrific superb stunning epic peaceful
    meaningful powerful touching heartwarming emotional wise smart talented strong brave kind thoughtful generous
    creative dedicated admirable noble fulfilling satisfying stressful exhausting frustrating difficult dangerous
    unfortunate shame pity blast dream nightmare heartbreaking devastating tragic hopeful glad happy proud healthy
    classic convenient important confusing realistic friendly best worst favorite underrated overrated popular
    informative entertaining enjoyable memorable unforgettable beautifully
    """
_EVALUATIVE_WORDS = frozenset(_EVALUATIVE_WORDS_TEXT.split())
# "It's such a classic.", "They're so smart!": a pronoun judged, and at most a word after the judgement.
_PRONOUN_VERDICT = re.compile(
    r"^(?:\W*(?:oh|ohh|wow|well|yeah|yes|haha|man|omg|ah|aw|aww|ooh|and|but)\b\W*)*"
    r"(?:it|they|he|she)(?:'s|'re| is| are| was| were| must be| must have been| can be|'ll be| will be| would be|"
    r"'d be| seems?| sounds?| looks?)"
    r"(?: (?:so|very|really|pretty|quite|such|too|a|an|the|just|also|always|super|totally|truly|absolutely|"
    r"definitely|one of the|of the))* (?:[a-z]+ )?(?:"
    + "|".join(sorted(_EVALUATIVE_WORDS_TEXT.split()))
    + r")(?: [a-z]+)?\W*$"
)
# Statements that drop their "I" start with a verb in the past, or with one of these: they are news, not reactions.
_PRONOUN_DROP_LEADS = frozenset(
    """
    just finally recently been got went started moved bought lost won made took saw met had did found left became
    built sold ran began came quit joined adopted finished booked signed spent gave
    """.split()
)
# The first word (\w run) of every hollow phrase: text with none of them has no hollow phrase.
_HOLLOW_LEADS = frozenset("i im id ill ive me same let lets tell show give my oh we well shall".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_SENTENCE = re.compile(r"[^.!?。！？\n;；]+[.!?。！？;；]*")
_FILLER_WORDS = frozenset(
    """
    a an the and or but if then than as at by for from in into of on onto to with without about like up down out
    over off back here there this that these those it its it's that's this's what what's how how's who why when
    where which whatever yes yeah yep yup ya yea no nope nah not ok okay k kk alright sure well oh ohh ah ahh aw aww
    awww wow whoa woah omg lol lmao haha hahaha hahahaha hehe heh rofl hmm hm um uh huh oops yikes ugh damn dang gosh
    geez jeez yay woo woohoo hooray phew meh hey hi hello hiya yo sup howdy bye goodbye cya later cheers thanks thank
    thx ty tysm welcome np anytime please pls plz congrats congratulations luck care wish wishes best regards you
    your you're yours yourself u ur you've you'll you'd he she they them him her his their he's she's they're one
    thing things stuff way time times day kind sort deal idea point sense news story hear heard sounds sound
    sounded seem seems looks look looking feel feels feeling is are was were be been being am do does did doing
    done have has had having get gets got getting go goes going gone went can could would will should shall may
    might must keep take make made let's don't can't won't isn't wasn't didn't doesn't haven't hasn't aren't know
    think guess mean agree see understand imagine bet hope love like enjoy miss wait gonna wanna gotta kinda sorta
    ever now today tonight tomorrow yesterday soon again already yet too also fun glad same true right exactly
    agreed indeed definitely absolutely certainly course nice cool great good awesome amazing fantastic wonderful
    lovely beautiful gorgeous incredible funny hilarious interesting exciting excited sweet perfect excellent
    brilliant neat wild crazy insane cute adorable sad tough hard bad terrible awful rough scary impressive
    inspiring special important wrong fair helpful useful happy proud sorry jealous lucky blessed grateful thankful
    thrilled stoked pumped delightful fabulous terrific superb stunning epic dope sick lit fire solid huge big real
    relaxing peaceful meaningful powerful touching heartwarming emotional wise smart talented strong brave kind
    better worse worst super pretty quite really very so truly totally certainly surely literally seriously
    honestly actually basically just still even always never much many lot lots bit little more most less enough
    all some any every such something anything everything nothing must've sounds like what's up lovely nice man
    dude bro buddy friend guys everyone someone awesome tho though anyway anyways hopefully maybe probably
    perhaps sometimes wonderful rooting forward outstanding acknowledged noted understood saved roger either
    neither problem worries worry advice meet chat chatting talking talk makes worth spirit sometime someday together
    gracias merci danke grazie obrigado obrigada спасибо hola bonjour salut hallo ciao привет vale claro genial
    bien bueno bon oui non ja nein sí si jaja jajaja jeje mdr super top perfecto parfait toll prima bravo
    felicidades félicitations glückwunsch хорошо да нет ок круто класс ага ладно понятно отлично de nada rien
    bitte schön muchas beaucoup mucho molto vielen dank très muy sehr gut ça va que qué mille
    """.split()
)
# Filler, the first person and verbs that name no activity: what a first-person sentence that says nothing is made of.
_EMPTY_FIRST_PERSON = _FILLER_WORDS | frozenset(
    """
    i i'm i've i'd i'll me my mine myself we we're we've we'll we'd us our ours im ive id
    tried trying wanted needed need met seen heard asking asked wondering hoping meant favorite favorites favourite
    favourites fan recommend recommended highly enjoying forget forgot imagined wondered before able both
    """.split()
)
_DIGIT = re.compile(r"\d")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_FILLER = re.compile(
    r"(?:好的|好吧|好呀|好啊|好滴|好|行|可以|嗯+|哦+|噢|哈+|呵+|嘿+|谢谢你?|多谢|感谢|谢啦|没问题|收到|明白了?|知道了|了解|"
    r"对的?|是的|没错|太好了|真棒|厉害|牛|不错|加油|你好|您好|早上好|早安|晚安|再见|拜拜|辛苦了|哇+|真的吗|是吗|确实|"
    r"有道理|赞|恭喜你?|ありがとう(?:ございます)?|はい|うん|ええ|なるほど|すごい(?:ね)?|いいね|そうですね|そうだね|"
    r"おはよう(?:ございます)?|こんにちは|こんばんは|おやすみ|了解(?:です)?|わかりました|わかった|お疲れ様(?:です)?|"
    r"よろしく(?:お願いします)?|草|笑|w+|감사합니다|고마워|고맙습니다|네|넵|응|좋아요?|안녕하세요|안녕|ㅋ+|ㅎ+|"
    r"알겠습니다|알겠어|대박|최고|그래요?|맞아요?)+"
)
_CJK_QUESTION_END = re.compile(r"(?:吗|嗎|呢|么|か|까|니)[\s。.]*$")
_QUESTION_START = re.compile(
    r"^(?:what|how|why|when|where|who|whom|whose|which|is|are|was|were|do|does|did|can|could|would|will|should|"
    r"have|has|any|anything)\b"
)
_IMPERATIVE = re.compile(
    r"^(?:please |pls |can you |could you |would you |now |just |ok,? |okay,? |then )?"
    r"(?:write|make|create|generate|fix|debug|refactor|show|list|tell|give|run|build|explain|translate|summari[sz]e|"
    r"find|search|look|check|open|close|send|add|remove|delete|update|install|set|draft|rewrite|edit|convert|"
    r"calculate|compute|compare|describe|recommend|suggest|plan|play|stop|start|continue|try|read|review|"
    r"analy[sz]e|format|print|save|load|deploy|restart|use|move|rename|copy|implement|test|help|fetch|pull|"
    r"push|commit|merge|clone|download|upload|sort|count|draw|design|define|name|say|repeat|ignore|forget|"
    r"proceed|go ahead|retry|redo|undo|continue|keep going|do it|go on|give me|show me|tell me)\b"
)
# Every meta question contains one of these, so a text whose lower-cased form has none is neither normalised nor
# searched.
_META_QUESTION_GATES = (
    "remember", "recall", "about me", "what did i", "have i", "记得", "覚えて", "기억", "acuerdas", "recuerdas",
    "souviens", "erinnerst",
)  # fmt: skip
_META_QUESTION = re.compile(
    r"\b(?:do|did|can|could) you (?:still |even )?(?:remember|recall)\b|"
    r"\bwhat (?:do|did|else do) you (?:know|remember) about me\b|\bwhat did i (?:tell|say to) you\b|"
    r"\bhave i (?:ever )?(?:told|mentioned)\b|\bremember when i\b|"
    r"你还记得|你记得|还记得我|覚えてる|覚えています|기억해|기억나|te acuerdas|recuerdas|tu te souviens|"
    r"te souviens-tu|erinnerst du dich"
)
_REFUSAL = re.compile(
    r"^(?:(?:i'?m )?sorry,? (?:but )?)?(?:i (?:don'?t|do not) have (?:any )?(?:information|data|memory|memories|"
    r"record|records|access|details|context)|i (?:don'?t|do not|can'?t|cannot) (?:recall|remember|help with|"
    r"assist with|access)|i(?:'m| am) (?:not able|unable) to|i can'?t (?:help|assist|do that)|as an ai\b|"
    r"i (?:have no|lack) (?:memory|record|information))"
)
_RECALL_LINE = re.compile(r"^\s*(?:[-*•]|\d+\.)\s*\[[a-z_ -]{3,24}(?:,\s*[0-9.]+[^\]\n]*)?\]", re.MULTILINE)
_SLASH_COMMAND = re.compile(r"^/[A-Za-z][\w-]*(?=\s|$)")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_FENCE = re.compile(r"```[\s\S]*?(?:```|\Z)")
_CODE_LINE = re.compile(
    r"(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}[\].,]|Traceback \(most recent call last\)|"
    r"File \"[^\"\n]+\", line \d+|at [\w$.<>]+\(|(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b|"
    r"(?:def|class|func|fn|function) \w+\s*[(:<{]|from [\w.]+ import|import [\w.{*]|#include|"
    r"(?:const|let|var) \w+\s*=|(?:public|private|static|async|export) |(?:SELECT|INSERT|UPDATE|DELETE) |"
    r"[$>] \S|#!/|</?[a-zA-Z][\w-]*[^>]*>|[{}()\[\];,]+$|\w+(?:Error|Exception)\b)"
)
_CODE_LINE_ENDINGS = (";", "{", "}", "=>", ") {")
_SHELL = re.compile(
    r"^\s*(?:\$ |sudo |git |npm |pnpm |yarn |pip3? |python3? |node |docker |kubectl |curl |wget |cd |ls |cat |"
    r"grep |rm |mv |cp |chmod |ssh |brew |apt(?:-get)? |make |cargo |go (?:run|build|test) )"
)
_CODE_SYMBOLS = "{}[]()<>;=$\\|&"
_VOCATIVE = re.compile(
    r"(?:,[ \t]*|\b(?:[Hh]ey|[Hh]i|[Hh]ello|[Tt]hanks|[Tt]hank you|[Cc]ongrats|[Cc]ongratulations|[Bb]ye|[Dd]ear|"
    r"[Mm]orning|[Nn]ight)[ \t]+)[A-Z][a-z]+(?=[ \t]*[,!.?]|[ \t]*$)"
)
# Every vocative's name follows a comma or a blank: a cheap search (it starts at those characters only) that rules
# out most sentences.
_VOCATIVE_NAME = re.compile(r"[, \t][A-Z][a-z]+(?=[ \t]*[,!.?]|[ \t]*$)")
_NOT_ALNUM = re.compile(r"[\W_]+")
_CODE_SYMBOL_BYTES = _CODE_SYMBOLS.encode()


# In ASCII text \w is [A-Za-z0-9_] and a word of `_WORD` holds only letters and apostrophes: blanking every other
# byte and splitting finds the same runs as the regexes, without a match object per word.
_BLANK_NON_WORD = blank_except(string.ascii_letters + string.digits + "_")
_BLANK_NON_LETTER = blank_except(string.ascii_letters + "'")
_ASCII_NON_ALNUM = bytes(code for code in range(128) if not chr(code).isalnum())


def _word_runs(text: str) -> list[str]:
    """`_WORD_RUN.findall(text)`: no run spans a blanked byte (nor a blank), so each piece left between them is
    searched on its own, and an ASCII one is a run as it is."""
    pieces = text.encode().translate(_BLANK_NON_WORD).decode().split()
    if text.isascii():
        return pieces
    return [run for piece in pieces for run in ((piece,) if piece.isascii() else _WORD_RUN.findall(piece))]


def _words(text: str) -> list[str]:
    """`_WORD.findall(text)`, the same way: an ASCII piece without an apostrophe is a word as it is."""
    pieces = text.encode().translate(_BLANK_NON_LETTER).decode().split()
    if text.isascii() and "'" not in text:
        return pieces
    return [
        word
        for piece in pieces
        for word in ((piece,) if piece.isascii() and "'" not in piece else _WORD.findall(piece))
    ]


def _hollow_free(lowered: str, words: list[str]) -> str:
    """lowered without hollow phrases; `words` are its \\w runs."""
    if not _HOLLOW_LEADS.isdisjoint(words):
        return _HOLLOW_FIRST_PERSON.sub(" ", lowered)
    return lowered


def _first_person_count(lowered: str) -> int:
    count = sum(word in _FIRST_PERSON_WORDS for word in _word_runs(lowered))
    return count if lowered.isascii() else count + len(_FIRST_PERSON_UNSPACED.findall(lowered))


def _has_first_person(lowered: str, words: list[str]) -> bool:
    if not _FIRST_PERSON_WORDS.isdisjoint(words):
        return True
    return not lowered.isascii() and bool(_FIRST_PERSON_UNSPACED.search(lowered))


def _is_personal(lowered: str, words: list[str], hollow_free: str) -> bool:
    """Hollow phrases are whole words between non-word characters, so removing them never creates a first-person
    word: hollow_free is only searched when lowered has one to discount."""
    if _has_first_person(lowered, words):
        runs = words if hollow_free == lowered else _word_runs(hollow_free)
        if (runs is words or _has_first_person(hollow_free, runs)) and not _says_nothing(hollow_free, runs):
            return True
    return bool(_STANDING_INSTRUCTION.match(lowered.lstrip()))


def _says_nothing(lowered: str, runs: list[str]) -> bool:
    """A first-person sentence of filler words only ("I've always wanted to do that", "I try my best"): it answers
    the other party, and tells nothing without them. A number is always something.

    Without an apostrophe the \\w runs are the words, and a run with a digit is in no word list."""
    if "'" not in lowered:
        return _EMPTY_FIRST_PERSON.issuperset(runs)
    return _DIGIT.search(lowered) is None and _EMPTY_FIRST_PERSON.issuperset(_words(lowered))


def _normalise(text: str) -> str:
    """Lower-cased, straight apostrophes, vocatives ("Thanks, Caroline!") removed.

    A vocative's name has a capital after its first character: text without one is not searched."""
    if ("," in text or " " in text or "\t" in text) and not text[1:].islower() and _VOCATIVE_NAME.search(text):
        text = _VOCATIVE.sub(" ", text)
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _has_cjk(text: str) -> bool:
    return not text.isascii() and _CJK.search(text) is not None


def _is_filler(sentence: str, hollow_free: str) -> bool:
    if _has_cjk(sentence):
        bare = _NOT_ALNUM.sub("", sentence)
        return len(bare) <= 30 and bool(_CJK_FILLER.fullmatch(bare))
    return _EMPTY_FIRST_PERSON.issuperset(_words(hollow_free))


def _forms(lowered: str) -> tuple[list[str], str]:
    """The \\w runs of a normalised sentence, and the sentence without hollow phrases: what its tests share."""
    words = _word_runs(lowered)
    return words, _hollow_free(lowered, words)


def _is_question(sentence: str, lowered: str) -> bool:
    stripped = sentence.rstrip()
    if "?" in stripped[-3:] or "？" in stripped[-3:] or stripped.startswith("¿"):
        return True
    if not stripped.isascii() and _CJK_QUESTION_END.search(stripped):
        return True
    return bool(_QUESTION_START.match(lowered.lstrip())) and not stripped.endswith((".", "!", "。", "！"))


def _well_wish_lead(words: list[str]) -> str | None:
    """The first word after the interjections: a well-wish's is one of _WELL_WISH_LEADS (the shortcut before
    _WELL_WISH, proven by tests/test_prefilter_shortcuts.py)."""
    return next((word for word in words if word not in _WELL_WISH_INTERJECTIONS), None)


def _is_reaction(lowered: str, words: list[str], hollow_free: str) -> bool:
    """A judgement of what the other said ("Those are great games!", "I love that book!", "It's so rewarding"),
    or thanks for it."""
    if hollow_free != lowered and _EMOTIVE_STANCE.search(lowered):
        return True
    if _well_wish_lead(words) in _WELL_WISH_LEADS and _WELL_WISH.match(lowered.lstrip()):
        return True
    if _EVALUATIVE_WORDS.isdisjoint(words) and _JUDGING_VERBS.isdisjoint(words):
        return False
    opening = lowered.lstrip()
    if _REACTION_OPENER.match(opening) or _PRONOUN_VERDICT.match(opening) or _GOOD_WAY.match(opening):
        return True
    return all(word in _FILLER_WORDS or word in _EVALUATIVE_WORDS for word in _words(hollow_free))


def _is_exclaimed_aside(sentence: str, words: list[str]) -> bool:
    """An exclamation that judges ("Man, Apex Legends looks tough!") and is not news told without its "I"."""
    if not sentence.rstrip().endswith("!") or not words or words[0] in _PRONOUN_DROP_LEADS:
        return False
    if words[0].endswith("ed"):
        return False
    return not (_EVALUATIVE_WORDS.isdisjoint(words) and _JUDGING_VERBS.isdisjoint(words))


def _classify_sentences(text: str) -> str:
    """Return 'personal', 'content', or the drop reason of the message's sentences.

    Content outranks every drop reason, so once a sentence is content the rest are only asked whether they are
    personal. A judging exclamation is content unless a question follows it: then the pair is a reaction."""
    kinds = set()
    aside = False
    for sentence in _SENTENCE.findall(text):
        if not sentence.strip():
            continue
        lowered = _normalise(sentence)
        words, hollow_free = _forms(lowered)
        if _is_personal(lowered, words, hollow_free):
            return "personal"
        if "content" in kinds:
            continue
        if _is_question(sentence, lowered):
            kinds.add("question")
            if aside:
                kinds.discard("aside")
                kinds.add("reaction")
        elif _is_filler(sentence, hollow_free):
            kinds.add("ack-filler")
        elif _IMPERATIVE.match(lowered.lstrip()):
            kinds.add("command")
        elif not _SECOND_PERSON_WORDS.isdisjoint(words):
            # "You should always answer in Spanish" tells the assistant how to treat the speaker: an instruction
            # ... and "Your story inspired me to start running" tells what the speaker does
            instruction = not _INSTRUCTION_WORDS.isdisjoint(words) and _INSTRUCTION_START.match(lowered.lstrip())
            kinds.add("content" if instruction or ("me" in words and _ME_TO.search(lowered)) else "other-party")
        elif _is_reaction(lowered, words, hollow_free):
            kinds.add("reaction")
        elif _is_exclaimed_aside(sentence, words):
            kinds.add("aside")
            aside = True
        else:
            kinds.add("content")
    if "aside" in kinds:
        return "content"
    for kind in ("content", "other-party", "reaction", "question", "command"):
        if kind in kinds:
            return kind
    return "ack-filler"


def _split_code(text: str) -> tuple[str, bool]:
    """Separate prose from code, logs and data; say whether there was any code."""
    had_code = False
    if "```" in text:
        text, count = _FENCE.subn("\n", text)
        had_code = count > 0
    if "\n" in text:
        lines = [line for line in text.split("\n") if line.strip()]
    else:
        lines = [text] if text.strip() else []
    if len(lines) >= 2:
        # Code is at least two lines and half of them: once the lines left cannot make that up, the rest are not
        # asked.
        needed = max(2, (len(lines) + 1) // 2)
        code = []
        unasked = len(lines)
        for line in lines:
            unasked -= 1
            if _is_code_line(line.strip()):
                code.append(line)
            elif len(code) + unasked < needed:
                break
        if len(code) >= needed:
            code_set = set(code)
            return "\n".join(line for line in lines if line not in code_set), True
    elif len(lines) == 1:
        line = lines[0]
        if _SHELL.match(line) or (len(line) >= 12 and _symbol_dense(line)) or _looks_like_json(line):
            return "", True
    return text, had_code


def _is_code_line(line: str) -> bool:
    return bool(_CODE_LINE.match(line)) or line.endswith(_CODE_LINE_ENDINGS) or _symbol_dense(line)


def _symbol_dense(line: str) -> bool:
    """The symbols are ASCII, and no byte of a multi-byte UTF-8 character is: deleting their bytes counts them."""
    sample = line.strip()[:300]
    if len(sample) < 4:
        return False
    data = sample.encode()
    return (len(data) - len(data.translate(None, _CODE_SYMBOL_BYTES))) * 6 > len(sample)


def _looks_like_json(line: str) -> bool:
    stripped = line.strip()
    return stripped[:1] in "{[" and stripped[-1:] in "}]" and '":' in stripped


def _is_emoji_only(text: str) -> bool:
    has_symbol = False
    for ch in text:
        category = unicodedata.category(ch)
        if category[0] in "LN":
            return False
        if category in ("So", "Sk") or ch in "\u200d\ufe0f":
            has_symbol = True
    return has_symbol


def _alnum_count(text: str) -> int:
    """For ASCII text, deleting the bytes of everything but letters and digits counts them without a call each."""
    if text.isascii():
        return len(text.encode().translate(None, _ASCII_NON_ALNUM))
    return sum(map(str.isalnum, text))


@lru_cache(maxsize=1)
def _previousfold(previous_user_text: str) -> str:
    """Every turn until the next user message is compared with the same previous user text."""
    return fold(previous_user_text)


def _is_echo(text: str, previous_user_text: str | None) -> bool:
    if previous_user_text:
        previous_key = _previousfold(previous_user_text)
        # A key starts with its text's first character case-folded (never to nothing): that tells most apart.
        if text.lstrip()[:1].casefold()[:1] == previous_key[:1] and fold(text) == previous_key:
            return True
    if "[" in text:
        recalled = len(_RECALL_LINE.findall(text))
        if recalled < 2:
            return False
        lines = [line for line in text.split("\n") if line.strip()]
        return recalled * 5 >= len(lines) * 3
    return False


def _noise_reason(text: str) -> str | None:
    """Shape-level noise shared by both roles: nothing left, pictures of words, bare links."""
    if not text:
        return "empty-after-clean"
    if len(text) <= 64:
        if _is_emoji_only(text):
            return "emoji-only"
        if _alnum_count(text) < 2 and not _has_cjk(text):
            return "too-short"
    if len(text) < 500 and ("://" in text or "www." in text) and _alnum_count(_URL.sub("", text)) == 0:
        return "url-only"
    return None


def _may_refuse(text: str) -> bool:
    """A refusal starts with "i", "sorry" or "as an ai" once normalised; a vocative removed from the very start
    leaves a blank there, and starts with none of those letters either."""
    return text[0].lower().startswith(("i", "s", "a"))


def _only_filler(text: str) -> bool:
    """`_classify_sentences(text) == "ack-filler"`: every sentence is filler, and none is personal or a question.
    Each sentence is first asked the question most of them fail."""
    for sentence in _SENTENCE.findall(text):
        if not sentence.strip():
            continue
        lowered = _normalise(sentence)
        words, hollow_free = _forms(lowered)
        if (
            not _is_filler(sentence, hollow_free)
            or _is_question(sentence, lowered)
            or _is_personal(lowered, words, hollow_free)
        ):
            return False
    return True


def _assistant_verdict(text: str, assistant_decision: str, previous_user_text: str | None) -> Prefiltered:
    text = text.strip()
    reason = _noise_reason(text)
    if reason:
        return _verdict(DROP, reason)
    if len(text) < 400 and _may_refuse(text) and _REFUSAL.match(_normalise(text)):
        return _verdict(DROP, "assistant-refusal")
    if _is_echo(text, previous_user_text):
        return _verdict(DROP, "echo")
    prose, had_code = _split_code(text)
    if had_code and _alnum_count(prose) < 20:
        return _verdict(DROP, "code-or-log")
    if len(text) < 80 and _only_filler(text):
        return _verdict(DROP, "ack-filler")
    return _verdict(assistant_decision, "assistant-context")


def _may_ask_recall(lowered: str) -> bool:
    for gate in _META_QUESTION_GATES:  # a loop: a generator's frames would cost more than the searches
        if gate in lowered:
            return True
    return False


def _only_recall_queries(text: str) -> bool:
    """A recall query ("do you remember my dog's name?") asks for a fact; it does not state one."""
    for sentence in _SENTENCE.findall(text):
        lowered = _normalise(sentence)
        if not sentence.strip() or _META_QUESTION.search(lowered):
            continue
        words, hollow_free = _forms(lowered)
        if _is_personal(lowered, words, hollow_free) or not (
            _is_question(sentence, lowered) or _is_filler(sentence, hollow_free)
        ):
            return False
    return True


def _user_verdict(text: str, previous_user_text: str | None) -> Prefiltered:
    stripped = text.strip()
    reason = _noise_reason(stripped)
    if reason:
        return _verdict(DROP, reason)
    if stripped.startswith("/"):
        command = _SLASH_COMMAND.match(stripped)
        if command:
            lowered = _normalise(stripped[command.end() :])
            if not _is_personal(lowered, *_forms(lowered)):
                return _verdict(DROP, "slash-command")
    if _is_echo(stripped, previous_user_text):
        return _verdict(DROP, "echo")
    if len(stripped) > _OVERSIZED:
        first_person = _first_person_count(_normalise(stripped))
        if len(stripped) > _ALWAYS_OVERSIZED or first_person * 1000 < len(stripped):
            return _verdict(DROP, "oversized-paste")
    prose, had_code = _split_code(stripped)
    if had_code:
        kind = _classify_sentences(prose) if prose.strip() else "code"
        if kind == "personal" or (kind == "content" and len(_words(prose)) >= 12):
            return _verdict(KEEP, kind)
        return _verdict(DROP, "code-or-log")
    if len(stripped) > _LONG_MESSAGE:
        opening = f" {stripped[:_LONG_MESSAGE].lower()} "
        return _verdict(KEEP, "personal" if any(mark in opening for mark in _COMMON_FIRST_PERSON) else "content")
    if (
        _may_ask_recall(stripped.lower())
        and _META_QUESTION.search(_normalise(stripped))
        and _only_recall_queries(stripped)
    ):
        return _verdict(DROP, "meta-question")
    kind = _classify_sentences(stripped)
    if kind in ("personal", "content"):
        return _verdict(KEEP, kind)
    return _verdict(DROP, kind)


def prefilter(
    text: str, role: str, *, assistant_decision: str = CONTEXT, previous_user_text: str | None = None
) -> Prefiltered:
    """Judge one cleaned message (one part of a queued batch) on its own."""
    if role == "assistant":
        return _assistant_verdict(text, assistant_decision, previous_user_text)
    return _user_verdict(text, previous_user_text)
