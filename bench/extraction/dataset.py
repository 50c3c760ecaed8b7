"""The labelled conversations of the extraction benchmark (conversations.json), read and checked.

See README.md beside this file for how they are labelled. Loading fails loudly on a malformed
label: a typo in a kind would otherwise score as a silent miss.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

DATA_PATH = Path(__file__).resolve().parent / "conversations.json"

Split = Literal["dev", "heldout"]
SPLITS: tuple[Split, ...] = ("dev", "heldout")
ITEM_KINDS = ("fact", "preference", "procedure", "episode", "open_item")
CATEGORIES = (
    "profile",
    "preferences",
    "procedures",
    "decisions",
    "commitments",
    "corrections",
    "hypotheticals",
    "reported_speech",
    "small_talk",
    "instruction_like",
)


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Expectation:
    """One labelled memory: a kind (or kinds) and the key values its content must hold."""

    kinds: tuple[str, ...]
    match: tuple[str, ...]
    category: str

    def matches(self, kind: str, content: str) -> bool:
        """Say whether a memory of this kind and content is the labelled one."""
        if kind not in self.kinds:
            return False
        text = normalise(content)
        return all(_pattern(part).search(text) for part in self.match)

    @property
    def label(self) -> str:
        return f"{'/'.join(self.kinds)}: {' + '.join(self.match)}"


@dataclass(frozen=True)
class Conversation:
    id: str
    split: Split
    language: str
    category: str
    sessions: tuple[tuple[Turn, ...], ...]
    must_store: tuple[Expectation, ...]
    must_not_store: tuple[Expectation, ...]
    summary_excludes: tuple[str, ...]


def normalise(text: str) -> str:
    """Casefold, strip accents, straighten apostrophes and collapse spaces."""
    decomposed = unicodedata.normalize("NFKD", text.replace("’", "'"))
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def contains(text: str, value: str) -> bool:
    """Say whether `value` appears in `text` as whole words, compared like labels."""
    return _pattern(value).search(normalise(text)) is not None


def load_conversations(
    path: Path = DATA_PATH, *, splits: Sequence[str] = SPLITS, ids: Sequence[str] = ()
) -> list[Conversation]:
    """Read the conversations of the given splits (or only the given ids), checking every label."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations = [_conversation(entry) for entry in raw["conversations"]]
    seen: set[str] = set()
    for conversation in conversations:
        if conversation.id in seen:
            raise ValueError(f"conversation id {conversation.id} is used twice")
        seen.add(conversation.id)
    if ids:
        unknown = set(ids) - seen
        if unknown:
            raise ValueError(f"unknown conversation ids: {', '.join(sorted(unknown))}")
        return [c for c in conversations if c.id in ids]
    return [c for c in conversations if c.split in splits]


def _pattern(value: str) -> re.Pattern[str]:
    alternatives = []
    for alternative in value.split("|"):
        word = normalise(alternative)
        is_prefix = word.endswith("*")
        body = re.escape(word.rstrip("*"))
        alternatives.append(rf"(?<!\w){body}" + ("" if is_prefix else r"(?!\w)"))
    return re.compile("|".join(alternatives))


def _conversation(entry: dict[str, Any]) -> Conversation:
    where = entry.get("id", "?")
    if entry["split"] not in SPLITS:
        raise ValueError(f"{where}: split must be one of {SPLITS}")
    category = _category(entry["category"], where)
    sessions = tuple(tuple(_turn(turn, where) for turn in session) for session in entry["sessions"])
    if not sessions or not all(sessions):
        raise ValueError(f"{where}: every session needs at least one turn")
    return Conversation(
        id=entry["id"],
        split=entry["split"],
        language=entry["language"],
        category=category,
        sessions=sessions,
        must_store=tuple(_expectation(e, category, where) for e in entry["must_store"]),
        must_not_store=tuple(
            _expectation(e, category, where, default_kinds=ITEM_KINDS)
            for e in entry["must_not_store"]
        ),
        summary_excludes=tuple(entry.get("summary_excludes", ())),
    )


def _turn(raw: dict[str, str], where: str) -> Turn:
    if len(raw) != 1 or not set(raw) <= {"user", "assistant"}:
        raise ValueError(f"{where}: a turn is {{'user': text}} or {{'assistant': text}}")
    [(role, content)] = raw.items()
    return Turn(role="user" if role == "user" else "assistant", content=content)


def _expectation(
    raw: dict[str, Any], category: str, where: str, *, default_kinds: tuple[str, ...] = ()
) -> Expectation:
    kind = raw.get("kind", list(default_kinds))
    kinds = tuple([kind] if isinstance(kind, str) else kind)
    if not kinds or not set(kinds) <= set(ITEM_KINDS):
        raise ValueError(f"{where}: kinds {kinds} must be among {ITEM_KINDS}")
    match = raw["match"]
    parts = tuple([match] if isinstance(match, str) else match)
    if not parts or not all(part.strip("*| ") for part in parts):
        raise ValueError(f"{where}: empty match")
    return Expectation(
        kinds=kinds, match=parts, category=_category(raw.get("category", category), where)
    )


def _category(category: str, where: str) -> str:
    if category not in CATEGORIES:
        raise ValueError(f"{where}: unknown category {category}")
    return category
