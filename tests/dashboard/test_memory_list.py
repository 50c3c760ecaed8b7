"""The main page: modes, sections, candidates, contradictions, pagination, empty states."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tests import factories


def test_anonymous_visitors_are_sent_to_the_login_page(client, db):
    response = client.get("/dashboard/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_main_page_shows_only_the_chosen_mode(signed_in, remember, work):
    remember("Lives in Lyon.")
    remember("Works at Hexa Logistics.", mode=work)
    personal_page = signed_in.get("/dashboard/?mode=personal").content.decode()
    work_page = signed_in.get("/dashboard/?mode=work").content.decode()
    assert "Lives in Lyon." in personal_page and "Hexa Logistics" not in personal_page
    assert "Hexa Logistics" in work_page and "Lyon" not in work_page


def test_confidence_is_shown_in_words(signed_in, remember):
    remember("Sure fact.", confidence="high")
    remember("Likely fact.", confidence="medium")
    remember("Maybe fact.", source="extracted")
    page = signed_in.get("/dashboard/?mode=personal&section=profile").content.decode()
    assert "confirmed" in page and "likely" in page and "not sure yet" in page


def test_a_candidate_is_asked_about_with_is_this_right(signed_in, remember):
    remember("Might take up climbing.", source="extracted", status="candidate")
    page = signed_in.get("/dashboard/").content.decode()
    assert "Is this right?" in page
    assert "Might take up climbing." in page


def test_sections_list_only_their_kinds(signed_in, remember):
    remember("Prefers trains.", kind="preference")
    remember("Pick a hotel.", kind="open_item", payload={"status": "open"})
    preferences = signed_in.get("/dashboard/?section=preferences").content.decode()
    open_items = signed_in.get("/dashboard/?section=open-items").content.decode()
    assert "Prefers trains." in preferences and "Pick a hotel." not in preferences
    assert "Pick a hotel." in open_items and "Mark done" in open_items


def test_session_summaries_show_topic_and_open_items(signed_in, remember):
    remember(
        "Planned a trip to Annecy.",
        kind="session_summary",
        payload={"topic": "Weekend in Annecy", "open_items": ["Pick a hotel"]},
    )
    page = signed_in.get("/dashboard/?section=sessions").content.decode()
    assert "Weekend in Annecy" in page and "Pick a hotel" in page


def test_episodes_filter_by_type_topic_and_period(signed_in, remember):
    now = timezone.now()
    remember(
        "Decided to run a half-marathon.",
        kind="episode",
        occurred_at=now - timedelta(days=10),
        payload={"type": "decision", "topics": ["running"]},
    )
    remember(
        "Roadmap approved.",
        kind="episode",
        occurred_at=now - timedelta(days=40),
        payload={"type": "milestone", "topics": ["roadmap"]},
    )
    by_type = signed_in.get("/dashboard/?section=episodes&type=milestone").content.decode()
    by_topic = signed_in.get("/dashboard/?section=episodes&topic=running").content.decode()
    since = (now - timedelta(days=20)).date().isoformat()
    by_period = signed_in.get(f"/dashboard/?section=episodes&since={since}").content.decode()
    assert "Roadmap approved." in by_type and "half-marathon" not in by_type
    assert "half-marathon" in by_topic and "Roadmap" not in by_topic
    assert "half-marathon" in by_period and "Roadmap" not in by_period


def test_an_empty_mode_explains_what_memoryhub_is(signed_in, db):
    page = signed_in.get("/dashboard/").content.decode()
    assert "Nothing is remembered in the Personal mode yet" in page
    assert "long-term memory of the AI agents you use" in page


def test_pages_split_a_long_list(signed_in, user, personal, embedder):
    from memoryhub.actors import Actor
    from memoryhub.services.memories import NewMemory, remember_many

    remember_many(
        user=user,
        mode=personal,
        items=[NewMemory(kind="fact", content=f"Numbered fact {n:02d}.") for n in range(30)],
        actor=Actor.system("tests"),
        embedder=embedder,
    )
    first = signed_in.get("/dashboard/").content.decode()
    second = signed_in.get("/dashboard/?page=2").content.decode()
    assert first.count('class="memory kind-fact') == 25
    assert second.count('class="memory kind-fact') == 5
    assert "Page 2 of 2" in second


def test_an_unknown_mode_is_not_found(signed_in, db):
    assert signed_in.get("/dashboard/?mode=nope").status_code == 404


def test_another_users_custom_mode_is_not_found(signed_in, other_user):
    factories.mode_of(other_user, "secret-project")
    assert signed_in.get("/dashboard/?mode=secret-project").status_code == 404


def test_htmx_section_switch_returns_only_the_fragment(signed_in, remember):
    remember("Prefers trains.", kind="preference")
    response = signed_in.get("/dashboard/?section=preferences", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="memory-page"')
    assert "<html" not in body and "Prefers trains." in body


def test_a_paused_user_sees_the_banner(signed_in, user):
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    assert "Memory is paused." in signed_in.get("/dashboard/").content.decode()


def test_a_contradiction_offers_both_sides(signed_in, remember):
    remember("Lives in Lyon.", slot="location", confidence="high")
    remember("Lives in Paris.", slot="location", source="extracted", status="candidate")
    page = signed_in.get("/dashboard/").content.decode()
    assert "These disagree" in page
    assert "Keep this one" in page and "Use the new one" in page
