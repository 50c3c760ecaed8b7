"""Template filters that put why an answer was captured into words; they format, never query."""

from __future__ import annotations

from django import template

from memoryhub.knowledge.scoring import MEMORY_ID_NOT_IN_CONTEXT, PAST_DATE_AS_UPCOMING

register = template.Library()

SIGNAL_WORDS: dict[str, str] = {
    "retrieval": "what was found (memory, knowledge) did not fit the question",
    "policy": "the agent held back for a policy reason",
    "completeness": "the answer left part of the question open",
    "memory": "the user's memory did not back the answer",
}
FINDING_WORDS: dict[str, str] = {
    PAST_DATE_AS_UPCOMING: "it called a date that has passed upcoming",
    MEMORY_ID_NOT_IN_CONTEXT: "it cited a memory that was not in its context",
}


@register.filter
def signal_words(name: str) -> str:
    """What a low signal says about the answer ("retrieval" → "what was found … did not fit")."""
    return SIGNAL_WORDS.get(name, name.replace("_", " "))


@register.filter
def finding_words(code: str) -> str:
    """A hallucination check's finding in words."""
    return FINDING_WORDS.get(code, code.replace("_", " "))
