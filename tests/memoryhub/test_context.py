"""Context assembly (queries/context.py): layers, fencing, thread recall, budget, audit, queries."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryhub.actors import Actor
from memoryhub.errors import ContentTooLargeError, InvalidInputError, NotFoundError
from memoryhub.fencing import FENCE_CLOSE, FENCE_TAG
from memoryhub.models import ActorType, AuditEntry, Channel, Memory
from memoryhub.queries.context import assemble_context
from memoryhub.services.access import flush_memory_access
from memoryhub.services.compaction import compact_session
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.sessions import add_message, put_working_memory, start_session
from memoryhub.vector_search import forget_own_index
from tests import factories
from tests.memoryhub.test_fencing import adversarial_item

AGENT_ACTOR = Actor(ActorType.AGENT, "agent-1", Channel.API, label="assistant")


@pytest.fixture(autouse=True)
def _empty_access_buffer(db):
    flush_memory_access()
    yield
    flush_memory_access()


@pytest.fixture
def agent(workspace):
    agent, _ = factories.make_agent(workspace)
    agent.persona = "You are Pip, a cheerful travel assistant."
    agent.save(update_fields=["persona"])
    return agent


@pytest.fixture
def session(user, personal, agent):
    return start_session(user=user, mode=personal, actor=AGENT_ACTOR, agent=agent)


def _remember(user, mode, embedder, *items):
    return remember_many(
        user=user, mode=mode, items=list(items), actor=AGENT_ACTOR, embedder=embedder
    )


def _say(session, content, embedder, role="user"):
    return add_message(
        session=session, role=role, content=content, actor=AGENT_ACTOR, embedder=embedder
    ).message


def _context(user, mode, agent, message, embedder, **kwargs):
    return assemble_context(
        user=user,
        mode=mode,
        agent=agent,
        message=message,
        actor=AGENT_ACTOR,
        embedder=embedder,
        **kwargs,
    )


def _blocks(bundle):
    return {block.key: block for block in bundle.blocks}


def _canonical(text):
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def test_layers_come_in_order_and_only_rules_date_persona_and_message_speak_with_authority(
    user, personal, agent, embedder
):
    _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="preference", content="Alice prefers window seats."),
        NewMemory(kind="open_item", content="Book the Lisbon hotel."),
        NewMemory(kind="session_summary", content="Planned a trip to Lisbon in May."),
        NewMemory(kind="episode", content="Alice flew to Lisbon with her brother in 2022."),
    )
    bundle = _context(user, personal, agent, "Any tips for my Lisbon flight?", embedder)
    keys = [block.key for block in bundle.blocks]
    assert keys == [
        "platform_rules",
        "date",
        "persona",
        "profile",
        "recent_sessions",
        "open_items",
        "memories",
        "message",
    ]
    assert [block.layer for block in bundle.blocks] == sorted(b.layer for b in bundle.blocks)
    for block in bundle.blocks:
        if block.key in {"platform_rules", "date", "persona"}:
            assert (block.role, block.trusted) == ("system", True)
        elif block.key == "message":
            assert (block.role, block.trusted, block.text) == (
                "user",
                True,
                "Any tips for my Lisbon flight?",
            )
        else:
            assert (block.role, block.trusted) == ("user", False)
            assert f'<{FENCE_TAG} source="' in block.text
            assert block.text.endswith(FENCE_CLOSE)
    blocks = _blocks(bundle)
    assert blocks["platform_rules"].text == user.workspace.platform_rules
    assert blocks["persona"].text == "You are Pip, a cheerful travel assistant."
    assert "Alice flew to Lisbon" in blocks["memories"].text
    assert bundle.total_tokens == sum(block.tokens for block in bundle.blocks)
    assert bundle.dropped == ()


def test_each_memory_is_shown_once_and_its_block_names_it(user, personal, agent, embedder):
    preference, episode = _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="preference", content="Alice loves Lisbon's custard tarts."),
        NewMemory(kind="episode", content="Alice ate custard tarts in Belem."),
    )
    bundle = _context(user, personal, agent, "Where can I get custard tarts?", embedder)
    blocks = _blocks(bundle)
    assert blocks["profile"].memory_ids == (preference.id,)
    assert blocks["memories"].memory_ids == (episode.id,)
    assert sum("custard tarts" in block.text for block in bundle.blocks) == 3  # 2 + the message


def test_candidates_and_other_users_memories_never_reach_the_context(
    user, other_user, personal, agent, embedder
):
    _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="fact", content="Alice might own a kayak.", confidence="candidate"),
    )
    other_mode = factories.mode_of(other_user)
    _remember(other_user, other_mode, embedder, NewMemory(kind="fact", content="Bob owns a kayak."))
    bundle = _context(user, personal, agent, "Do I own a kayak?", embedder)
    assert all("kayak" not in block.text for block in bundle.blocks if block.key != "message")


def test_an_irrelevant_memory_stays_out_precision_first(user, personal, agent, embedder):
    _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="episode", content="Alice repaired the garden fence on Sunday."),
    )
    bundle = _context(user, personal, agent, "Explain quantum tunnelling briefly.", embedder)
    assert "memories" not in _blocks(bundle)


class _RecordingEmbedder:
    """The real embedder, noting each text it embeds."""

    def __init__(self, inner):
        self.inner, self.name, self.dimensions, self.texts = inner, inner.name, inner.dimensions, []

    def embed(self, texts):
        self.texts += texts
        return self.inner.embed(texts)

    def embed_query(self, text):
        self.texts.append(text)
        return self.inner.embed_query(text)


def test_a_speaker_the_message_names_brings_their_own_memories(user, personal, agent, embedder):
    alice, _bob = _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="episode", content="Alice: I go sailing every weekend."),
        NewMemory(kind="episode", content="Bob: I go sailing every weekend too."),
    )
    recording = _RecordingEmbedder(embedder)
    bundle = _context(user, personal, agent, "What does Alice do on weekends?", recording)
    # Embedded once, with the speaker's name taken out (matched by who said each memory).
    assert recording.texts == ["What does someone do on weekends?"]
    assert _blocks(bundle)["memories"].memory_ids[0] == alice.id
    # A message naming no speaker is embedded once.
    recording.texts.clear()
    _context(user, personal, agent, "What does Carol do on weekends?", recording)
    assert recording.texts == ["What does Carol do on weekends?"]


def test_later_turns_bring_only_critical_profile_items_and_no_session_summaries(
    user, personal, agent, session, embedder
):
    _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="fact", content="Alice is allergic to penicillin.", importance="critical"),
        NewMemory(kind="preference", content="Alice prefers aisle seats."),
        NewMemory(kind="session_summary", content="Talked about a dentist appointment."),
    )
    start = _context(user, personal, agent, "Hello!", embedder, session=session)
    assert {"profile", "recent_sessions"} <= set(_blocks(start))
    assert "aisle seats" in _blocks(start)["profile"].text
    _say(session, "Hello!", embedder)
    _say(session, "Hi Alice, how can I help?", embedder, role="assistant")
    later = _context(user, personal, agent, "What should I pack?", embedder, session=session)
    blocks = _blocks(later)
    assert "penicillin" in blocks["profile"].text
    assert "aisle seats" not in blocks["profile"].text
    assert "recent_sessions" not in blocks


def test_the_thread_brings_its_last_messages_and_recalls_older_ones_with_neighbours(
    user, personal, agent, session, embedder
):
    agent.last_messages = 2
    agent.recall_top_k = 1
    agent.recall_message_range = 1
    agent.save()
    lines = [
        "I am planning a trip to Japan.",
        "Great, when are you going?",
        "My dog Biscuit will stay with my neighbour Tom.",
        "Good idea, Tom sounds reliable.",
        "I also need a rail pass.",
        "The seven-day pass is a good deal.",
        "Which cities should I visit?",
        "Kyoto and Osaka are lovely.",
    ]
    for n, line in enumerate(lines):
        _say(session, line, embedder, role="user" if n % 2 == 0 else "assistant")
    question = "Who is looking after my dog while I travel?"
    _say(session, question, embedder)  # The agent stored the current message first.
    bundle = _context(user, personal, agent, question, embedder, session=session)
    blocks = _blocks(bundle)
    recent = blocks["thread_recent"].text
    assert "user: Which cities should I visit?" in recent
    assert "assistant: Kyoto and Osaka are lovely." in recent
    assert recent.index("Which cities") < recent.index("Kyoto")
    assert question not in recent
    recalled = blocks["thread_recalled"].text
    assert "Biscuit will stay with my neighbour Tom" in recalled
    assert "Great, when are you going?" in recalled  # the neighbour before
    assert "Tom sounds reliable" in recalled  # the neighbour after
    assert "rail pass" not in recalled
    assert all(block.role == "user" and not block.trusted for block in (blocks["thread_recent"],))


def test_a_compacted_thread_brings_its_summary_instead_of_the_old_messages(
    user, personal, agent, session, embedder
):
    agent.last_messages = 10
    agent.recall_top_k = 0
    agent.save()
    for n in range(6):
        _say(session, f"Message number {n} mentions Porto.", embedder)
    compact_session(session=session, embedder=embedder, keep_recent=2)
    bundle = _context(user, personal, agent, "And then?", embedder, session=session)
    blocks = _blocks(bundle)
    assert "Summary of messages 1–4" in blocks["compacted_history"].text
    assert blocks["compacted_history"].layer == 8
    assert "Message number 0" not in blocks["thread_recent"].text
    assert "Message number 5" in blocks["thread_recent"].text
    assert "memories" not in blocks or "Summary of messages" not in blocks["memories"].text


def test_working_memory_comes_only_when_the_agent_uses_it(user, personal, agent, session, embedder):
    put_working_memory(session=session, data={"destination": "Oslo"}, actor=AGENT_ACTOR)
    with_memory = _context(user, personal, agent, "Remind me where?", embedder, session=session)
    assert "destination: Oslo" in _blocks(with_memory)["working_memory"].text
    agent.is_working_memory_enabled = False
    agent.save()
    without = _context(user, personal, agent, "Remind me where?", embedder, session=session)
    assert "working_memory" not in _blocks(without)


def test_disabled_layers_are_left_out_but_rules_date_and_message_stay(
    user, personal, agent, embedder
):
    _remember(
        user,
        personal,
        embedder,
        NewMemory(kind="preference", content="Alice prefers trains."),
        NewMemory(kind="episode", content="Alice took the train to Paris."),
    )
    agent.disabled_layers = [3, 4, "6", 1, 2]
    agent.save()
    bundle = _context(user, personal, agent, "How did I get to Paris?", embedder)
    assert [block.key for block in bundle.blocks] == ["platform_rules", "date", "message"]


def test_no_agent_means_the_default_settings(user, personal, embedder):
    _remember(user, personal, embedder, NewMemory(kind="episode", content="Alice ran a marathon."))
    bundle = _context(user, personal, None, "Did I ever run a marathon?", embedder)
    assert [block.key for block in bundle.blocks] == [
        "platform_rules",
        "date",
        "memories",
        "message",
    ]
    assert bundle.budget_tokens == 2000


def test_a_tight_budget_drops_the_least_relevant_memories_first_and_says_so(
    user, personal, agent, embedder
):
    _remember(
        user,
        personal,
        embedder,
        *[
            NewMemory(kind="episode", content=f"Alice visited Rome in {year} and loved the food.")
            for year in range(2015, 2021)
        ],
    )
    agent.persona = ""
    agent.save()
    full = _context(user, personal, agent, "What did I think of Rome?", embedder)
    full_ids = _blocks(full)["memories"].memory_ids
    assert len(full_ids) == 6
    budget = full.total_tokens - 30
    tight = _context(
        user, personal, agent, "What did I think of Rome?", embedder, budget_tokens=budget
    )
    kept = _blocks(tight)["memories"].memory_ids
    assert tight.total_tokens <= budget
    assert not tight.is_over_budget
    assert 0 < len(kept) < 6
    # The best-ranked memories stay; the lowest-ranked go, and the bundle names each one.
    assert kept == full_ids[: len(kept)]
    assert [entry.memory_ids[0] for entry in tight.dropped] == list(reversed(full_ids[len(kept) :]))
    assert all(entry.layer == 6 and entry.tokens > 0 for entry in tight.dropped)


def test_a_budget_too_small_for_anything_keeps_the_rules_and_the_message(
    user, personal, agent, embedder
):
    _remember(user, personal, embedder, NewMemory(kind="episode", content="Alice saw Rome."))
    bundle = _context(user, personal, agent, "Tell me about Rome.", embedder, budget_tokens=5)
    assert [block.key for block in bundle.blocks] == ["platform_rules", "message"]
    assert bundle.is_over_budget
    assert {entry.key for entry in bundle.dropped} >= {"date", "persona"}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"message": "   "}, InvalidInputError),
        ({"message": "x" * 40_000}, ContentTooLargeError),
        ({"budget_tokens": -1}, InvalidInputError),
        ({"budget_tokens": 200_001}, InvalidInputError),
    ],
)
def test_bad_context_input_is_an_input_error(user, personal, agent, embedder, kwargs, error):
    arguments = {"message": "hello", **kwargs}
    with pytest.raises(error):
        _context(user, personal, agent, embedder=embedder, **arguments)


def test_another_users_or_modes_or_agents_session_is_not_found(
    user, other_user, personal, work, agent, workspace, embedder
):
    theirs = start_session(user=other_user, mode=factories.mode_of(other_user), actor=AGENT_ACTOR)
    with pytest.raises(NotFoundError):
        _context(user, personal, agent, "hi", embedder, session=theirs)
    work_session = start_session(user=user, mode=work, actor=AGENT_ACTOR)
    with pytest.raises(NotFoundError):
        _context(user, personal, agent, "hi", embedder, session=work_session)
    other_agent, _ = factories.make_agent(workspace, name="other")
    their_agent_session = start_session(
        user=user, mode=personal, actor=AGENT_ACTOR, agent=other_agent
    )
    with pytest.raises(NotFoundError):
        _context(user, personal, agent, "hi", embedder, session=their_agent_session)


def test_assembly_writes_one_audit_row_and_counts_each_memory_used(
    user, personal, agent, session, embedder
):
    (memory,) = _remember(
        user, personal, embedder, NewMemory(kind="episode", content="Alice sang.")
    )
    before = AuditEntry.objects.count()
    _context(user, personal, agent, "Did I sing?", embedder, session=session)
    assert AuditEntry.objects.count() == before + 1
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry.action == "context.assemble"
    assert set(entry.object_ids) == {str(memory.id), str(session.pk)}
    flush_memory_access()
    row = Memory.objects.for_owner(user=user, mode=personal).get(pk=memory.id)
    assert row.access_count == 1


def test_assembly_runs_a_fixed_number_of_queries_however_many_memories(
    user, personal, agent, session, embedder
):
    _say(session, "Hello there.", embedder)
    _say(session, "Hi!", embedder, role="assistant")

    def count_queries():
        flush_memory_access()
        # Counted as in a process that has not asked yet whether the user has their own index
        # (it keeps the answer a minute): the index check counts every time.
        forget_own_index(user.pk)
        with CaptureQueriesContext(connection) as captured:
            _context(user, personal, agent, "What do I like?", embedder, session=session)
        return len(captured)

    _remember(user, personal, embedder, NewMemory(kind="preference", content="Alice likes figs."))
    few = count_queries()
    _remember(
        user,
        personal,
        embedder,
        *[
            NewMemory(kind="preference", content=f"Alice likes fruit number {n}.")
            for n in range(25)
        ],
    )
    assert count_queries() == few
    assert few <= 20


def test_context_assembly_query_budget(
    user, personal, agent, session, embedder, django_assert_max_num_queries
):
    _say(session, "Hello there.", embedder)
    _remember(user, personal, embedder, NewMemory(kind="preference", content="Alice likes figs."))
    flush_memory_access()
    with django_assert_max_num_queries(20):
        _context(user, personal, agent, "What do I like?", embedder, session=session)


_fuzz_modes = itertools.count(1)
_stored_text = adversarial_item.filter(lambda text: text.strip() and "\x00" not in text)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(contents=st.lists(_stored_text, min_size=1, max_size=3), said=_stored_text)
def test_adversarial_stored_text_never_escapes_its_fence(
    user, personal, agent, embedder, contents, said
):
    mode = factories.mode_of(user, f"fuzz-{next(_fuzz_modes)}")
    _remember(
        user,
        mode,
        embedder,
        *[NewMemory(kind="preference", content=c, importance="critical") for c in contents],
    )
    session = start_session(user=user, mode=mode, actor=AGENT_ACTOR, agent=agent)
    _say(session, said, embedder)
    bundle = _context(
        user, mode, agent, "Ignore nothing; what do you know?", embedder, session=session
    )

    untrusted = [block for block in bundle.blocks if not block.trusted]
    assert {block.key for block in untrusted} >= {"profile", "thread_recent"}
    for block in bundle.blocks:
        folded = _canonical(block.text)
        if block.trusted:
            # Stored text never lands in a block that speaks with authority.
            assert block.key in {"platform_rules", "date", "persona", "message"}
            assert f"<{FENCE_TAG}" not in folded
            continue
        assert block.role == "user"
        assert folded.count(f"<{FENCE_TAG}") == 1
        assert folded.count(FENCE_CLOSE) == 1
        assert folded.endswith(FENCE_CLOSE)
        # The only angle brackets are the two delimiters: nothing inside can open or close a tag.
        assert folded.count("<") == 2
        assert folded.count(">") == 2
        assert "[" not in folded
        assert "]" not in folded
        body = block.text.split("\n")[2:-1]
        assert all(line.startswith("- ") for line in body)
