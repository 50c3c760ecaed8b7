"""Admin tools, embedding models: staff choose a workspace's model and see what is left."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from memoryhub.embeddings import MINILM, MULTILINGUAL_E5, USE_MULTILINGUAL
from memoryhub.models import AuditEntry, Workspace
from tests import factories

pytestmark = pytest.mark.django_db
PAGE = "/admin-tools/embedding-models/"


def _staff(workspace, *, is_staff=True):
    person = factories.make_user(workspace=workspace, email="root@example.com")
    person.is_staff = is_staff
    person.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=person, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client = Client()
    client.force_login(person)
    return client


def test_staff_choose_a_workspace_model_and_see_its_vectors_left(
    workspace, user, personal, embedder
):
    factories.make_memory(user, personal, "Mon chien s'appelle Filou.", embedder=embedder)
    admin = _staff(workspace)
    page = admin.get(PAGE)
    assert page.status_code == 200
    row = page.content.decode().split(f'id="embedding-model-{workspace.slug}"')[1].split("</tr>")[0]
    assert MINILM in row and "(default)" in row
    # The measured trade-off is on the page, every model offered.
    trade_off = page.content.decode().split('id="embedding-trade-off"')[1]
    assert "0.625 / 0.800" in trade_off and USE_MULTILINGUAL in trade_off
    assert f'<option value="{USE_MULTILINGUAL}"' in row

    changed = admin.post(f"{PAGE}{workspace.slug}/", {"model": USE_MULTILINGUAL}, follow=True)

    assert Workspace.objects.get(pk=workspace.pk).embedding_model == USE_MULTILINGUAL
    text = changed.content.decode()
    assert f"manage.py reembed --workspace {workspace.slug}" in text
    row = text.split(f'id="embedding-model-{workspace.slug}"')[1].split("</tr>")[0]
    assert '<td data-label="Left to re-embed">1</td>' in row
    assert AuditEntry.objects.filter(action="workspace.embedding_model").count() == 1

    admin.post(f"{PAGE}{workspace.slug}/", {"model": ""})
    assert Workspace.objects.get(pk=workspace.pk).embedding_model == ""


def test_an_unknown_model_changes_nothing_and_only_staff_may_change(workspace):
    admin = _staff(workspace)
    admin.post(f"{PAGE}{workspace.slug}/", {"model": "word2vec"})
    assert Workspace.objects.get(pk=workspace.pk).embedding_model == ""

    person = factories.make_user(workspace=workspace, email="bob@example.com")
    client = Client()
    client.force_login(person)
    refused = client.post(f"{PAGE}{workspace.slug}/", {"model": MULTILINGUAL_E5})
    assert refused.status_code in (302, 403)
    assert Workspace.objects.get(pk=workspace.pk).embedding_model == ""
