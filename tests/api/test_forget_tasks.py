"""A forget by query: embedded in bounded batches, and queued as a task when it picks many."""

from __future__ import annotations

from memoryhub.actors import Actor
from memoryhub.embeddings import default_embedder
from memoryhub.models import AuditEntry, ForgetTask, Memory
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.forget_tasks import run_forget_task
from memoryhub.services.journal import add_journal_entry
from tests import factories
from tests.api.conftest import Caller

QUERY = {"user": "alice", "query": "peanut allergy"}


class CountingEmbedder:
    """The real embedder, noting the size of each batch it is asked for."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.inner = default_embedder()
        self.name = self.inner.name

    def embed(self, texts):
        self.batches.append(len(texts))
        return self.inner.embed(texts)

    def embed_query(self, text):
        self.batches.append(1)
        return self.inner.embed_query(text)


def _allergies(user, mode, embedder):
    return [
        factories.make_memory(user, mode, text, embedder=embedder)
        for text in ("Allergic to peanuts", "Has a severe peanut allergy", "Avoids peanut butter")
    ]


def test_a_small_forget_by_query_runs_at_once(api, user, personal, embedder, settings):
    settings.MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE = 10
    _allergies(user, personal, embedder)
    factories.make_memory(user, personal, "Plays the piano", embedder=embedder)

    response = api.post("/forget", QUERY)

    assert response.status_code == 200
    assert response.json()["forgotten"] >= 2
    assert not ForgetTask.objects.exists()


def test_a_large_forget_by_query_is_queued_and_its_receipt_read_back(
    api, user, personal, embedder, settings, django_capture_on_commit_callbacks
):
    settings.MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE = 1
    allergies = _allergies(user, personal, embedder)
    piano = factories.make_memory(user, personal, "Plays the piano", embedder=embedder)

    with django_capture_on_commit_callbacks() as queued:
        response = api.post("/forget", QUERY)

    assert response.status_code == 202
    task = response.json()
    assert (task["status"], task["forgotten"], task["counts"]) == ("queued", 0, {})
    assert len(queued) == 1  # The worker's task, published once the request committed.
    row = ForgetTask.objects.get(pk=task["task_id"])
    assert b"peanut" not in bytes(row.selector_ciphertext)  # The query is sealed.
    assert Memory.objects.for_owner(user=user, mode=personal).count() == 4

    run_forget_task(task_id=row.pk, embedder=embedder)
    run_forget_task(task_id=row.pk, embedder=embedder)  # Delivered twice: forgets once.

    done = api.get(f"/forget/tasks/{row.pk}", user="alice").json()
    assert done["status"] == "done" and done["finished_at"]
    assert set(done["memory_ids"]) >= {str(allergies[0].pk), str(allergies[1].pk)}
    assert done["forgotten"] == sum(done["counts"].values())
    assert list(Memory.objects.for_owner(user=user, mode=personal)) == [piano]
    assert AuditEntry.objects.filter(action="memory.forget", channel="api").count() == 1


def test_another_user_mode_or_workspace_cannot_read_the_task(
    api, client, user, personal, other_user, embedder, settings
):
    settings.MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE = 1
    _allergies(user, personal, embedder)
    task_id = api.post("/forget", QUERY).json()["task_id"]
    _, stranger_key = factories.make_agent(factories.make_workspace(), "stranger")

    assert api.get(f"/forget/tasks/{task_id}", user="bob").status_code == 404
    assert api.get(f"/forget/tasks/{task_id}", user="alice", mode="work").status_code == 404
    stranger = Caller(client, stranger_key).get(f"/forget/tasks/{task_id}", user="alice")
    assert stranger.status_code == 404
    assert api.get("/forget/tasks/not-a-uuid", user="alice").status_code == 422


def test_texts_without_stored_embeddings_are_embedded_in_bounded_batches(
    user, personal, agent, embedder, settings
):
    settings.MEMORYHUB_FORGET_EMBED_BATCH = 2
    for n in range(5):
        add_journal_entry(
            agent=agent,
            user=user,
            mode=personal,
            entry_type="alert",
            summary=f"Asked about the peanut allergy, note {n}" if n % 2 else f"Piano lesson {n}",
            actor=Actor.system("tests"),
        )
    counting = CountingEmbedder()

    receipt = forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(query="peanut allergy"),
        actor=Actor.system("tests"),
        embedder=counting,
    )

    assert receipt.counts["journal"] == 2  # The two notes about the allergy.
    assert len(counting.batches) > 2 and max(counting.batches) <= 2
