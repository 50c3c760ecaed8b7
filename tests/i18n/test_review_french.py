"""The review pages and the admin tools in French (issue 28), with English unchanged.

The browser's Accept-Language picks the language (LocaleMiddleware); the French comes from
locale/fr/LC_MESSAGES/parts/review.po and parts/admin_tools.po, compiled by the test session.
"""

from __future__ import annotations

import json

import pytest
from allauth.mfa.models import Authenticator
from django.core import mail
from django.urls import reverse
from django.utils import translation

from memoryhub.actors import Actor
from memoryhub.knowledge import answers as services
from memoryhub.knowledge.documents import publish_document
from memoryhub.models import ActorType, Channel, KnowledgeDocument, LearningCandidate
from memoryhub.services.agents import create_review_key
from review.notices import send_review_digests
from tests import factories
from tests.review.conftest import LOW_RETRIEVAL, make_reviewer

FR = {"HTTP_ACCEPT_LANGUAGE": "fr"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def reviewer(workspace):
    return make_reviewer(workspace)


@pytest.fixture
def reviewer_client(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def candidate(user, personal, embedder) -> LearningCandidate:
    agent = Actor(ActorType.AGENT, "test-agent", Channel.API, label="test agent")
    reported = services.report_answer(
        user=user,
        mode=personal,
        question="When does the Lyon store open?",
        answer="I could not find it.",
        signals=LOW_RETRIEVAL,
        actor=agent,
        embedder=embedder,
    )
    return reported.candidate


@pytest.fixture
def document(workspace, embedder):
    return publish_document(
        workspace=workspace,
        title="Hours",
        body="We open at nine.",
        source=KnowledgeDocument.Source.PASTED,
        embedder=embedder,
    )


@pytest.fixture
def admin_client(client, workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(staff)
    return client


def page(client, url, headers=FR):
    response = client.get(url, **headers)
    assert response.status_code == 200, url
    return response.content.decode()


# The review pages ---------------------------------------------------------------------------


def test_the_review_queue_is_in_french(reviewer_client, candidate):
    html = page(reviewer_client, reverse("review:queue"))
    assert "<h1>File de relecture</h1>" in html
    assert "1 en attente · les réponses dont la confiance est inférieure à" in html
    assert "Seuil de capture et taux d'approbation" in html  # The chart's caption.
    assert ">Classe d&#x27;échec</label>" in html  # A form label from review/forms.py.
    assert "Base de connaissances" in html and "Paramètres" in html  # The review subnav.
    assert f'href="{reverse("review:candidate_detail", args=[candidate.pk])}">Relire</a>' in html
    assert "Review queue" not in html and "Nothing to review" not in html


def test_the_review_queue_fragment_and_empty_state_are_in_french(reviewer_client, db):
    html = page(reviewer_client, reverse("review:queue") + "?kind=fact")
    assert "Rien à relire ici." in html


def test_a_candidate_page_is_in_french(reviewer_client, candidate):
    html = page(reviewer_client, reverse("review:candidate_detail", args=[candidate.pk]))
    assert "Pourquoi il a été capturé" in html
    # A low signal put into words by review/templatetags/review_words.py.
    assert "ce qui a été trouvé (mémoire, connaissances) ne correspondait pas" in html
    assert "<h2>Approuver et publier</h2>" in html
    assert "Réponse (ou fait)" in html  # ApproveForm's label.
    assert "La bonne réponse, pour cet utilisateur seulement" in html  # UserAnswerForm.
    assert ">Passer pour le moment</button>" in html
    assert "Why it was captured" not in html and "Approve and publish" not in html


def test_the_queue_and_a_candidate_name_a_default_mode_in_french(reviewer_client, candidate):
    queue = page(reviewer_client, reverse("review:queue"))
    assert '<span class="meta">Personnel · ' in queue
    detail = page(reviewer_client, reverse("review:candidate_detail", args=[candidate.pk]))
    assert " · mode Personnel · " in detail


def test_a_decision_flashes_a_french_message(reviewer_client, candidate):
    url = reverse("review:candidate_approve", args=[candidate.pk])
    response = reviewer_client.post(url, {"answer": "Nine to seven."}, follow=True, **FR)
    html = response.content.decode()
    assert "publié dans la base de connaissances." in html
    assert "to the knowledge base" not in html


def test_a_rejection_flashes_a_french_message(reviewer_client, candidate):
    url = reverse("review:candidate_reject", args=[candidate.pk])
    response = reviewer_client.post(url, {"reason": "Off topic."}, follow=True, **FR)
    assert "Rejeté." in response.content.decode()
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "rejected"


def test_the_knowledge_base_and_its_form_errors_are_in_french(reviewer_client, document):
    html = page(reviewer_client, reverse("review:knowledge_list"))
    assert "<h1>Base de connaissances</h1>" in html and ">publié</td>" in html
    response = reviewer_client.post(reverse("review:knowledge_add"), {"title": "Empty"}, **FR)
    assert response.status_code == 422
    assert "Collez du texte ou téléversez un fichier" in response.content.decode()
    html = page(reviewer_client, reverse("review:document_edit", args=[document.pk]))
    assert "Modifier un document de connaissances" in html and ">Enregistrer</button>" in html


def test_the_reviewer_settings_are_in_french(reviewer_client):
    html = page(reviewer_client, reverse("review:settings"))
    assert "<h1>Paramètres du relecteur</h1>" in html
    assert "Récapitulatif quotidien" in html and "Clés de relecteur" in html
    assert "Nom (par exemple : robot de relecture)" in html  # ReviewKeyForm's label.
    response = reviewer_client.post(reverse("review:digest"), {"is_on": "1"}, follow=True, **FR)
    assert "Récapitulatif quotidien activé." in response.content.decode()


def test_the_review_pages_stay_in_english_for_an_english_browser(reviewer_client, candidate):
    html = page(reviewer_client, reverse("review:queue"), EN)
    assert "<h1>Review queue</h1>" in html and "File de relecture" not in html
    html = page(reviewer_client, reverse("review:candidate_detail", args=[candidate.pk]), EN)
    assert "Why it was captured" in html and "Answer (or fact)" in html
    assert "what was found (memory, knowledge) did not fit the question" in html
    html = page(reviewer_client, reverse("review:settings"), EN)
    assert "<h1>Reviewer settings</h1>" in html and "Name (for example: review bot)" in html
    url = reverse("review:candidate_reject", args=[candidate.pk])
    response = reviewer_client.post(url, {"reason": "Off topic."}, follow=True, **EN)
    assert "Rejected." in response.content.decode()


def test_the_digest_subject_follows_the_reviewers_language(reviewer, candidate, workspace):
    reviewer.has_review_digest = True
    reviewer.language = "fr"
    reviewer.save(update_fields=["has_review_digest", "language"])
    mail.outbox.clear()
    with translation.override("en"):
        assert send_review_digests() == 1
    assert mail.outbox[0].subject == f"1 en attente de relecture dans {workspace.name}"


# The admin tools ----------------------------------------------------------------------------

ADMIN_PAGES = [
    ("admin_tools:health", "<h1>Santé de la mémoire</h1>", "Memory health"),
    ("admin_tools:audit_log", "<h1>Journal des accès</h1>", "Access audit"),
    ("admin_tools:roles", "<h1>Rôles</h1>", "Who holds a role"),
    ("admin_tools:graph_list", "<h1>Graphes de connaissances</h1>", "Knowledge graphs"),
    ("admin_tools:link_list", "<h1>Identifiants liés</h1>", "Linked logins"),
    ("admin_tools:webhook_list", "Ajouter un point de terminaison", "Add an endpoint"),
]


@pytest.mark.parametrize(("name", "french", "english"), ADMIN_PAGES)
def test_every_admin_tools_page_is_in_french(admin_client, name, french, english):
    html = page(admin_client, reverse(name))
    assert french in html
    assert 'aria-label="Outils d\'administration"' in html  # The subnav's label.
    assert english not in html
    assert english in page(admin_client, reverse(name), EN)


def test_the_admin_forms_and_graph_are_in_french(admin_client, workspace):
    html = page(admin_client, reverse("admin_tools:audit_log"))
    assert "Type d&#x27;acteur" in html and ">Filtrer</button>" in html
    html = page(admin_client, reverse("admin_tools:roles"))
    assert ">Rôle</label>" in html and "Accorder" in html
    assert 'data-label="Administrateur">oui</td>' in html  # yes/no in words, translated.
    html = page(admin_client, reverse("admin_tools:webhook_list"))
    assert "Inclure le texte des souvenirs" in html and "Journal des envois" in html
    html = page(admin_client, reverse("admin_tools:graph_detail", args=[workspace.slug]))
    assert "Graphe de connaissances de" in html and "0 nœud." in html


def test_an_admin_tools_message_is_in_french(admin_client, workspace, user):
    data = {
        "email": user.email,
        "role": "reviewer",
        "workspace": workspace.slug,
        "action": "grant",
    }
    response = admin_client.post(reverse("admin_tools:roles"), data, follow=True, **FR)
    html = response.content.decode()
    assert f"{user.email} est désormais" in html and f"de {workspace.slug}." in html
    response = admin_client.get(reverse("admin_tools:audit_log") + "?mode=work", **FR)
    assert "Indiquez aussi un utilisateur" in response.content.decode()


# Domain errors: review/decisions.py marks them (gettext_noop); the pages translate them -----


def test_a_decided_candidate_is_said_in_french_on_the_page(reviewer_client, candidate):
    url = reverse("review:candidate_approve", args=[candidate.pk])
    reviewer_client.post(url, {"answer": "Nine to seven."}, **FR)
    response = reviewer_client.post(url, {"answer": "Nine to seven."}, follow=True, **FR)
    html = response.content.decode()
    assert "ce candidat a déjà été tranché" in html and "already decided" not in html


def test_the_review_api_keeps_its_error_codes_english_for_a_french_caller(
    client, reviewer, candidate
):
    raw_key = create_review_key(
        reviewer=reviewer, name="bot", actor=Actor.for_user(reviewer.pk)
    ).raw_key
    headers = {"Authorization": f"Bearer {raw_key}", "Accept-Language": "fr"}
    path = f"/api/v1/review/candidates/{candidate.pk}/reject"
    body = json.dumps({"reason": "Off topic."})
    first = client.post(path, body, content_type="application/json", headers=headers)
    assert first.status_code == 200
    again = client.post(path, body, content_type="application/json", headers=headers)
    assert (again.status_code, again.json()["code"]) == (409, "conflict")
    # Only the words for a person follow Accept-Language (docs/i18n.md, "The agent API").
    assert again.json()["detail"] == "ce candidat a déjà été tranché"
    english = client.post(
        path, body, content_type="application/json", headers={**headers, "Accept-Language": "en"}
    )
    assert english.json() == {"detail": "this candidate was already decided", "code": "conflict"}
