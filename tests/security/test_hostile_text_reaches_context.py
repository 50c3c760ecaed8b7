"""Hostile text written through the real services comes back in the context, fenced and intact.

Long runs of spaces, backslashes, digits or letters (issue 26) once made one session message
take 20 s to answer. Whatever the runs, writing such text as a memory and as a session message
and then assembling the context must answer, and the text must come back whole, inside its
fence, neutralised as `fence_untrusted` neutralises any recalled text.
"""

from __future__ import annotations

import itertools

from django.conf import settings as django_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryhub.actors import Actor
from memoryhub.fencing import FENCE_CLOSE, FENCE_TAG, neutralise
from memoryhub.models import ActorType, Channel
from memoryhub.queries.context import MAX_BUDGET_TOKENS, assemble_context
from memoryhub.services.access import flush_memory_access
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.sessions import add_message, start_session
from tests import factories
from tests.security.test_linear_patterns import FILLERS, PREFIXES

AGENT_ACTOR = Actor(ActorType.AGENT, "agent-1", Channel.API, label="assistant")
_modes = itertools.count(1)


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    """A plausible sentence (or none), then runs of one or two hostile fillers, up to the limit."""
    prefix = draw(st.sampled_from(PREFIXES))
    fillers = draw(st.lists(st.sampled_from(FILLERS), min_size=1, max_size=2))
    limit = django_settings.MEMORYHUB_MAX_CONTENT_BYTES
    size = draw(st.sampled_from((limit // 8, limit // 2, limit)))
    # The services refuse blank text; a last word keeps every example storable.
    room = (size - len(prefix.encode()) - len(" end")) // len(fillers)
    return prefix + "".join(filler * (room // len(filler.encode())) for filler in fillers) + " end"


def _folded(text: str) -> str:
    return " ".join(neutralise(text).split())


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stored=hostile_text(), said=hostile_text())
def test_hostile_text_written_and_said_comes_back_fenced_and_intact(
    user, workspace, embedder, stored, said
):
    agent, _ = factories.make_agent(workspace)
    mode = factories.mode_of(user, f"hostile-{next(_modes)}")
    remember_many(
        user=user,
        mode=mode,
        items=[NewMemory(kind="fact", content=stored, importance="critical")],
        actor=AGENT_ACTOR,
        embedder=embedder,
    )
    session = start_session(user=user, mode=mode, actor=AGENT_ACTOR, agent=agent)
    add_message(session=session, role="user", content=said, actor=AGENT_ACTOR, embedder=embedder)

    bundle = assemble_context(
        user=user,
        mode=mode,
        agent=agent,
        message="What do you know about me?",
        actor=AGENT_ACTOR,
        embedder=embedder,
        session=session,
        budget_tokens=MAX_BUDGET_TOKENS,
    )
    flush_memory_access()

    fenced = {block.key: block.text for block in bundle.blocks if not block.trusted}
    assert _folded(stored) in fenced["profile"]
    assert _folded(said) in fenced["thread_recent"]
    for text in fenced.values():
        assert text.count(f"<{FENCE_TAG}") == 1
        assert text.endswith(FENCE_CLOSE)
