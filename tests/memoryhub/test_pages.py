"""The minimal pages: landing, and the demo data visible on the dashboard."""

from __future__ import annotations

from django.core.management import call_command

from memoryhub.models import Agent, User


def test_landing_page_explains_memoryhub(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert b"MemoryHub" in response.content


def test_dashboard_redirects_anonymous_visitors_to_login(client, db):
    response = client.get("/dashboard/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_demo_data_is_visible_on_the_dashboard_per_mode(client, db, capsys, settings):
    settings.DEBUG = True  # The demo account only exists in development.
    call_command("load_demo")
    output = capsys.readouterr().out
    assert "demo@example.com" in output
    key_line = [line for line in output.splitlines() if "API key" in line][0]
    assert key_line.split()[-1].startswith("mh_")
    user = User.objects.get(email="demo@example.com")
    assert user.external_id == "demo-user"
    assert user.workspace.slug == "demo"
    assert Agent.objects.filter(workspace__slug="demo").exists()
    assert client.login(email="demo@example.com", password="memoryhub-demo")
    personal = client.get("/dashboard/?mode=personal").content.decode()
    work = client.get("/dashboard/?mode=work").content.decode()
    assert "Lyon" in personal and "Hexa Logistics" not in personal
    assert "Hexa Logistics" in work and "peanuts" not in work


def test_load_demo_twice_reuses_the_data(db, capsys, settings):
    settings.DEBUG = True
    call_command("load_demo")
    call_command("load_demo")
    assert User.objects.filter(email="demo@example.com").count() == 1


def test_create_agent_prints_the_key_alone_on_the_last_line(db, capsys):
    call_command("create_agent", "helper-bot", "--workspace", "brand-new")
    last_line = capsys.readouterr().out.strip().splitlines()[-1]
    assert last_line.startswith("mh_") and " " not in last_line
    assert Agent.objects.get(name="helper-bot").workspace.slug == "brand-new"
