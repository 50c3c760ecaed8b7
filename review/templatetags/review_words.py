"""Template filters that put why an answer was captured into words; they format, never query."""

from __future__ import annotations

from django import template
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from memoryhub.knowledge.scoring import MEMORY_ID_NOT_IN_CONTEXT, PAST_DATE_AS_UPCOMING

register = template.Library()

# A confidence signal's name, as the queue shows it.
SIGNAL_NAMES: dict[str, str | Promise] = {
    "retrieval": _("retrieval"),
    "policy": _("policy"),
    "completeness": _("completeness"),
    "memory": _("memory"),
}
SIGNAL_WORDS: dict[str, str | Promise] = {
    "retrieval": _("what was found (memory, knowledge) did not fit the question"),
    "policy": _("the agent held back for a policy reason"),
    "completeness": _("the answer left part of the question open"),
    "memory": _("the user's memory did not back the answer"),
}
FINDING_WORDS: dict[str, str | Promise] = {
    PAST_DATE_AS_UPCOMING: _("it called a date that has passed upcoming"),
    MEMORY_ID_NOT_IN_CONTEXT: _("it cited a memory that was not in its context"),
}


@register.filter
def signal_name(name: str) -> str:
    """A signal's name in the reader's language ("retrieval" → « recherche »)."""
    return str(SIGNAL_NAMES.get(name, name.replace("_", " ")))


@register.filter
def signal_words(name: str) -> str:
    """What a low signal says about the answer ("retrieval" → "what was found … did not fit")."""
    return str(SIGNAL_WORDS.get(name, name.replace("_", " ")))


@register.filter
def finding_words(code: str) -> str:
    """A hallucination check's finding in words."""
    return str(FINDING_WORDS.get(code, code.replace("_", " ")))
