"""The staff page of a workspace graph: counts, top items, unanswered questions, runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from allauth.mfa.models import Authenticator
from django.utils import timezone

from memoryhub.models import AuditEntry
from memoryhub.services import graph
from tests import factories

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
