"""Pages of a signed-in person: never cached (Back must not bring deleted memory back), HEAD, icon."""

from __future__ import annotations

from django.contrib.staticfiles import finders


def test_a_signed_in_page_is_never_stored(client, user):
    client.force_login(user)
    response = client.get("/dashboard/")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    assert "HX-Request" in response["Vary"]


def test_an_htmx_fragment_is_never_stored_either(client, user):
    client.force_login(user)
    response = client.get("/dashboard/", headers={"HX-Request": "true"})
    assert "no-store" in response["Cache-Control"]


def test_the_public_landing_page_keeps_its_caching(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")


def test_htmx_keeps_no_history_snapshots(client, user):
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    assert '"historyCacheSize": 0' in page and '"refreshOnHistoryMiss": true' in page


def test_a_signed_in_page_answers_head(client, user):
    client.force_login(user)
    assert client.head("/dashboard/").status_code == 200


def test_every_page_names_its_icon_so_no_favicon_request_fails(client, user):
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in page
    assert finders.find("favicon.svg") is not None
