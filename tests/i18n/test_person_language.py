"""A person's language is kept on their account, so that emails sent without a request follow it.

The switch keeps the choice of a signed-in person; a person who never chose keeps their
browser's language at sign-in; the review digest (a Celery task) and the login notices are
written in it (memoryhub/notices.py, review/notices.py).
"""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.conf import settings
from django.core import mail
from django.utils import translation

from memoryhub.actors import Actor
from memoryhub.errors import InvalidInputError
from memoryhub.models import User
from memoryhub.services.preferences import set_language
from memoryhub.services.user_links import issue_user_link, link_user
from memoryhub.services.users import create_user
from tests import factories

PASSWORD = "correct horse battery staple"


def _language_of(person: User) -> str:
    return User.objects.get(pk=person.pk).language


def test_the_switch_keeps_the_choice_of_a_signed_in_person(client, user):
    client.force_login(user)
    response = client.post("/i18n/setlang/", {"language": "fr", "next": "/dashboard/settings/"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/settings/"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    assert _language_of(user) == "fr"
    client.post("/i18n/setlang/", {"language": "en", "next": "/dashboard/"})
    assert _language_of(user) == "en"


def test_the_switch_works_signed_out_and_ignores_a_language_the_hub_does_not_offer(client, user):
    response = client.post("/i18n/setlang/", {"language": "fr", "next": "/"})
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    client.force_login(user)
    client.post("/i18n/setlang/", {"language": "de", "next": "/"})
    assert _language_of(user) == ""


def test_the_switch_asks_for_a_post(client):
    assert client.get("/i18n/setlang/?language=fr").status_code == 405


def test_a_person_who_never_chose_keeps_the_browsers_language_at_sign_in(client, user):
    client.post(
        "/accounts/login/", {"login": user.email, "password": PASSWORD}, HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert "_auth_user_id" in client.session
    assert _language_of(user) == "fr"


def test_a_browser_that_says_no_language_keeps_none(client, user):
    client.post("/accounts/login/", {"login": user.email, "password": PASSWORD})
    assert "_auth_user_id" in client.session
    assert _language_of(user) == ""


def test_a_chosen_language_wins_over_the_browser_at_sign_in(client, user):
    set_language(user=user, language="fr")
    response = client.post(
        "/accounts/login/", {"login": user.email, "password": PASSWORD}, HTTP_ACCEPT_LANGUAGE="en"
    )
    assert _language_of(user) == "fr"
    # The pages follow the kept choice on this browser too.
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "fr"
    page = client.get("/dashboard/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="fr">' in page


def test_a_language_the_hub_does_not_offer_is_refused(user):
    with pytest.raises(InvalidInputError):
        set_language(user=user, language="de")


def test_the_linked_email_is_in_the_persons_language_whatever_the_request(
    workspace, django_capture_on_commit_callbacks
):
    agent = factories.make_agent(workspace, "assistant")[0]
    agent_user = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    email = "dana@example.com"
    link = issue_user_link(user=agent_user, agent=agent, email=email, actor=Actor.system())
    account = factories.make_user(workspace=factories.make_workspace("default"), email=email)
    set_language(user=account, language="fr")
    EmailAddress.objects.create(user=account, email=email, verified=True, primary=True)
    mail.outbox.clear()
    with translation.override("en"), django_capture_on_commit_callbacks(execute=True):
        linked = link_user(token=link.token, account=account)
    [notice] = mail.outbox
    assert notice.subject.startswith("Votre identifiant ouvre désormais")
    assert _language_of(linked) == "fr"  # The language goes with the login.
