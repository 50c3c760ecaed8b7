"""What was still English on French pages: model choice labels, relative times and dates, the
script's words, domain error messages and an import's receipt (issue 28).

English stays as it was; the API keeps its English messages (`str(error)`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_noop

from dashboard.templatetags.import_words import failure_detail, skip_reason, skipped_item
from dashboard.templatetags.memory_words import when
from memoryhub.actors import Actor
from memoryhub.errors import InvalidInputError
from memoryhub.knowledge import answers
from memoryhub.models import ActorType, Channel
from memoryhub.services.write_checks import check_content
from tests import factories
from tests.review.conftest import LOW_RETRIEVAL, make_reviewer

FR = {"HTTP_ACCEPT_LANGUAGE": "fr"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
APP_JS = Path(settings.BASE_DIR) / "static" / "js" / "app.js"
NOW = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


def test_every_word_of_the_script_comes_from_the_page_in_french(signed_in, personal):
    page = signed_in.get("/dashboard/", **FR).content.decode()
    script = APP_JS.read_text(encoding="utf-8")
    names = [part.split('"', 1)[0] for part in script.split('said("')[1:]]
    assert sorted(names) == ["failed", "undo", "undo-hint", "undone"]
    for name in names:
        assert f'data-text-{name}="' in page
    assert 'data-text-undo="Annuler l’action"' in page
    assert 'data-text-undone="Action annulée : rien n’a été supprimé."' in page
    english = signed_in.get("/dashboard/", **EN).content.decode()
    assert 'data-text-undo="Undo"' in english


def test_the_search_count_the_script_keeps_is_in_french(signed_in, user, personal, embedder):
    factories.make_memory(user, personal, "Drinks green tea every morning.", embedder=embedder)
    page = signed_in.get("/dashboard/modes/personal/search/?q=tea", **FR).content.decode()
    assert 'data-none="Plus aucun résultat proche pour “tea”."' in page
    assert 'data-many="{count} résultats proches pour “tea”, les meilleurs en premier."' in page


def test_a_choice_label_is_in_french_on_the_review_queue(
    client, workspace, user, personal, embedder
):
    reported = answers.report_answer(
        user=user,
        mode=personal,
        question="When does the Lyon store open?",
        answer="I could not find it.",
        signals=LOW_RETRIEVAL,
        actor=Actor(ActorType.AGENT, "test-agent", Channel.API, label="test agent"),
        embedder=embedder,
    )
    client.force_login(make_reviewer(workspace))
    page = client.get("/review/", **FR).content.decode()
    assert '<span class="kind">Recherche infructueuse</span>' in page
    assert ">Avis négatif</option>" in page and ">En attente</option>" in page
    english = client.get("/review/", **EN).content.decode()
    assert '<span class="kind">Retrieval miss</span>' in english
    detail = client.get(f"/review/candidates/{reported.candidate.pk}/", **FR).content.decode()
    assert "<h1>Recherche infructueuse</h1>" in detail and "<dt>recherche</dt>" in detail
    assert "<strong>recherche faible</strong>" in detail


def test_relative_times_and_dates_are_in_french():
    with time_machine.travel(NOW, tick=False):
        with translation.override("fr"):
            assert when(NOW - timedelta(seconds=10)) == "à l’instant"
            # Django's timesince counts with ngettext, a no-break space before the unit.
            assert when(NOW - timedelta(minutes=5)) == "il y a 5\xa0minutes"
            assert when(NOW - timedelta(hours=1)) == "il y a 1\xa0heure"
            assert when(NOW - timedelta(days=3)) == "1 déc. 2026, 15:00"
            assert when(None) == "jamais"
        with translation.override("en"):
            assert when(NOW - timedelta(minutes=5)) == "5\xa0minutes ago"
            assert when(NOW - timedelta(days=3)) == "1 Dec 2026, 15:00"


def test_a_memory_saved_moments_ago_says_so_in_french(signed_in, user, personal, embedder):
    factories.make_memory(user, personal, "Lives in Lyon.", embedder=embedder)
    page = signed_in.get("/dashboard/", **FR).content.decode()
    assert "à l’instant</time>" in page


def test_a_domain_error_on_a_page_is_in_french_and_stays_english_for_the_api(signed_in):
    page = signed_in.post("/dashboard/modes/", {"name": "!!!"}, follow=True, **FR)
    assert "un mode a besoin d’un nom fait de lettres ou de chiffres" in page.content.decode()
    english = signed_in.post("/dashboard/modes/", {"name": "!!!"}, follow=True, **EN)
    assert "a mode needs a name with letters or digits" in english.content.decode()


def test_a_marked_error_keeps_its_english_and_says_it_in_the_readers_language():
    with pytest.raises(InvalidInputError) as caught:
        check_content("   ")
    error = caught.value
    assert str(error) == "content must not be empty"  # The API's detail.
    with translation.override("fr"):
        assert error.in_words() == "le texte ne doit pas être vide"
        assert str(error) == "content must not be empty"
        unmarked = InvalidInputError(gettext_noop("no such {thing}"), thing="spoon")
        assert unmarked.in_words() == "no such spoon"  # Not in the catalogue: as raised.
        assert InvalidInputError().in_words() == ""


def test_an_imports_skipped_items_and_failure_are_in_french():
    with translation.override("fr"):
        assert skip_reason("already imported") == "déjà importé"
        # A default mode by its name in French; a mode the user named, as named.
        assert (
            skip_reason("memory is off in mode work")
            == "la mémoire est désactivée dans le mode Travail"
        )
        assert (
            skip_reason("memory is off in mode side-project")
            == "la mémoire est désactivée dans le mode side-project"
        )
        assert skip_reason("content is 70000 bytes; the limit is 65536 bytes") == (
            "le texte dépasse la taille permise"
        )
        assert skip_reason("something new") == "something new"
        assert skipped_item("mode work, memory 3") == "mode Travail, souvenir 3"
        assert skipped_item("mode side-project, memory 3") == "mode side-project, souvenir 3"
        assert skipped_item("conversation 2, message 5") == "conversation 2, message 5"
        assert skipped_item("session abc") == "conversation abc"
        assert failure_detail("the file is empty") == "le fichier est vide"
        assert failure_detail("") == ""
    with translation.override("en"):
        assert skip_reason("already imported") == "already imported"
        assert skipped_item("mode work, memory 3") == "mode Work, memory 3"
