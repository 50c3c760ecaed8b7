"""Items from the learned decision: sentences the rules left, kept by the model, worded about the user.

The model (`statements.py`) says whether a sentence is durable and its kind; this module turns a
kept sentence into an item: "I've been running every Sunday since May" -> "The user has been
running every Sunday since May." The whole sentence is kept, negations and reasons included,
so nothing it said is inverted or lost; what cannot be rewritten safely is quoted as said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryhub import text_patterns
from memoryhub.embeddings import Embedder

from .base import EventType, ExtractedItem, ItemKind, TranscriptMessage
from .dates import find_date
from .rules import Language, to_third_person
from .statements import StatementModel, opens_first_person

_DUE_SUFFIX = {"en": " (due {date})", "fr": " (échéance : {date})"}
# Kinds of the confidence ladder that a first-person statement declares.
_DECLARED_KINDS = frozenset({"fact", "preference"})
_EVENT_TYPES: dict[str, EventType] = {"episode": "event", "open_item": "commitment"}

# "j'" is glued to its verb: "j'ai", "j'habite".
_FRENCH = text_patterns.compile(
    r"(?<!\w)(?:j['’]|(?:je|moi|mon|ma|mes|nous|suis|est|les|des|une|pour|avec|dans|c['’]est"
    r"|pas|que|qui|et|le|la|du|au|aux|mais|très|aussi|depuis|chez)(?!\w))",
    text_patterns.IGNORECASE,
)
_ENGLISH = text_patterns.compile(
    r"(?<!\w)(?:i|i['’]m|i['’]ve|my|me|we|the|and|is|are|to|of|for|with|in|on|at|but|have"
    r"|been|was|since|every|this|that)(?!\w)",
    text_patterns.IGNORECASE,
)
# "I'm", "I have", "My …": the subject the sentence opens with, and its third-person form.
_EN_SUBJECT = text_patterns.compile(
    r"\A(?:(?:so|and|but|well|oh|also|actually|honestly|anyway|anyways|yeah|yes|yep|ok|okay"
    r"|wow|ah|aww?|hey|hi|hello|um|sure|thanks|totally|absolutely|definitely)[,!.]?\s++)*+"
    r"(?P<subject>i['’]m|i am|i['’]ve|i have|i['’]ll|i will|i['’]d|i was|i|my|we['’]re|we)\b",
    text_patterns.IGNORECASE,
)
_EN_SUBJECTS = {
    "i'm": "The user is",
    "i am": "The user is",
    "i've": "The user has",
    "i have": "The user has",
    "i'll": "The user will",
    "i will": "The user will",
    "i'd": "The user would",
    "i was": "The user was",
    "my": "The user's",
    "we're": "The user and others are",
    "we": "The user and others",
}
_EN_VERB = text_patterns.compile(
    r"\A\s++(?P<adverbs>(?:(?:really|just|also|always|usually|often|still|never|recently|finally"
    r"|actually|sometimes|mostly|only|already|totally|definitely|absolutely)\s++){0,2})"
    r"(?P<verb>[a-z]{1,40}+)(?P<tail>n['’]t)?\b",
    text_patterns.IGNORECASE,
)
_EN_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "don": "doesn"}
_EN_UNCHANGED = frozenset(
    (
        "can",
        "could",
        "will",
        "would",
        "should",
        "must",
        "might",
        "may",
        "shall",
        "was",
        "did",
        "had",
    )
)
_FR_SUBJECT = text_patterns.compile(
    r"\A(?:(?:alors|et|mais|bon|bref|sinon|oui|ouais|salut|merci|donc|du coup|en fait)[,!.]?\s++)*+"
    r"(?P<subject>je suis|j['’]ai|je vais|je dois|je fais|je peux|je veux|je)\b",
    text_patterns.IGNORECASE,
)
_FR_SUBJECTS = {
    "je suis": "L'utilisateur est",
    "j'ai": "L'utilisateur a",
    "je vais": "L'utilisateur va",
    "je dois": "L'utilisateur doit",
    "je fais": "L'utilisateur fait",
    "je peux": "L'utilisateur peut",
    "je veux": "L'utilisateur veut",
}
# After a bare "je", a present tense that reads the same in the third person: "je travaille".
_FR_SAME_VERB = text_patterns.compile(
    r"\A\s++(?:ne\s++|n['’])?(?!ne\b)[a-zà-ÿ]{0,40}e\b", text_patterns.IGNORECASE
)
# A state of the moment ("tired today", "je vais bien") is no fact or taste to keep.
_TRANSIENT = text_patterns.compile(
    r"(?<!\w)(?:today|tonight|right now|at the moment|this morning|this afternoon|this evening"
    r"|aujourd['’]hui|ce soir|ce matin|en ce moment|bien,? merci|fine,? thanks)(?!\w)",
    text_patterns.IGNORECASE,
)
_QUOTED = {"en": "The user said: “{text}”", "fr": "L'utilisateur a dit : « {text} »"}


@dataclass(frozen=True)
class Candidate:
    """A user sentence no rule took, which the model may keep."""

    text: str
    quote: str
    message: TranscriptMessage
    is_correction: bool


def learned_items(
    candidates: Sequence[Candidate], *, embedder: Embedder, model: StatementModel
) -> list[ExtractedItem]:
    """The items of the candidates the model keeps, in order; one batch of embeddings.

    Raises ValueError when `embedder` is not the embedding model the weights were trained on
    (another model's vectors would be read as if they were its own).
    """
    if not candidates:
        return []
    if embedder.name != model.embedding_model:
        raise ValueError(
            f"the statement model reads {model.embedding_model} vectors, not {embedder.name}"
        )
    texts = [candidate.text for candidate in candidates]
    # A sentence said twice is embedded once.
    distinct = list(dict.fromkeys(texts))
    vectors = dict(zip(distinct, embedder.embed(distinct), strict=True))
    decisions = model.decide([vectors[text] for text in texts], texts)
    return [
        _build(candidate, decision.kind)
        for candidate, decision in zip(candidates, decisions, strict=True)
        if model.keeps(decision) and not _is_transient(candidate.text, decision.kind)
    ]


def _is_transient(text: str, kind: ItemKind) -> bool:
    return kind in _DECLARED_KINDS and _TRANSIENT.search(text) is not None


def _build(candidate: Candidate, kind: ItemKind) -> ExtractedItem:
    language = language_of(candidate.text)
    reference = candidate.message.created_at.date()
    content = about_the_user(candidate.text, language)
    due = find_date(candidate.text, reference) if kind == "open_item" else None
    if due is not None and due.is_relative:
        content = content.rstrip(".") + _DUE_SUFFIX[language].format(date=due.date.isoformat())
    return ExtractedItem(
        kind=kind,
        content=content if content.endswith((".", "!", "”", "»")) else content + ".",
        quote=candidate.quote,
        message_ids=(candidate.message.id,),
        event_type=_EVENT_TYPES.get(kind),
        event_date=reference if kind == "episode" else None,
        due_date=due.date if due is not None else None,
        # Said outright, about themself, in the first person: the user's own word.
        is_declared=kind in _DECLARED_KINDS and opens_first_person(candidate.text),
        is_correction=candidate.is_correction,
    )


def language_of(text: str) -> Language:
    """French when more French function words than English ones, else English."""
    french = len(_FRENCH.findall(text))
    return "fr" if french > len(_ENGLISH.findall(text)) else "en"


def about_the_user(text: str, language: Language) -> str:
    """The sentence about "the user": its subject rewritten, else the sentence quoted."""
    text = " ".join(text.split()).rstrip(" .!")
    if language == "fr":
        return _about_the_user_fr(text)
    match = _EN_SUBJECT.match(text)
    if match is None:
        return _QUOTED["en"].format(text=text)
    subject = match["subject"].casefold().replace("’", "'")
    rest = text[match.end() :]
    if subject == "i":
        rest = _agree(rest)
        opening = "The user"
    else:
        opening = _EN_SUBJECTS[subject]
    return opening + to_third_person(rest, "en")


def _agree(rest: str) -> str:
    """ "I go" -> "goes", "I really love" -> "really loves", "I don't" -> "doesn't"."""
    verb = _EN_VERB.match(rest)
    if verb is None:
        return rest
    word = verb["verb"]
    lowered = word.casefold()
    if lowered in _EN_UNCHANGED or lowered.endswith("ed"):
        agreed = word
    elif lowered in _EN_IRREGULAR:
        agreed = _EN_IRREGULAR[lowered]
    elif lowered.endswith(("s", "sh", "ch", "x", "z", "o")):
        agreed = word + "es"
    elif lowered.endswith("y") and lowered[-2:-1] not in "aeiou":
        agreed = word[:-1] + "ies"
    else:
        agreed = word + "s"
    return f" {verb['adverbs']}{agreed}{verb['tail'] or ''}{rest[verb.end() :]}"


def _about_the_user_fr(text: str) -> str:
    match = _FR_SUBJECT.match(text)
    if match is None:
        return _QUOTED["fr"].format(text=text)
    subject = match["subject"].casefold().replace("’", "'")
    rest = text[match.end() :]
    if subject in _FR_SUBJECTS:
        return _FR_SUBJECTS[subject] + to_third_person(rest, "fr")
    if _FR_SAME_VERB.match(rest):
        return "L'utilisateur" + to_third_person(rest, "fr")
    return _QUOTED["fr"].format(text=text)
