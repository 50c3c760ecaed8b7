"""What makes a user's sentence something other than a plain statement about themself.

Hedges ("maybe", "I think", conditionals), reported speech ("my sister thinks", "he said"),
frames (quoted, translated or made-up text) and negations. The offline extractor stores none
of these: a wrong memory costs more than a missed one.
"""

from __future__ import annotations

from memoryhub import text_patterns

from .rules import APOS

_POLITENESS = text_patterns.compile(
    rf"s{APOS}il (?:te|vous) pla[iî]t|si possible|if possible|if you can|if you don{APOS}t mind",
    text_patterns.IGNORECASE,
)
# "Unless" qualifies rather than hedges: "no bullet points unless necessary" is a preference.
_HEDGE = text_patterns.compile(
    r"\b(?:might|maybe|perhaps|probably|possibly|could|would|if|whether|someday|one day"
    r"|thinking (?:about|of)|considering|wondering|not sure|unsure|guess|think|thinks|believe"
    r"|suppose|imagine|hope|wish|pretend|hypothetically|let's say|what if|in theory|kidding"
    r"|joking|try to|try and|used to|said|says|told|tells|claims|claimed|heard|should"
    r"|peut-être|peut être|probablement|sans doute|éventuellement|si|s'il|s'ils|pense|pensais"
    r"|crois|suppose|imagine|envisage|songe|il se peut|pas sûre?|hésite|un jour|imaginons"
    r"|supposons|disons|rêve|essayer|tenter|dit|disait|raconte|devrais|devrait)\b"
    r"|\b(?:je|j'|tu|il|elle|on|nous|vous)\s*\w+(?:rais|rait|rions|riez|raient)\b"
    r"|^\s*(?:when|whenever|quand|lorsqu)",
    text_patterns.IGNORECASE,
)
# A hedge opening the sentence covers all of it: "I think I live in Paris and I work at Acme".
_LEADING_HEDGE = text_patterns.compile(
    r"^\W*(?:(?:oh|ok|okay|well|so|and|bon|alors|et)[,!]?\s+)?(?:i think|i guess|i suppose"
    r"|i believe|i feel like|i wonder|maybe|perhaps|probably|possibly|hypothetically|suppose"
    r"|imagine|let's say|what if|if|in theory|not sure|je pense|je crois|je suppose|peut-être"
    r"|peut être|probablement|imaginons|supposons|si|s'il)\b",
    text_patterns.IGNORECASE,
)
# Words before a statement that make it someone else's text: "Translate: my name is Bond".
_FRAME = text_patterns.compile(
    r"\b(?:translate|translation|draft|write|rewrite|story|novel|example|for instance|character"
    r"|roleplay|role-play|saying|proofread|traduis|traduire|traduction|rédige|écris|histoire"
    r"|roman|exemple|personnage|disant|relis)\b",
    text_patterns.IGNORECASE,
)
_CLAUSE_MARK = text_patterns.compile(r"[,:]")
# "may" is a hedge, "May 3" a date.
_MAY = text_patterns.compile(r"\bmay\b")
_NEGATION = text_patterns.compile(
    r"\b(?:not|never|no longer|don't|doesn't|didn't|do not|does not|did not|won't|can't|cannot"
    r"|isn't|wasn't|aren't|ne|pas|plus|jamais)\b|n't\b|\bn'",
    text_patterns.IGNORECASE,
)


def straight_apostrophes(text: str) -> str:
    """Curly apostrophes made straight; same length, so match offsets stay valid."""
    return text.replace("’", "'")


def has_hedge(text: str) -> bool:
    """Say whether the text holds a hedge, a condition or reported speech anywhere."""
    text = _POLITENESS.sub(" ", straight_apostrophes(text))
    return _HEDGE.search(text) is not None or _MAY.search(text) is not None


def has_leading_hedge(sentence: str) -> bool:
    """Say whether the sentence opens with a hedge that covers every clause of it."""
    return _LEADING_HEDGE.match(straight_apostrophes(sentence)) is not None


def is_hedged(segment: str, match: text_patterns.Match[str]) -> bool:
    """Say whether the clause around a rule's match is hedged (the trigger itself aside)."""
    # The trigger may hold a hedge word ("I would prefer"); only the rest of the clause counts.
    value_start = match.start("value")
    masked = segment[: match.start()] + " " * (value_start - match.start()) + segment[value_start:]
    return has_hedge(masked)


def is_framed(prefix: str) -> bool:
    """Say whether text after `prefix` is quoted, translated or made up, not the user's own."""
    return is_inside_quote(prefix) or _FRAME.search(prefix) is not None


def is_inside_quote(prefix: str) -> bool:
    """Say whether a quotation opened in `prefix` is still open (the text after it is quoted)."""
    return (
        prefix.count('"') % 2 == 1
        or prefix.count("“") > prefix.count("”")
        or prefix.count("«") > prefix.count("»")
    )


def has_negation(text: str) -> bool:
    """Say whether the text negates anything ("not", "never", "don't", "ne … pas")."""
    return _NEGATION.search(straight_apostrophes(text)) is not None


def is_negated(segment: str, match: text_patterns.Match[str]) -> bool:
    """Say whether the clause before a rule's trigger negates it ("I don't live in …")."""
    # Only the clause the trigger is in: "Not Alice, my name is Alex" is not a negation.
    prefix = _CLAUSE_MARK.split(segment[: match.start()])[-1]
    return _NEGATION.search(straight_apostrophes(prefix)) is not None
