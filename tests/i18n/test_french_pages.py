"""The page shell, the account pages (ours and allauth's) and the emails, in French (issue 28).

Without a choice the browser's Accept-Language decides (LocaleMiddleware); the switch in the
header and in account settings keeps the choice in a cookie (and on the account: see
test_person_language.py). An email to a person with no language kept is in the language
active when it is queued (the request's); the daily review digest, sent by a task, is in the
reviewer's language, else the default one.
"""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.conf import settings
from django.core import mail
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.formats import date_format

from accounts.forms import DeleteAccountForm
from memoryhub.actors import Actor
from memoryhub.knowledge.answers import report_answer
from memoryhub.models import ActorType, Channel
from memoryhub.services.user_links import issue_user_link, link_user
from memoryhub.services.users import create_user
from review.notices import send_review_digests
from tests import factories
from tests.review.conftest import LOW_RETRIEVAL, make_reviewer

PASSWORD = "correct horse battery staple"
FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr-FR,fr;q=0.9,en;q=0.5"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-GB,en;q=0.9"}


def _page(client, url, **headers):
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def _log_in(client, user, **headers):
    response = client.post(
        reverse("account_login"), {"login": user.email, "password": PASSWORD}, **headers
    )
    assert response.status_code == 302


# Accept-Language decides when nothing was chosen.


def test_the_login_page_reads_in_french_for_a_french_browser(client, db):
    page = _page(client, reverse("account_login"), **FRENCH)
    assert '<html lang="fr">' in page
    assert "Se connecter" in page and "S'inscrire" in page  # Our header.
    assert "Mot de passe" in page  # allauth's own form, through its catalogue.
    assert "Sign up" not in page and "Skip to content" not in page


def test_the_login_page_stays_english_for_an_english_browser(client, db):
    page = _page(client, reverse("account_login"), **ENGLISH)
    assert '<html lang="en">' in page and "Log in" in page and "Sign up" in page
    assert "Se connecter" not in page


def test_signup_and_password_reset_read_in_french(client, db):
    signup = _page(client, reverse("account_signup"), **FRENCH)
    assert "Inscription" in signup and "Adresse e-mail" in signup
    reset = _page(client, reverse("account_reset_password"), **FRENCH)
    assert "Mot de passe oublié" in reset


def test_the_password_reset_email_is_french_end_to_end(client, user):
    mail.outbox.clear()
    client.post(reverse("account_reset_password"), {"email": user.email}, **FRENCH)
    [email] = mail.outbox
    assert "Bonjour de la part de MemoryHub !" in email.body  # Our base_message.txt.
    assert "Merci d'utiliser MemoryHub." in email.body
    assert "mot de passe" in email.body.lower()  # allauth's own text, in French.
    assert "Hello from MemoryHub" not in email.body


def test_the_sign_up_confirmation_email_is_french(client, db):
    mail.outbox.clear()
    response = client.post(
        reverse("account_signup"),
        {"email": "zoe@example.com", "password1": PASSWORD, "password2": PASSWORD},
        **FRENCH,
    )
    assert response.status_code == 302
    [email] = mail.outbox
    assert email.subject == "[MemoryHub] Confirmez votre adresse e-mail"  # allauth's subject.
    assert "a donné cette adresse e-mail pour s'inscrire à MemoryHub" in email.body
    assert "Si ce n'était pas vous, ignorez cet e-mail" in email.body


def test_the_two_factor_page_explains_why_in_french(client, workspace):
    reviewer = make_reviewer(workspace, has_totp=False)
    _log_in(client, reviewer, **FRENCH)
    response = client.get(reverse("review:queue"), follow=True, **FRENCH)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("mfa_activate_totp")
    assert "Pourquoi la double authentification ?" in page
    assert "En tant que relecteur" in page and "file de relecture ne s'ouvre" in page
    assert "Activer l'application d'authentification" in page  # allauth's heading.
    assert "doivent activer la double authentification" in page  # The message of roles.py.


def test_the_settings_page_reads_in_french_with_the_switch_on_french(client, user):
    client.force_login(user)
    page = _page(client, reverse("dashboard:settings"), **FRENCH)
    assert "<h1>Paramètres</h1>" in page and "Mettre la mémoire en pause" in page
    assert "Autres réglages" in page and "Qui a consulté ma mémoire" in page
    assert 'id="language-settings"' in page and 'id="language-header"' in page
    assert '<option value="fr" lang="fr" selected>Français</option>' in page
    assert '<option value="en" lang="en">English</option>' in page
    assert "Pause memory" not in page and "More controls" not in page


def test_the_header_and_the_paused_banner_in_french(client, user):
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    client.force_login(user)
    page = _page(client, reverse("dashboard:settings"), **FRENCH)
    assert "Souvenirs" in page and "Clés" in page and "Qui a consulté" in page
    assert "Se déconnecter" in page and "La mémoire est en pause." in page


def test_a_missing_page_says_so_in_french(client, user):
    client.force_login(user)
    response = client.get("/dashboard/nowhere-at-all/", **FRENCH)
    assert response.status_code == 404
    page = response.content.decode()
    assert "Rien ici" in page and "Retour à vos souvenirs" in page


# The switch: set_language keeps the choice, which wins over Accept-Language.


