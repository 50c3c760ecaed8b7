"""Split knowledge documents into passages small enough to embed and to inject whole."""

from __future__ import annotations

from collections.abc import Iterator

from memoryhub import text_patterns
from memoryhub.tokens import count_tokens

# MiniLM reads at most 256 word pieces; the document title is embedded with each passage.
MAX_CHUNK_TOKENS = 180

_BLANK_LINES = text_patterns.compile(r"\n\s*\n")
_HEADING = text_patterns.compile(r"^#{1,6}\s")
_SENTENCE_END = text_patterns.compile(r"(?<=[.!?])\s+")


def _sections(text: str) -> Iterator[list[str]]:
    """Paragraphs grouped by Markdown heading: a heading always starts a new passage."""
    section: list[str] = []
    for paragraph in _BLANK_LINES.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if _HEADING.match(paragraph) and section:
            yield section
            section = []
        section.append(paragraph)
    if section:
        yield section


def _pieces(paragraph: str, max_tokens: int) -> Iterator[str]:
    """The paragraph whole if it fits, else its sentences, else runs of words."""
    if count_tokens(paragraph) <= max_tokens:
        yield paragraph
        return
    for sentence in _SENTENCE_END.split(paragraph):
        if count_tokens(sentence) <= max_tokens:
            yield sentence
            continue
        words: list[str] = []
        for word in sentence.split():
            if words and count_tokens(" ".join([*words, word])) > max_tokens:
                yield " ".join(words)
                words = []
            words.append(word)
        if words:
            yield " ".join(words)


def chunk_text(text: str, *, max_tokens: int = MAX_CHUNK_TOKENS) -> list[str]:
    """Split text into passages of at most `max_tokens`, packing whole paragraphs when they fit."""
    chunks: list[str] = []
    for section in _sections(text):
        current: list[str] = []
        for paragraph in section:
            for piece in _pieces(paragraph, max_tokens):
                if current and count_tokens("\n\n".join([*current, piece])) > max_tokens:
                    chunks.append("\n\n".join(current))
                    current = []
                current.append(piece)
        if current:
            chunks.append("\n\n".join(current))
    return chunks
