"""The dashboard's full pages in French (issue 28), and the same pages still in English.

Each page is asked for as a French browser asks (Accept-Language: fr) and must show its heading
and main buttons in French; counted sentences must read right for one and for several. The
pages' partials, forms and view messages belong to the "dashboard" part and are not checked here.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone, translation

from memoryhub.actors import Actor
from memoryhub.models import ImportJob
from memoryhub.services.agents import create_personal_key
from memoryhub.services.sessions import add_message, start_session
from memoryhub.services.user_links import issue_user_link
from memoryhub.services.users import create_user
from tests import factories
from tests.imports.files import as_bytes, mem0_memories

FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en"}
FORGET = "/dashboard/modes/personal/forget/"


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def remember(user, personal, embedder):
    def make(content, **fields):
        return factories.make_memory(user, personal, content, embedder=embedder, **fields)

    return make


def french(client, url: str) -> str:
    response = client.get(url, **FRENCH)
    assert response.status_code == 200, url
    assert response["Content-Language"] == "fr"
    return response.content.decode()


def english(client, url: str) -> str:
    response = client.get(url, **ENGLISH)
    assert response.status_code == 200, url
    return response.content.decode()


def item_url(personal, memory, action: str = "") -> str:
    return f"/dashboard/modes/{personal.slug}/memories/{memory.pk}/{action}"


def test_the_memory_list_in_french(signed_in, remember):
    remember("Lives in Lyon.")
    page = french(signed_in, "/dashboard/")
    assert "<h1>Ce que les agents retiennent de vous</h1>" in page
    assert ">Rechercher dans le mode Personnel</label>" in page
    assert 'placeholder="un nom, un lieu, un sujet…"' in page
    assert 'aria-label="Recherche et commandes"' in page
    for button in (
        ">Rechercher</button>",
        ">Oublier la dernière heure</a>",
        ">Oublier une période ou un sujet</a>",
        ">Exporter en JSON</a>",
        ">Tout supprimer…</a>",
    ):
        assert button in page, button
    assert "What agents remember about you" not in page and "Export as JSON" not in page


def test_candidates_waiting_beyond_the_first_five_are_counted_in_french(signed_in, remember):
    for number in range(6):
        remember(f"Might take up sport number {number}.", source="extracted", status="candidate")
    page = french(signed_in, "/dashboard/")
    assert "Est-ce juste ?" in page
    assert "6 souvenirs attendent en tout ; répondez à ceux-ci pour voir les suivants." in page
    english_page = english(signed_in, "/dashboard/")
    assert "6 items are waiting in all; answer these to see the next ones." in english_page


def test_the_waiting_count_reads_right_for_one_in_french():
    # The page shows it only past five candidates; the catalogue's singular is checked here.
    singular = "%(total)s item is waiting in all; answer these to see the next ones."
    plural = "%(total)s items are waiting in all; answer these to see the next ones."
    with translation.override("fr"):
        assert translation.ngettext(singular, plural, 1) % {"total": 1} == (
            "1 souvenir attend en tout ; répondez à ceux-ci pour voir les suivants."
        )
        assert translation.ngettext(singular, plural, 0).startswith("%(total)s souvenir attend")


def test_memory_off_and_temporary_conversations_in_french(
    signed_in, user, personal, workspace, remember
):
    remember("Lives in Lyon.")
    agent, _ = factories.make_agent(workspace, "travel bot")
    start_session(user=user, mode=personal, actor=Actor.system("tests"), agent=agent,
                  is_incognito=True)  # fmt: skip
    signed_in.post("/dashboard/modes/personal/memory/", {"is_off": "on"})
    page = french(signed_in, "/dashboard/?mode=personal")
    assert "La mémoire est désactivée dans le mode" in page
    assert ">Activer la mémoire</button>" in page
    assert "Conversations temporaires" in page
    assert "Agent “travel bot” · commencée <time" in page and "<strong>en cours</strong>" in page


def test_the_search_page_in_french(signed_in, remember):
    remember("Lives in Lyon.")
    page = french(signed_in, "/dashboard/modes/personal/search/?q=Lyon")
    assert "<h1>Rechercher dans le mode Personnel</h1>" in page
    assert "Rechercher · Personnel · MemoryHub" in page
    assert "Que cherchez-vous ?" in page and ">Rechercher</button>" in page
    assert "← Retour au mode" in page
    assert "“pas encore sûr”" in page
    assert "<h1>Search the" in english(signed_in, "/dashboard/modes/personal/search/?q=Lyon")


def test_the_forget_page_in_french(signed_in, remember):
    remember("Recent thing.")
    page = french(signed_in, f"{FORGET}?what=last-hour")
    assert "<h1>Oublier dans le mode" in page
    for text in (
        "Oublier est définitif",
        '<h2 id="forget-hour-title">Oublier la dernière heure</h2>',
        ">Oui, oublier la dernière heure</button>",
        '<h2 id="forget-period-title">Oublier une période</h2>',
        "<strong>a appris</strong>",
        ">Voir ce que contient cette période</button>",
        '<h2 id="forget-topic-title">Oublier un sujet</h2>',
        ">Voir ce qui le mentionne</button>",
    ):
        assert text in page, text
    english_page = english(signed_in, f"{FORGET}?what=last-hour")
    assert "Yes, forget the last hour" in english_page and "Forget in the" in english_page


def test_the_receipt_counts_one_item_in_french(signed_in, remember):
    remember("Fresh fact.")
    signed_in.post(FORGET, {"what": "last-hour"})
    page = french(signed_in, "/dashboard/receipt/")
    assert "<h1>Reçu de suppression</h1>" in page
    assert "Ce qui a disparu" in page and "En chiffres" in page
    assert "Au total : 1 souvenir." in page and "Retour à vos souvenirs" in page
    assert "Supprimé le <time" in page
    again = french(signed_in, "/dashboard/receipt/")  # The named items are shown only once.
    assert "1 souvenir a été nommé ici une fois ; son texte n’est pas gardé" in again


def test_the_receipt_counts_several_items_and_what_went_with_them_in_french(
    signed_in, user, personal, remember, embedder
):
    remember("Fresh fact.")
    remember("Another fresh fact.")
    actor = Actor.system("tests")
    session = start_session(user=user, mode=personal, actor=actor)
    for text in ("Just chatting.", "Still chatting."):
        add_message(session=session, role="user", content=text, actor=actor, embedder=embedder)
    signed_in.post(FORGET, {"what": "last-hour"})
    stored = signed_in.session["dashboard.last_receipt"]
    others = stored["total"] - stored["memory_count"]
    assert stored["memory_count"] == 2 and others >= 2
    page = french(signed_in, "/dashboard/receipt/")
    assert f"Au total : 2 souvenirs, et {others} enregistrements partis avec eux." in page
    again = french(signed_in, "/dashboard/receipt/")
    assert "2 souvenirs ont été nommés ici une fois ; leur texte n’est pas gardé" in again
    assert f"In all: 2 items, and {others} records that went with them." in english(
        signed_in, "/dashboard/receipt/"
    )


def test_one_item_and_one_record_with_it_in_french(signed_in, user, personal, remember, embedder):
    remember("Fresh fact.")
    actor = Actor.system("tests")
    session = start_session(user=user, mode=personal, actor=actor)
    add_message(session=session, role="user", content="Hello.", actor=actor, embedder=embedder)
    signed_in.post(FORGET, {"what": "last-hour"})
    assert signed_in.session["dashboard.last_receipt"]["counts"] == {"fact": 1, "message": 1}
    page = french(signed_in, "/dashboard/receipt/")
    assert "Au total : 1 souvenir, et 1 enregistrement parti avec lui." in page
    assert "In all: 1 item, and 1 record that went with it." in english(
        signed_in, "/dashboard/receipt/"
    )


def test_no_receipt_yet_in_french(signed_in):
    assert "Aucune suppression pour l’instant" in french(signed_in, "/dashboard/receipt/")
    assert "No deletion yet in this session." in english(signed_in, "/dashboard/receipt/")


def test_one_item_its_detail_edit_and_delete_pages_in_french(signed_in, personal, remember):
    memory = remember("Lives in Lyon.")
    detail = french(signed_in, item_url(personal, memory))
    assert "<h1>Un souvenir retenu</h1>" in detail and "← Retour au mode" in detail
    assert "Pourquoi MemoryHub retient cela · MemoryHub" in detail
    edit = french(signed_in, item_url(personal, memory, "edit/"))
    assert "<h1>Modifier ce que MemoryHub retient</h1>" in edit
    delete = french(signed_in, item_url(personal, memory, "delete/"))
    assert "<h1>Supprimer définitivement ce souvenir ?</h1>" in delete
    assert ">Oui, le supprimer définitivement</button>" in delete
    assert ">Non, le garder</a>" in delete
    assert "Aucun agent ne le recevra plus." in delete


def test_the_keys_page_in_french(signed_in, user, work):
    create_personal_key(user=user, name="laptop")
    page = french(signed_in, "/dashboard/keys/")
    assert "<h1>Clés d’accès personnelles</h1>" in page
    for text in (
        "Utiliser une clé",
        "Mettez votre clé à la place de <code>mh_your_key</code>.",
        "URL de base de l’API",
        '<h2 id="create-key-title">Créer une clé</h2>',
        ">Créer la clé</button>",
        "<h2>Vos clés</h2>",
        ">Révoquer laptop</button>",
        'data-label="Dernière utilisation">jamais</td>',
        'data-label="Mode">tous</td>',
    ):
        assert text in page, text
    english_page = english(signed_in, "/dashboard/keys/")
    assert (
        "<h1>Personal access keys</h1>" in english_page
        and ">Revoke laptop</button>" in english_page
    )
    assert 'data-label="Last used">never</td>' in english_page


def test_the_import_pages_in_french(signed_in, user, personal):
    signed_in.post(
        "/dashboard/imports/",
        {
            "file": SimpleUploadedFile("memories.json", as_bytes(mem0_memories())),
            "mode": personal.pk,
        },
    )  # No commit, no task: the import stays queued.
    job = ImportJob.objects.get(user=user)
    page = french(signed_in, "/dashboard/imports/")
    assert "<h1>Importer des souvenirs venus d’ailleurs</h1>" in page
    assert ">Importer</button>" in page and "<h2>Vos importations</h2>" in page
    assert "<td>en attente</td>" in page and '<th scope="col">Statut</th>' in page
    detail = french(signed_in, f"/dashboard/imports/{job.pk}/")
    assert ">Toutes les importations</a>" in detail
    english_page = english(signed_in, "/dashboard/imports/")
    assert "<h1>Import memory from elsewhere</h1>" in english_page
    assert "<td>queued</td>" in english_page


def test_no_imports_yet_in_french(signed_in):
    assert "Aucune importation pour l’instant." in french(signed_in, "/dashboard/imports/")


def test_the_link_page_in_french(client, workspace):
    agent = factories.make_agent(workspace, "assistant")[0]
    person = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    token = issue_user_link(
        user=person, agent=agent, email="dana@example.com", actor=Actor.system()
    ).token
    account = factories.make_user(email="dana@example.com")
    EmailAddress.objects.create(user=account, email=account.email, verified=True, primary=True)
    client.force_login(account)
    page = french(client, f"/dashboard/link/{token}/")
    assert "<h1>Relier votre identifiant à la mémoire qu’un agent a de vous</h1>" in page
    assert "De l’agent “assistant” de" in page
    assert ">Oui, relier mon identifiant</button>" in page and ">Non, ne rien changer</a>" in page
    assert "double authentification" in page
    english_page = english(client, f"/dashboard/link/{token}/")
    assert ">Yes, link my login</button>" in english_page


def test_a_link_that_cannot_be_used_in_french(signed_in):
    page = signed_in.get("/dashboard/link/not-a-token/", **FRENCH).content.decode()
    assert "Ce lien ne peut pas être utilisé" in page and "Retour à vos souvenirs" in page


@pytest.mark.parametrize(
    ("url", "heading"),
    [
        ("/dashboard/", "<h1>What agents remember about you</h1>"),
        (f"{FORGET}?what=last-hour", "<h1>Forget in the"),
        ("/dashboard/receipt/", "<h1>Deletion receipt</h1>"),
        ("/dashboard/keys/", "<h1>Personal access keys</h1>"),
        ("/dashboard/imports/", "<h1>Import memory from elsewhere</h1>"),
        ("/dashboard/modes/personal/search/", "<h1>Search the"),
    ],
)
def test_the_pages_are_unchanged_in_english(signed_in, url, heading):
    response = signed_in.get(url)  # No Accept-Language: English, the default.
    assert response.status_code == 200
    assert heading in response.content.decode()


def test_the_period_form_in_french(signed_in, remember):
    remember("Old thing.", created_at=timezone.now() - timedelta(days=3))
    page = french(signed_in, f"{FORGET}?what=period")
    assert "Une période compte les jours où MemoryHub <strong>a appris</strong>" in page
    assert (
        "Premier jour d’enregistrement" in page and "Dernier jour d’enregistrement (inclus)" in page
    )
