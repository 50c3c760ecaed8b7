"""dashboard/views/link.py: the link page refuses an account that has not confirmed the address."""

from __future__ import annotations

from allauth.account.models import EmailAddress

from memoryhub.actors import Actor
from memoryhub.models import UserLink
from memoryhub.services.user_links import issue_user_link
from memoryhub.services.users import create_user
from tests import factories


def test_an_unconfirmed_address_is_sent_to_confirm_it_first(client, workspace):
    agent = factories.make_agent(workspace, "assistant")[0]
    user = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    token = issue_user_link(
        user=user, agent=agent, email="dana@example.com", actor=Actor.system()
    ).token
    account = factories.make_user(email="dana@example.com")
    EmailAddress.objects.create(user=account, email=account.email, verified=False, primary=True)
    client.force_login(account)
    for response in (
        client.get(f"/dashboard/link/{token}/"),
        client.post(f"/dashboard/link/{token}/"),
    ):
        assert response.status_code == 403
        page = response.content.decode()
        assert "confirm your email address first" in page.lower()
        assert 'href="/accounts/email/"' in page
    assert UserLink.objects.get().used_at is None
