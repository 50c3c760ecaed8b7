"""Forget the last hour, a period, a topic; delete all; the deletion receipt; export as JSON."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AuditEntry, Memory, Message, Session
from memoryhub.services.sessions import add_message, start_session


def contents(user, mode):
    from memoryhub.keyring import cipher_for
    from memoryhub.memory_rows import decrypt_memory

    cipher = cipher_for(user)
    return {
        decrypt_memory(m, cipher).content for m in Memory.objects.for_owner(user=user, mode=mode)
    }


def test_the_forget_page_asks_for_confirmation_first(signed_in, remember):
    remember("Recent thing.")
    response = signed_in.get("/dashboard/modes/personal/forget/?what=last-hour")
    assert response.status_code == 200
    assert "Yes, forget the last hour" in response.content.decode()
    assert "Recent thing." in signed_in.get("/dashboard/").content.decode()


def test_forgetting_the_last_hour_keeps_older_items_and_gives_a_receipt(
    signed_in, user, personal, work, remember, embedder
):
    now = timezone.now()
    remember("Old fact from yesterday.", created_at=now - timedelta(days=1))
    remember("Fresh fact from ten minutes ago.", created_at=now - timedelta(minutes=10))
    remember("Fresh work fact.", mode=work, created_at=now - timedelta(minutes=10))
    actor = Actor.system("tests")
    session = start_session(user=user, mode=personal, actor=actor)
    add_message(
        session=session, role="user", content="Just chatting.", actor=actor, embedder=embedder
    )

    response = signed_in.post("/dashboard/modes/personal/forget/", {"what": "last-hour"})

    assert response.status_code == 302 and response["Location"] == "/dashboard/receipt/"
    assert contents(user, personal) == {"Old fact from yesterday."}
    assert contents(user, work) == {"Fresh work fact."}
    assert not Message.objects.filter(session=session).exists()
    receipt = signed_in.get("/dashboard/receipt/").content.decode()
    assert "Deletion receipt" in receipt and "everything from the last hour" in receipt
    assert "<li>1 fact</li>" in receipt and "<li>1 conversation message</li>" in receipt


def test_forgetting_a_period_takes_whole_days(signed_in, user, personal, remember):
    now = timezone.now()
    remember("Ten days ago.", created_at=now - timedelta(days=10))
    remember("Three days ago.", created_at=now - timedelta(days=3))
    day = (now - timedelta(days=10)).date().isoformat()
    signed_in.post(
        "/dashboard/modes/personal/forget/", {"what": "period", "since": day, "until": day}
    )
    assert contents(user, personal) == {"Three days ago."}


def test_forgetting_a_topic_takes_only_what_mentions_it(signed_in, user, personal, remember):
    remember("Training for the Lyon marathon.")
    remember("Prefers vegetarian food.")
    response = signed_in.post(
        "/dashboard/modes/personal/forget/", {"what": "topic", "topic": "marathon"}
    )
    assert response.status_code == 302
    assert contents(user, personal) == {"Prefers vegetarian food."}
    assert "“marathon”" in signed_in.get("/dashboard/receipt/").content.decode()


@pytest.mark.parametrize(
    "data",
    [
        {"what": "period"},
        {"what": "period", "since": "2024-05-02", "until": "2024-05-01"},
        {"what": "topic", "topic": ""},
        {"what": "everything"},
    ],
)
def test_an_incomplete_forget_is_refused_and_deletes_nothing(
    signed_in, user, personal, remember, data
):
    remember("Keep me.")
    response = signed_in.post("/dashboard/modes/personal/forget/", data)
    assert response.status_code == 422
    assert contents(user, personal) == {"Keep me."}


def test_an_empty_receipt_page_says_so(signed_in, db):
    assert "No deletion yet" in signed_in.get("/dashboard/receipt/").content.decode()


def test_forget_refuses_a_post_without_the_csrf_token(user, personal, remember):
    remember("Recent thing.")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/dashboard/modes/personal/forget/", {"what": "last-hour"})
    assert response.status_code == 403
    assert contents(user, personal) == {"Recent thing."}


def test_delete_all_needs_the_typed_phrase(signed_in, user, personal, remember):
    remember("Keep me.")
    response = signed_in.post(
        "/dashboard/modes/personal/delete-all/", {"scope": "personal", "confirmation": "yes"}
    )
    assert response.status_code == 422
    assert "delete personal" in response.content.decode()
    assert contents(user, personal) == {"Keep me."}


def test_delete_all_of_one_mode_leaves_the_other_modes(
    signed_in, user, personal, work, remember, embedder
):
    remember("Personal fact.")
    remember("Work fact.", mode=work)
    start_session(user=user, mode=personal, actor=Actor.system("tests"))
    response = signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "personal", "confirmation": "Delete personal"},
    )
    assert response.status_code == 302
    assert contents(user, personal) == set()
    assert contents(user, work) == {"Work fact."}
    assert not Session.objects.filter(user=user, mode=personal).exists()
    assert "1 ended conversation" in signed_in.get("/dashboard/receipt/").content.decode()


def test_delete_everything_empties_every_mode_but_keeps_the_account(
    signed_in, user, personal, work, remember
):
    remember("Personal fact.")
    remember("Work fact.", mode=work)
    signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "everything", "confirmation": "delete everything"},
    )
    assert not Memory.objects.for_owner(user=user, mode=None).exists()
    assert signed_in.get("/dashboard/").status_code == 200


def test_delete_all_leaves_other_users_alone(signed_in, other_user, remember):
    remember("Bob's fact.", owner=other_user)
    signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "everything", "confirmation": "delete everything"},
    )
    assert Memory.objects.for_owner(user=other_user, mode=None).count() == 1


def test_delete_all_refuses_a_post_without_the_csrf_token(user, personal, remember):
    remember("Keep me.")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "everything", "confirmation": "delete everything"},
    )
    assert response.status_code == 403
    assert contents(user, personal) == {"Keep me."}


def test_export_is_one_json_file_of_the_users_own_decrypted_data(
    signed_in, user, personal, work, other_user, remember, embedder
):
    remember("Lives in Lyon.")
    remember("Works at Hexa.", mode=work)
    remember("Bob's secret.", owner=other_user)
    actor = Actor.system("tests")
    session = start_session(user=user, mode=personal, actor=actor)
    add_message(
        session=session, role="user", content="Hello there.", actor=actor, embedder=embedder
    )

    response = signed_in.get("/dashboard/export/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response["Content-Disposition"].startswith('attachment; filename="memoryhub-export-')
    document = json.loads(response.content)
    assert document["format"] == "memoryhub-export/1"
    by_mode = {mode["slug"]: mode for mode in document["modes"]}
    assert [m["content"] for m in by_mode["personal"]["memories"]] == ["Lives in Lyon."]
    assert [m["content"] for m in by_mode["work"]["memories"]] == ["Works at Hexa."]
    assert by_mode["personal"]["sessions"][0]["messages"][0]["content"] == "Hello there."
    assert "Bob's secret." not in response.content.decode()
    assert AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk), action="account.export"
    ).exists()


def test_export_includes_previous_versions(signed_in, remember):
    memory = remember("Lives in Lyon.")
    signed_in.post(
        f"/dashboard/modes/personal/memories/{memory.pk}/edit/",
        {"content": "Lives in Paris.", "importance": "normal"},
    )
    document = json.loads(signed_in.get("/dashboard/export/").content)
    item = document["modes"][0]["memories"][0]
    assert item["content"] == "Lives in Paris."
    assert [v["content"] for v in item["previous_versions"]] == ["Lives in Lyon."]
