"""Vectors know their model: every write records it, searches never mix two, and `reembed`
switches a deployment (resumable, safe while agents read and write)."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from memoryhub.actors import Actor
from memoryhub.embeddings import MINILM, MULTILINGUAL_E5, embedder_for
from memoryhub.keyring import cipher_for
from memoryhub.knowledge.answers import propose_knowledge_candidate
from memoryhub.knowledge.documents import publish_document
from memoryhub.models import KnowledgeChunk, LearningCandidate, Memory, Message
from memoryhub.queries.recall import rank_memories
from memoryhub.services.memories import edit_memory
from memoryhub.services.reembed import reembed, remaining_rows
from memoryhub.services.sessions import add_message, start_session
from tests import factories

ACTOR = Actor.system("tests")
FACTS = (
    "My sister Claire lives in Lyon.",
    "Je joue du violoncelle depuis l'enfance.",
    "The dentist appointment is on Tuesday.",
    "Mon chien s'appelle Filou.",
    "I am allergic to peanuts.",
)


@pytest.fixture(scope="module")
def e5():
    return embedder_for(MULTILINGUAL_E5)


def _cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _memories(user, mode, embedder):
    return [factories.make_memory(user, mode, fact, embedder=embedder) for fact in FACTS]


def _all_tables(user, mode, workspace, embedder):
    memories = _memories(user, mode, embedder)
    session = start_session(user=user, mode=mode, actor=ACTOR)
    add_message(
        session=session,
        role="user",
        content="Je pars à Lisbonne en mai.",
        actor=ACTOR,
        embedder=embedder,
    )
    publish_document(
        workspace=workspace,
        title="Refunds",
        body="Refunds take five days.",
        source="pasted",
        embedder=embedder,
    )
    propose_knowledge_candidate(
        user=user, mode=mode, statement="Orders ship from Lille.", actor=ACTOR, embedder=embedder
    )
    return memories


def test_every_write_records_the_model_that_made_its_vector(user, personal, workspace, embedder):
    _all_tables(user, personal, workspace, embedder)
    for model in (Memory.all_owners, Message.objects, KnowledgeChunk.objects):
        assert set(model.exclude(embedding=None).values_list("embedding_model", flat=True)) == {
            embedder.name
        }
    assert set(LearningCandidate.objects.values_list("embedding_model", flat=True)) == {MINILM}


def test_a_vector_without_its_model_is_refused_by_the_database(user, personal, embedder):
    memory = factories.make_memory(user, personal, "I like tea.", embedder=embedder)
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.all_owners.filter(pk=memory.pk).update(embedding_model="")


def test_reembed_moves_every_table_to_the_new_model(user, personal, workspace, embedder, e5):
    memories = _all_tables(user, personal, workspace, embedder)
    assert remaining_rows(e5.name) == {
        "memories": 5,
        "messages": 1,
        "knowledge chunks": 1,
        "candidates": 1,
    }

    report = reembed(embedder=e5)

    assert report.embedded == {
        "memories": 5,
        "messages": 1,
        "knowledge chunks": 1,
        "candidates": 1,
    }
    assert report.remaining == dict.fromkeys(report.remaining, 0)
    for memory, fact in zip(memories, FACTS, strict=True):
        memory.refresh_from_db()
        assert memory.embedding_model == MULTILINGUAL_E5
        assert _cosine(memory.embedding, e5.embed([fact])[0]) > 0.999
    chunk = KnowledgeChunk.objects.get()
    assert _cosine(chunk.embedding, e5.embed(["Refunds\n\nRefunds take five days."])[0]) > 0.999
    # Back again: the switch works both ways.
    assert reembed(embedder=embedder).embedded["memories"] == 5


def test_an_interrupted_reembed_resumes_where_it_stopped(user, personal, embedder, e5):
    _memories(user, personal, embedder)

    def crash(table, rows):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reembed(embedder=e5, batch=2, on_page=crash)

    assert remaining_rows(e5.name)["memories"] == 3
    report = reembed(embedder=e5, batch=2)
    # Only what was left: the first page was kept.
    assert report.embedded["memories"] == 3
    assert report.remaining["memories"] == 0


def test_a_search_during_the_switch_never_compares_two_models(user, personal, embedder, e5):
    _memories(user, personal, embedder)
    with pytest.raises(KeyboardInterrupt):
        reembed(embedder=e5, batch=2, on_page=lambda table, rows: _stop())
    models = dict(Memory.all_owners.values_list("pk", "embedding_model"))
    waiting = next(pk for pk, model in models.items() if model == MINILM)
    words = {fact: fact.rstrip(".").split()[-1] for fact in FACTS}[_content(waiting)]

    for query_embedder in (e5, embedder):
        ranked = rank_memories(
            user=user,
            mode=personal,
            query=f"what about {words}?",
            cipher=cipher_for(user),
            k=10,
            embedder=query_embedder,
        )
        assert len(ranked) == 5
        for item in ranked:
            # A vector of the other model is not compared with the query's: cosine 0 ...
            assert (item.cosine == 0) == (models[item.row.pk] != query_embedder.name)
        # ... and a memory waiting for its new vector is still found by its words.
        assert next(item for item in ranked if item.row.pk == waiting).lexical > 0


def test_a_memory_edited_during_the_switch_ends_with_its_new_text(user, personal, embedder, e5):
    memories = _memories(user, personal, embedder)
    edited = memories[0]

    class AgentWritesMeanwhile:
        """The new model, while an agent edits a memory between the read and the write."""

        name, dimensions = e5.name, e5.dimensions

        def __init__(self):
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            if self.calls == 1:
                edit_memory(
                    user=user,
                    mode=personal,
                    memory_id=edited.pk,
                    actor=ACTOR,
                    embedder=embedder,
                    content="My sister Claire moved to Nantes.",
                )
            return e5.embed(texts)

        def embed_query(self, text):
            return e5.embed_query(text)

    report = reembed(embedder=AgentWritesMeanwhile())

    assert report.remaining["memories"] == 0
    edited.refresh_from_db()
    assert edited.embedding_model == MULTILINGUAL_E5
    assert _cosine(edited.embedding, e5.embed(["My sister Claire moved to Nantes."])[0]) > 0.999


def test_reembed_command_reports_what_is_left(user, personal, embedder, capsys):
    _memories(user, personal, embedder)
    call_command("reembed", "--model", MULTILINGUAL_E5, "--dry-run")
    assert "memories 5" in capsys.readouterr().out
    call_command("reembed", "--model", MULTILINGUAL_E5, "--no-progress", "--batch", "3")
    out = capsys.readouterr().out
    assert "memories 5" in out
    assert f"Every stored vector is now of {MULTILINGUAL_E5}" in out
    assert remaining_rows(MULTILINGUAL_E5)["memories"] == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [(["--model", "word2vec"], "Unknown model"), (["--batch", "0"], "at least 1")],
)
def test_reembed_command_rejects_bad_arguments(db, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("reembed", *arguments)


def _stop():
    raise KeyboardInterrupt


def _content(pk) -> str:
    memory = Memory.all_owners.get(pk=pk)
    cipher = cipher_for(memory.user)
    return cipher.decrypt(memory.content_ciphertext, table="memory", row_id=pk, field="content")
