"""A workspace chooses its embedding model: writes and searches of its users use it, searches
never read another model's vectors, and `reembed --workspace` moves one workspace only."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from memoryhub import tasks
from memoryhub.actors import Actor
from memoryhub.embeddings import (
    MINILM,
    MULTILINGUAL_E5,
    USE_MULTILINGUAL,
    embedder_for,
    embedder_for_workspace,
)
from memoryhub.models import AuditEntry, Memory, Message, Workspace
from memoryhub.services.reembed import choose_embedding_model
from memoryhub.services.sessions import add_message, end_session, start_session
from tests import factories

from .conftest import Caller

ACTOR = Actor.system("tests")
FRENCH = (
    "Mon chien s'appelle Filou.",
    "Je joue du violoncelle depuis l'enfance.",
    "Ma sœur Claire habite à Lyon.",
)


@pytest.fixture
def french(db):
    """A French-speaking workspace on multilingual-e5-small, with its user and agent."""
    workspace = factories.make_workspace("fr")
    choose_embedding_model(workspace=workspace, model=MULTILINGUAL_E5, actor=ACTOR)
    factories.make_user(workspace=workspace, email="claire@example.com", external_id="claire")
    return workspace


@pytest.fixture
def fr_api(client, french):
    return Caller(client, factories.make_agent(french, "assistant")[1])


def _remember(api, user, content):
    body = {"user": user, "mode": "personal", "kind": "fact", "content": content}
    response = api.post("/memories", body)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _search(api, user, query):
    body = {"user": user, "query": query, "k": 5, "min_score": None}
    response = api.post("/search", body)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def _models(workspace) -> set[str]:
    memories = Memory.all_owners.filter(user__workspace=workspace)
    return set(memories.values_list("embedding_model", flat=True))


def test_the_workspace_choice_picks_the_embedder_and_blank_is_the_default(settings, workspace):
    assert embedder_for_workspace(workspace).name == settings.MEMORYHUB_EMBEDDING_MODEL == MINILM
    workspace.embedding_model = MULTILINGUAL_E5
    assert embedder_for_workspace(workspace) is embedder_for(MULTILINGUAL_E5)


def test_two_workspaces_store_vectors_of_their_own_model(api, user, fr_api, french, workspace):
    _remember(api, "alice", "Alice's locker code is QX7731.")
    _remember(fr_api, "claire", "Mon chien s'appelle Filou.")
    session = fr_api.post("/sessions", {"user": "claire", "mode": "personal"}).json()["id"]
    added = fr_api.post(f"/sessions/{session}/messages", {"role": "user", "content": "Bonjour"})
    assert added.status_code in (200, 201), added.content

    assert _models(workspace) == {MINILM}
    assert _models(french) == {MULTILINGUAL_E5}
    message = Message.objects.get(session_id=session)
    assert message.embedding_model == MULTILINGUAL_E5
    # The vector is e5's, not MiniLM's under e5's name.
    stored = Memory.all_owners.get(user__workspace=french).embedding
    expected = embedder_for(MULTILINGUAL_E5).embed(["Mon chien s'appelle Filou."])[0]
    assert float(np.dot(stored, expected)) > 0.999


def test_a_french_question_finds_the_french_memory_in_the_e5_workspace(fr_api):
    for content in FRENCH:
        _remember(fr_api, "claire", content)
    # No word in common with the memory: only its meaning can find it.
    results = _search(fr_api, "claire", "Quel animal domestique ai-je ?")
    assert results[0]["content"] == "Mon chien s'appelle Filou."
    assert results[0]["cosine"] > max(item["cosine"] for item in results[1:])


def test_a_search_never_reads_vectors_of_another_model(fr_api, french):
    # Written while the workspace followed the default (MiniLM), then switched to e5.
    choose_embedding_model(workspace=french, model="", actor=ACTOR)
    _remember(fr_api, "claire", "Mon chien s'appelle Filou.")
    french.refresh_from_db()
    assert _models(french) == {MINILM}
    choose_embedding_model(workspace=french, model=MULTILINGUAL_E5, actor=ACTOR)

    # The same words: found by its words, but its MiniLM vector is never compared with e5's.
    [found] = _search(fr_api, "claire", "Mon chien s'appelle Filou.")
    assert found["cosine"] == 0.0

    call_command("reembed", "--workspace", "fr", "--no-progress")
    [found] = _search(fr_api, "claire", "Mon chien s'appelle Filou.")
    assert found["cosine"] > 0.5


def test_reembed_of_one_workspace_leaves_the_other_untouched(api, user, fr_api, french, capsys):
    _remember(api, "alice", "Alice's locker code is QX7731.")
    choose_embedding_model(workspace=french, model="", actor=ACTOR)
    _remember(fr_api, "claire", "Mon chien s'appelle Filou.")
    english = Memory.all_owners.get(user=user)
    before = list(english.embedding)

    call_command("reembed", "--workspace", "fr", "--model", MULTILINGUAL_E5, "--no-progress")
    out = capsys.readouterr().out

    assert "Workspace fr now embeds with" in out
    assert "Left to re-embed with" in out and "memories 1" in out
    assert f"Every stored vector is now of {MULTILINGUAL_E5}" in out
    assert Workspace.objects.get(slug="fr").embedding_model == MULTILINGUAL_E5
    assert _models(french) == {MULTILINGUAL_E5}
    english.refresh_from_db()
    assert english.embedding_model == MINILM
    assert list(english.embedding) == before
    assert AuditEntry.objects.filter(action="workspace.embedding_model").exists()

    # The deployment-wide run (the default model) leaves a workspace with its own model alone.
    call_command("reembed", "--model", MINILM, "--no-progress")
    assert _models(french) == {MULTILINGUAL_E5}


def test_reembed_refuses_an_unknown_workspace_or_model(french):
    with pytest.raises(CommandError, match="No workspace"):
        call_command("reembed", "--workspace", "nowhere")
    with pytest.raises(CommandError, match="Unknown model"):
        call_command("reembed", "--workspace", "fr", "--model", "word2vec")
    assert Workspace.objects.get(slug="fr").embedding_model == MULTILINGUAL_E5


def test_the_extraction_task_embeds_with_the_sessions_workspace_model(french):
    claire = french.users.get()
    mode = factories.mode_of(claire, "personal")
    session = start_session(user=claire, mode=mode, actor=ACTOR)
    add_message(
        session=session,
        role="user",
        content="Je suis allergique aux arachides.",
        actor=ACTOR,
        embedder=embedder_for_workspace(french),
    )
    end_session(session=session, actor=ACTOR)

    tasks.extract_session(str(session.pk))  # The task names no embedder: the workspace's.

    assert Memory.all_owners.filter(user=claire).exists()
    assert _models(french) == {MULTILINGUAL_E5}


def test_a_workspace_on_the_universal_sentence_encoder_crosses_languages(fr_api, french):
    """Moved from e5 to the Universal Sentence Encoder: a French question finds the English
    memory and an English question the French one, by meaning alone."""
    _remember(fr_api, "claire", "My dog is called Filou.")
    _remember(fr_api, "claire", "The quarterly report is due on Friday.")
    _remember(fr_api, "claire", "Ma sœur Claire habite à Lyon.")
    call_command("reembed", "--workspace", "fr", "--model", USE_MULTILINGUAL, "--no-progress")
    assert _models(french) == {USE_MULTILINGUAL}

    [first, *rest] = _search(fr_api, "claire", "Quel animal domestique ai-je ?")
    assert first["content"] == "My dog is called Filou."
    assert first["cosine"] > max(item["cosine"] for item in rest)
    [first, *rest] = _search(fr_api, "claire", "Which city is my sibling based in?")
    assert first["content"] == "Ma sœur Claire habite à Lyon."