def test_the_switch_sets_the_language_and_returns_to_the_same_page(client, user):
    client.force_login(user)
    settings_url = reverse("dashboard:settings")
    response = client.post(reverse("set_language"), {"language": "fr", "next": settings_url})
    assert response.status_code == 302 and response["Location"] == settings_url
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    assert "<h1>Paramètres</h1>" in _page(client, settings_url)  # No Accept-Language at all.

    client.post(reverse("set_language"), {"language": "en", "next": settings_url})
    page = _page(client, settings_url, **FRENCH)  # The choice beats the browser.
    assert "<h1>Settings</h1>" in page and '<html lang="en">' in page


def test_a_language_the_hub_does_not_speak_is_not_served(client, db):
    # Django has a German catalogue, so set_language keeps "de"; LANGUAGES has no German, so
    # LocaleMiddleware passes over it to Accept-Language, then to English.
    client.post(reverse("set_language"), {"language": "de", "next": "/"})
    assert '<html lang="en">' in _page(client, "/")
    assert '<html lang="fr">' in _page(client, "/", **FRENCH)


def test_every_page_has_the_switch_in_its_header(client, db):
    page = _page(client, "/", **FRENCH)
    assert f'action="{reverse("set_language")}"' in page
    assert '<input type="hidden" name="next" value="/">' in page


# Python strings and emails.


def test_the_delete_account_form_speaks_french(user):
    with translation.override("fr"):
        form = DeleteAccountForm({"password": "wrong"}, user=user)
        assert not form.is_valid()
        assert form.errors["password"] == ["Ce n'est pas votre mot de passe."]
        assert str(form.fields["password"].label) == "Votre mot de passe"


def _linked_notice(workspace, django_capture_on_commit_callbacks, language):
    agent = factories.make_agent(workspace, "assistant")[0]
    agent_user = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    email = "dana@example.com"
    link = issue_user_link(user=agent_user, agent=agent, email=email, actor=Actor.system())
    account = factories.make_user(workspace=factories.make_workspace("default"), email=email)
    EmailAddress.objects.create(user=account, email=email, verified=True, primary=True)
    mail.outbox.clear()
    with translation.override(language), django_capture_on_commit_callbacks(execute=True):
        link_user(token=link.token, account=account)
    [notice] = mail.outbox
    return notice


def test_the_user_linked_email_follows_the_language_of_the_request(
    workspace, django_capture_on_commit_callbacks
):
    notice = _linked_notice(workspace, django_capture_on_commit_callbacks, "fr")
    assert (
        notice.subject == "Votre identifiant ouvre désormais la mémoire qu'un agent garde de vous"
    )
    assert notice.body.startswith("Bonjour,")
    assert "l'agent « assistant »" in notice.body and "annuler le lien" in notice.body
    with translation.override("fr"):
        month = date_format(timezone.now(), "F")  # "décembre": the date is written in French.
    assert notice.body.split("\n")[2].startswith("Le ") and f" {month} " in notice.body


def test_the_user_linked_email_is_english_by_default(workspace, django_capture_on_commit_callbacks):
    notice = _linked_notice(workspace, django_capture_on_commit_callbacks, "en")
    assert notice.subject == "Your login now reaches an agent's memory of you"
    assert 'the agent "assistant"' in notice.body


@pytest.fixture
def one_answer_waiting(user, personal, embedder):
    """A low-confidence answer, reported by an agent as in tests/review."""
    report_answer(
        user=user,
        mode=personal,
        question="Which courier delivers to Corsica?",
        answer="No idea.",
        signals=LOW_RETRIEVAL,
        actor=Actor(ActorType.AGENT, "test-agent", Channel.API, label="test agent"),
        embedder=embedder,
    )


def test_the_review_digest_is_in_the_reviewers_own_language(workspace, one_answer_waiting):
    translation.deactivate()  # As in a Celery worker: no request ever activated a language.
    reviewer = make_reviewer(workspace)
    reviewer.has_review_digest = True
    reviewer.language = "fr"  # Chosen with the switch (tests/i18n/test_language_kept.py).
    reviewer.save(update_fields=["has_review_digest", "language"])
    mail.outbox.clear()
    assert send_review_digests() == 1
    [email] = mail.outbox
    assert email.subject == f"1 en attente de relecture dans {workspace.name}"
    assert "1 réponse à faible confiance :" in email.body and "0 fait proposé :" in email.body
    assert "La file de relecture :" in email.body


def test_the_review_digest_of_a_reviewer_without_a_language_is_in_the_default_one(
    workspace, one_answer_waiting
):
    reviewer = make_reviewer(workspace)
    reviewer.has_review_digest = True
    reviewer.save(update_fields=["has_review_digest"])
    mail.outbox.clear()
    with translation.override("fr"):  # Whatever is active where the task runs.
        assert send_review_digests() == 1
    [email] = mail.outbox
    assert "1 low-confidence answer:" in email.body and "0 proposed facts:" in email.body


def test_the_consent_page_names_each_mode_scope_in_the_active_language():
    from accounts.oidc import OIDCAdapter
    from memoryhub.mcp.oauth import MODE_SCOPE_PREFIX

    scope = f"{MODE_SCOPE_PREFIX}work"
    with translation.override("fr"):
        assert str(OIDCAdapter.scope_display[scope]) == (
            "Lire et écrire votre mémoire dans le mode Travail"
        )
    with translation.override("en"):
        assert str(OIDCAdapter.scope_display[scope]) == (
            "Read and write your memory in the Work mode"
        )
