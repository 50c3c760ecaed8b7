"""Knowledge documents split into passages that fit the embedding model."""

from __future__ import annotations

from memoryhub.knowledge.chunking import chunk_text
from memoryhub.tokens import count_tokens


def test_a_short_document_is_one_passage():
    assert chunk_text("Q: When do you open?\n\nA: At nine.") == [
        "Q: When do you open?\n\nA: At nine."
    ]


def test_a_markdown_heading_starts_a_new_passage():
    text = "# Opening hours\n\nWe open at nine.\n\n# Returns\n\nReturns are free for 30 days."
    assert chunk_text(text) == [
        "# Opening hours\n\nWe open at nine.",
        "# Returns\n\nReturns are free for 30 days.",
    ]


def test_long_text_is_split_into_passages_within_the_limit_without_losing_words():
    sentence = "Orders placed before noon ship the same day from the Lyon warehouse."
    text = "\n\n".join(" ".join([sentence] * 6) for _ in range(5))
    chunks = chunk_text(text, max_tokens=60)
    assert len(chunks) > 5
    assert all(count_tokens(chunk) <= 60 for chunk in chunks)
    assert " ".join(" ".join(chunks).split()) == " ".join(text.split())


def test_blank_text_has_no_passages():
    assert chunk_text(" \n\n \r\n") == []
