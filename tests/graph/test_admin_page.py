"""The staff page of a workspace graph: counts, top items, unanswered questions, runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from allauth.mfa.models import Authenticator
from django.utils import timezone

from memoryhub import graph
from memoryhub.models import AuditEntry, WorkspaceNodeType
from tests import factories
from tests.admin_forms import change_form_data

from .conftest import interact, item


@pytest.fixture
def admin_client(client, workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(staff)
    return client


@pytest.fixture
def small_graph(workspace, user):
    interact(workspace, user, "Rooms at the Lumiere?", items=[item("Hotel Lumiere")])
    interact(workspace, user, "Is the spa open?", composite=0.1)
    graph.decay_edges()
    graph.purge_transient_nodes(older_than=timezone.now() - timedelta(days=90))
    return workspace


def test_the_graph_page_shows_counts_top_items_unanswered_questions_and_runs(
    admin_client, small_graph
):
    response = admin_client.get(f"/admin-tools/graph/{small_graph.slug}/")
    assert response.status_code == 200
    page = response.content.decode()
    overview = response.context["overview"]
    assert dict(overview.node_counts) == {"item": 1, "query": 2, "response": 2}
    assert dict(overview.edge_counts) == {"answered_by": 2, "searched_for": 1}
    assert "Hotel Lumiere" in page
    assert "Is the spa open?" in page
    assert [run.kind for run in overview.runs] == ["purge", "decay"]
    # Below the threshold the admin still sees the lists, and is told insights are off.
    assert "Insights switch on at 50 nodes" in page


def test_looking_at_a_graph_is_audited(admin_client, small_graph):
    admin_client.get(f"/admin-tools/graph/{small_graph.slug}/")
    entry = AuditEntry.objects.get(action="graph.overview")
    assert entry.object_ids == [small_graph.slug]
    assert entry.channel == "admin"


def test_the_graph_list_links_every_workspace(admin_client, small_graph):
    response = admin_client.get("/admin-tools/graph/")
    assert response.status_code == 200
    assert f"/admin-tools/graph/{small_graph.slug}/" in response.content.decode()


def test_an_unknown_workspace_is_404(admin_client, small_graph):
    assert admin_client.get("/admin-tools/graph/no-such-workspace/").status_code == 404


@pytest.mark.parametrize("path", ["graph/", "graph/{slug}/"])
def test_the_graph_pages_are_refused_to_non_staff(client, user, small_graph, path):
    client.force_login(user)
    response = client.get("/admin-tools/" + path.format(slug=small_graph.slug))
    assert response.status_code == 403


def _workspace_form_data(client, workspace, slug, *, name="", is_transient=False):
    """The admin change form of the workspace as it stands, plus one new node type."""
    page = client.get(f"/admin/memoryhub/workspace/{workspace.pk}/change/")
    assert page.status_code == 200
    data = change_form_data(page)
    prefix = "graph_node_types"
    existing = list(WorkspaceNodeType.objects.filter(workspace=workspace).order_by("pk"))
    rows = [(str(t.pk), t.slug, t.name, t.is_transient) for t in existing]
    rows.append(("", slug, name, is_transient))
    data[f"{prefix}-TOTAL_FORMS"] = str(len(rows))
    data[f"{prefix}-INITIAL_FORMS"] = str(len(existing))
    for index, (pk, row_slug, row_name, row_transient) in enumerate(rows):
        data[f"{prefix}-{index}-id"] = pk
        data[f"{prefix}-{index}-workspace"] = str(workspace.pk)
        data[f"{prefix}-{index}-slug"] = row_slug
        data[f"{prefix}-{index}-name"] = row_name
        if row_transient:
            data[f"{prefix}-{index}-is_transient"] = "on"
    return data


def test_an_admin_declares_a_workspace_node_type_on_the_workspace_page(superuser_client, workspace):
    data = _workspace_form_data(superuser_client, workspace, "hotel", name="Hotel")
    response = superuser_client.post(f"/admin/memoryhub/workspace/{workspace.pk}/change/", data)
    assert response.status_code == 302, response.context["inline_admin_formsets"][0].formset.errors
    assert graph.declared_types(workspace) == {"hotel": False}
    data = _workspace_form_data(superuser_client, workspace, "spa-visit", is_transient=True)
    superuser_client.post(f"/admin/memoryhub/workspace/{workspace.pk}/change/", data)
    assert graph.declared_types(workspace) == {"hotel": False, "spa-visit": True}
    assert WorkspaceNodeType.objects.get(slug="spa-visit").name == "spa-visit"


@pytest.mark.parametrize(
    ("slug", "message"),
    [("query", "built-in node type"), ("Hotel", "lowercase slug")],
)
def test_the_admin_refuses_a_built_in_or_malformed_node_type(
    superuser_client, workspace, slug, message
):
    data = _workspace_form_data(superuser_client, workspace, slug)
    response = superuser_client.post(f"/admin/memoryhub/workspace/{workspace.pk}/change/", data)
    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    assert message in str(inline.formset.errors)
    assert graph.declared_types(workspace) == {}


def test_the_admin_refuses_a_node_type_declared_twice(superuser_client, workspace):
    graph.declare_node_type(workspace=workspace, slug="hotel")
    data = _workspace_form_data(superuser_client, workspace, "hotel")
    response = superuser_client.post(f"/admin/memoryhub/workspace/{workspace.pk}/change/", data)
    assert response.status_code == 200
    assert "duplicate" in str(response.context["inline_admin_formsets"][0].formset.errors)
    assert WorkspaceNodeType.objects.filter(workspace=workspace).count() == 1
