"""Read the form of a search query: does it ask for a stated fact, or for a guess?

"Would Caroline pursue writing as a career?", "What might John's degree be in?": no memory
states the answer; it is inferred from what the person said about themselves, often on
several days, so recall lifts no neighbour for such a query (recall.py). "Could you remind
me…" and "would you…" are requests, not guesses. Pure Python: no database, no keys; English
only (a French query reads as asking for a fact).
"""

from __future__ import annotations

from memoryhub import text_patterns

_GUESS = text_patterns.compile(
    r"\b(?:would|could|might)\b(?!\s+you\b)|\b(?:likely|probably|possibly)\b",
    text_patterns.IGNORECASE,
)


def is_speculative(query: str) -> bool:
    """Whether the query asks for a guess (would, might, likely) rather than a stated fact."""
    return bool(_GUESS.search(query))
