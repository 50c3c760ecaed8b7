"""A French browser walks the main pages (issue 28), leaving french-*.png in test-artifacts/.

The browser says fr-FR (its Accept-Language), so nothing is chosen and LocaleMiddleware picks
French. Each page must say lang="fr" and carry the header and the switch in French; the page
bodies of the dashboard and review areas are translated by their own parts, so only the page
shell, the login, the Undo that the script offers and the settings page are checked word for
word here. At the end the switch turns the page to English, on the same address, over the
browser's French.
"""

from __future__ import annotations

import pytest
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
    yield_hotp_counters_from_time,
)
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from accounts.roles import REVIEWERS_GROUP
from tests import factories

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery staple"
# Address, what the page is (for the screenshot's name).
DASHBOARD_PAGES = [
    ("/dashboard/", "memories"),
    ("/dashboard/modes/personal/search/?q=th%C3%A9", "search"),
    ("/dashboard/modes/personal/forget/", "forget"),
    ("/dashboard/agents/", "agents"),
    ("/dashboard/keys/", "keys"),
    ("/dashboard/imports/", "imports"),
    ("/dashboard/access/", "access-log"),
    ("/dashboard/settings/", "settings"),
    ("/review/", "review-queue"),
]


@pytest.fixture
def french_page(browser):
    context = browser.new_context(locale="fr-FR", viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def reviewer(workspace, embedder):
    """A reviewer with an authenticator app (the review queue asks for one) and a memory."""
    person = factories.make_user(workspace=workspace, email="rita@example.com")
    person.groups.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0])
    secret = generate_totp_secret()
    TOTP.activate(person, secret)
    factories.make_memory(
        person, factories.mode_of(person, "personal"), "Prefers green tea", embedder=embedder
    )
    return person, secret


def shot(page, artifacts, name):
    page.screenshot(path=str(artifacts / f"french-{name}.png"), full_page=True)


def expect_french_shell(page):
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    nav = page.get_by_role("navigation", name="Principale")
    for link in ("Souvenirs", "Agents", "Clés", "Qui a consulté", "Paramètres", "Relecture"):
        expect(nav.get_by_role("link", name=link, exact=True)).to_be_visible()
    expect(nav.get_by_role("button", name="Se déconnecter")).to_be_visible()
    expect(page.locator("#language-header")).to_have_value("fr")


def test_a_french_browser_walks_the_main_pages_in_french(
    french_page, live_server, artifacts, reviewer
):
    page = french_page
    person, secret = reviewer
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("heading", level=1)).to_have_text("Connexion")
    expect(page.get_by_role("link", name="S'inscrire")).to_be_visible()
    shot(page, artifacts, "login")
    page.get_by_label("E-mail").fill(person.email)
    page.get_by_label("Mot de passe").fill(PASSWORD)
    page.get_by_role("button", name="Connexion").click()
    # allauth asks for the authenticator code, in French too.
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    shot(page, artifacts, "two-factor-code")
    code = format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))
    page.locator("input[name=code]").fill(code)
    page.get_by_role("button", name="Connexion").click()
    page.wait_for_url(f"{live_server.url}/dashboard/")

    for address, name in DASHBOARD_PAGES:
        page.goto(f"{live_server.url}{address}")
        expect_french_shell(page)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        shot(page, artifacts, name)

    # The script's words come from the page: Undo and its messages in French.
    page.goto(f"{live_server.url}/dashboard/")
    page.locator("li.memory").first.get_by_role("link", name="Supprimer", exact=True).click()
    undo = page.locator(".undo-notice").get_by_role("button", name="Annuler l’action")
    expect(undo).to_be_visible()
    expect(page.locator("#messages")).to_contain_text("Vous pouvez l’annuler pendant quelques")
    shot(page, artifacts, "undo")
    undo.click()
    expect(page.locator("#messages")).to_contain_text("Action annulée : rien n’a été supprimé.")

    page.goto(f"{live_server.url}/dashboard/settings/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Paramètres")
    expect(page.get_by_role("heading", name="Mettre la mémoire en pause")).to_be_visible()
    expect(page.get_by_role("heading", name="Autres réglages")).to_be_visible()
    expect(page.locator("#language-settings")).to_have_value("fr")
    # A default mode by its French name; its stored name, "Personal", is left as it is.
    expect(page.get_by_role("button", name="Désactiver la mémoire dans Personnel")).to_be_visible()

    # The switch in account settings: English, on the same page, over the browser's French.
    page.locator("#language-settings").select_option("en")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert page.url == f"{live_server.url}/dashboard/settings/"
    expect(page.get_by_role("heading", level=1)).to_have_text("Settings")
    expect(page.get_by_role("button", name="Turn memory off in Personal")).to_be_visible()
    expect(
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Memories")
    ).to_be_visible()
    expect(page.locator("#language-header")).to_have_value("en")
    shot(page, artifacts, "switched-to-english")

    # English stays chosen on the next page; the header's switch brings French back.
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.locator("#language-header").select_option("fr")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    assert page.url == f"{live_server.url}/review/"
    expect_french_shell(page)
