"""Forget shows what will go before it deletes anything, and the receipt names what went."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.models import AuditEntry, Memory, MemorySource
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.sessions import add_message, start_session
from tests import factories

FORGET = "/dashboard/modes/personal/forget/"


@pytest.fixture
def recent_and_old(remember):
    now = timezone.now()
    return (
        remember("Fresh fact from ten minutes ago.", created_at=now - timedelta(minutes=10)),
        remember("Old fact from yesterday.", created_at=now - timedelta(days=1)),
    )


def test_the_last_hour_preview_lists_what_will_go_and_deletes_nothing(
    signed_in, user, personal, recent_and_old, embedder
):
    session = start_session(user=user, mode=personal, actor=Actor.system("tests"))
    add_message(
        session=session, role="user", content="Hi.", actor=Actor.system("tests"), embedder=embedder
    )
    page = signed_in.get(f"{FORGET}?what=last-hour").content.decode()
    assert "1 item will go" in page and "1 conversation message" in page
    assert "Fresh fact from ten minutes ago." in page and "Old fact from yesterday." not in page
    assert "Yes, forget the last hour" in page
    assert Memory.objects.for_owner(user=user, mode=personal).count() == 2


def test_opening_the_forget_page_previews_the_last_hour(signed_in, recent_and_old):
    page = signed_in.get(FORGET).content.decode()
    assert "Fresh fact from ten minutes ago." in page


def test_a_period_is_previewed_then_confirmed_with_the_same_days(
    signed_in, user, personal, remember
):
    now = timezone.now()
    remember("Ten days ago.", created_at=now - timedelta(days=10))
    remember("Three days ago.", created_at=now - timedelta(days=3))
    day = (now - timedelta(days=10)).date().isoformat()
    page = signed_in.get(FORGET, {"what": "period", "since": day, "until": day}).content.decode()
    assert "Ten days ago." in page and "Three days ago." not in page
    assert f'name="since" value="{day}"' in page and "Yes, forget this period" in page
    signed_in.post(FORGET, {"what": "period", "since": day, "until": day})
    assert Memory.objects.for_owner(user=user, mode=personal).count() == 1


def test_a_topic_preview_lists_only_what_mentions_it(signed_in, remember, user):
    remember("Training for the Lyon marathon.")
    remember("Prefers vegetarian food.")
    posted = signed_in.post(FORGET, {"what": "topic", "topic": "marathon", "preview": "1"})
    # Post, redirect, get: reload and Back show the preview again without resubmitting, and
    # the address names a token of this session, never the topic.
    assert posted.status_code == 302 and "marathon" not in posted["Location"]
    response = signed_in.get(posted["Location"])
    page = response.content.decode()
    assert response.status_code == 200
    assert "Training for the Lyon marathon." in page and "vegetarian" not in page
    assert 'name="topic" value="marathon"' in page and "Yes, forget this topic" in page
    assert Memory.all_owners.count() == 2  # Previewed, not forgotten.
    # Another session, even of the same person, cannot open the preview with that address.
    other = Client()
    other.force_login(user)
    elsewhere = other.get(posted["Location"])
    assert elsewhere.status_code == 200 and "marathon" not in elsewhere.content.decode()


def test_the_topic_never_travels_in_the_url(signed_in, remember):
    remember("Talked to a divorce lawyer.")
    page = signed_in.get(FORGET).content.decode()
    # The topic form posts (CSRF-protected); no link or form puts the topic in a query string.
    assert '<form method="post" action="/dashboard/modes/personal/forget/?what=topic"' in page
    assert 'method="get"' not in page.split('id="forget-topic-title"')[1]
    # A topic in the URL (an old bookmark) is not previewed: nothing echoes it back.
    response = signed_in.get(FORGET, {"what": "topic", "topic": "divorce"})
    assert response.status_code == 200
    assert "divorce" not in response.content.decode()


@pytest.mark.parametrize(
    "query",
    [
        {"what": "period", "since": "", "until": ""},
        {"what": "period", "since": "2024-05-02", "until": "2024-05-01"},
        {"what": "topic", "topic": ""},
        {"what": "everything", "topic": "x"},
    ],
)
def test_an_incomplete_preview_is_422_and_offers_no_confirmation(signed_in, remember, query):
    remember("Keep me.")
    if "topic" in query:
        response = signed_in.post(FORGET, {**query, "preview": "1"})
    else:
        response = signed_in.get(FORGET, query)
    assert response.status_code == 422
    assert "Yes, forget" not in response.content.decode()


def test_an_empty_window_says_there_is_nothing_to_forget(signed_in, remember):
    remember("Old.", created_at=timezone.now() - timedelta(days=2))
    page = signed_in.get(f"{FORGET}?what=last-hour").content.decode()
    assert "there is nothing to forget" in page and "Yes, forget the last hour" not in page


def test_the_preview_stays_in_the_mode_and_with_the_owner(signed_in, other_user, work, remember):
    remember("Fresh work fact.", mode=work)
    remember("Bob's fresh fact.", owner=other_user)
    page = signed_in.get(f"{FORGET}?what=last-hour").content.decode()
    assert "Fresh work fact." not in page and "Bob" not in page
    assert "there is nothing to forget" in page


def test_the_preview_is_audited_with_the_items_shown(signed_in, user, recent_and_old):
    signed_in.get(f"{FORGET}?what=last-hour")
    row = AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk), action="forget.preview"
    ).get()
    assert row.object_ids == [str(recent_and_old[0].pk)]
    assert row.mode == mode_pseudonym(subject_pseudonym(user.pk), "personal")


def _load_demo_like(user, mode, embedder):
    """What `manage.py load_demo` does: MemoryHub itself remembers, no agent, no conversation."""
    items = [
        NewMemory(kind="fact", content="The user's name is Camille.", source=MemorySource.EXPLICIT)
    ]
    remember_many(
        user=user, mode=mode, items=items, actor=Actor.system("demo data"), embedder=embedder
    )


def test_right_after_make_run_the_preview_says_the_demo_data_is_in_the_window(client, db, embedder):
    demo = factories.make_workspace("demo")
    camille = factories.make_user(workspace=demo, email="camille@example.com")
    _load_demo_like(camille, factories.mode_of(camille), embedder)
    client.force_login(camille)
    page = client.get(f"{FORGET}?what=last-hour").content.decode()
    assert "All of these are the demo data" in page and "deletes the demo itself" in page


def test_items_of_people_and_agents_are_not_called_demo_data(signed_in, user, personal, embedder):
    _load_demo_like(user, personal, embedder)  # alice's workspace is not the demo workspace.
    page = signed_in.get(f"{FORGET}?what=last-hour").content.decode()
    assert "demo data" not in page


def test_the_receipt_names_what_went_once_then_keeps_no_text(signed_in, user, recent_and_old):
    signed_in.post(FORGET, {"what": "last-hour"})
    receipt = signed_in.get("/dashboard/receipt/")
    page = receipt.content.decode()
    assert "no-store" in receipt["Cache-Control"]
    assert "Fresh fact from ten minutes ago." in page and "Old fact" not in page
    assert "<li>1 fact</li>" in page and "In all: 1 item." in page
    # The text rode there encrypted and left the session as it was shown.
    stored = signed_in.session["dashboard.last_receipt"]
    assert stored["named"] is None and stored["named_count"] == 1
    again = signed_in.get("/dashboard/receipt/").content.decode()
    assert "Fresh fact" not in again and "their text is not kept" in again


def test_the_sealed_receipt_text_is_not_readable_in_the_session(signed_in, user, recent_and_old):
    signed_in.post(FORGET, {"what": "last-hour"})
    stored = signed_in.session["dashboard.last_receipt"]
    assert stored["named"] and "Fresh fact" not in str(stored)
