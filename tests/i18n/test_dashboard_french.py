"""The dashboard in French: the memory list and its htmx fragments, agents, access log, delete all.

A browser that asks for French (Accept-Language) gets French pages, fragments and messages; one
that does not gets the English of before. The stored audit codes stay English either way.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from babel.messages.extract import extract_python
from django.conf import settings
from django.utils import translation
from django.utils.translation.template import templatize

from dashboard.templatetags.memory_words import action_words, receipt_line
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.management.commands.compile_catalogue import merged_catalogue
from memoryhub.models import ActorType, AgentBlock, AuditEntry, Channel, Memory
from memoryhub.services.sessions import add_message, start_session
from tests import factories

FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}
HTMX = {"HTTP_HX_REQUEST": "true"}
AGENT = Actor(ActorType.AGENT, "a1", Channel.API, label="travel bot")
ROOT = Path(settings.BASE_DIR)
# The templates and modules whose texts this part of the catalogue translates (dashboard.po).
TEMPLATES = [
    ROOT / "templates" / "dashboard" / f"{name}.html"
    for name in (
        "_candidate", "_contradiction", "_counts", "_feedback", "_forget_preview",
        "_import_progress", "_memory", "_memory_form", "_memory_page", "_messages", "_modes",
        "_search_results", "_twin", "_usage", "_why", "access_log", "account_delete", "agents",
        "delete_all",
    )
]  # fmt: skip
MODULES = [
    ROOT / path
    for path in (
        "dashboard/forms.py",
        "dashboard/templatetags/import_words.py",
        "dashboard/templatetags/memory_words.py",
        "dashboard/views/account.py",
        "dashboard/views/forgetting.py",
        "dashboard/views/imports.py",
        "dashboard/views/link.py",
        "dashboard/views/memories.py",
        "memoryhub/audit/actions.py",
        "memoryhub/queries/access_log.py",
        "memoryhub/queries/overview.py",
        "memoryhub/usage.py",
    )
]
KEYWORDS = {
    "_": None,
    "gettext": None,
    "gettext_lazy": None,
    "ngettext": (1, 2),
    "ngettext_lazy": (1, 2),
    "pgettext": ((1, "c"), 2),
    "pgettext_lazy": ((1, "c"), 2),
    "npgettext": ((1, "c"), 2, 3),
}


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def remember(user, personal, embedder):
    """Remember one item of alice's personal mode through the real service."""

    def make(content, **fields):
        return factories.make_memory(user, personal, content, embedder=embedder, **fields)

    return make


def _marked_texts(source: str) -> set[tuple[str | None, str]]:
    """(context, msgid) of every text marked for translation in Python source."""
    found = set()
    for _line, function, messages, _comments in extract_python(
        io.BytesIO(source.encode()), KEYWORDS, [], {}
    ):
        texts = messages if isinstance(messages, tuple) else (messages,)
        context = texts[0] if function in {"pgettext", "pgettext_lazy", "npgettext"} else None
        msgid = texts[1] if context is not None else texts[0]
        if msgid:
            found.add((context, msgid))
    return found


@pytest.mark.parametrize("path", TEMPLATES + MODULES, ids=lambda path: path.name)
def test_every_marked_text_has_a_french_translation(path):
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        source = templatize(source, origin=str(path))
    catalogue = merged_catalogue(ROOT / "locale" / "fr")
    untranslated = [
        msgid
        for context, msgid in _marked_texts(source)
        if (found := catalogue.get(msgid, context=context)) is None
        or not all(found.string if isinstance(found.string, tuple) else (found.string,))
    ]
    assert untranslated == []


def test_the_memory_list_is_in_french(signed_in, remember):
    remember("Lives in Lyon.", confidence="high")
    remember("Might take up climbing.", source="extracted", status="candidate")
    page = signed_in.get("/dashboard/", **FRENCH).content.decode()
    assert "Est-ce juste ?" in page and "Oui, c’est juste" in page and "Non, c’est faux" in page
    assert "Pourquoi retenez-vous cela ?" in page and ">Modifier</a>" in page
    assert ">Fait</span>" in page and "pas encore sûr" in page and "confirmé" in page
    assert ">Profil</a>" in page and ">Préférences et consignes</a>" in page
    assert "retenu <time" in page and "dernière utilisation par un agent : jamais" in page
    assert "Ajouter un mode" in page
    assert '<span class="question">Is this right?' not in page
    assert "Why do you remember this?" not in page


def test_an_empty_mode_says_so_in_french(signed_in, personal):
    page = signed_in.get("/dashboard/", **FRENCH).content.decode()
    assert "Rien n’est encore retenu dans le mode Personnel." in page
    assert "MemoryHub est la mémoire à long terme des agents d’IA que vous utilisez." in page


def test_htmx_fragments_and_their_messages_are_in_french(signed_in, remember):
    memory = remember("Might take up climbing.", source="extracted", status="candidate")
    fragment = signed_in.get(
        "/dashboard/?mode=personal&section=profile", **FRENCH, **HTMX
    ).content.decode()
    assert "<html" not in fragment and "Est-ce juste ?" in fragment
    assert 'data-undo="Supprimé car faux : “Might take up climbing.”"' in fragment
    item = f"/dashboard/modes/personal/memories/{memory.pk}"
    why = signed_in.get(f"{item}/why/", **FRENCH, **HTMX).content.decode()
    assert "Pourquoi MemoryHub retient cela" in why and "Énoncé par" in why
    assert "MemoryHub, d’après une conversation avec un agent" in why
    assert "Jamais modifié depuis qu’il a été retenu." in why
    confirmed = signed_in.post(f"{item}/confirm/", **FRENCH, **HTMX).content.decode()
    assert "Merci : marqué comme confirmé. Les agents peuvent l’utiliser dès maintenant." in (
        confirmed
    )
    edit = signed_in.get(f"{item}/edit/", **FRENCH, **HTMX).content.decode()
    assert ">Enregistrer</button>" in edit and ">Annuler</a>" in edit
    assert "Ce que MemoryHub retient" in edit and '<option value="critical">Critique' in edit


def test_search_results_count_in_french_with_plurals(signed_in, remember):
    remember("Allergic to peanuts.")
    body = signed_in.get(
        "/dashboard/modes/personal/search/?q=peanut+allergy", **FRENCH, **HTMX
    ).content.decode()
    assert "1 résultat proche pour “peanut allergy”, le meilleur en premier." in body
    nothing = signed_in.get(
        "/dashboard/modes/personal/search/?q=quantum+chromodynamics+lecture", **FRENCH, **HTMX
    ).content.decode()
    assert "<strong>Aucun résultat proche</strong>" in nothing


def test_the_agents_page_and_blocking_an_agent_are_in_french(signed_in, user, workspace):
    agent, _ = factories.make_agent(workspace, "travel-bot")
    page = signed_in.get("/dashboard/agents/", **FRENCH).content.decode()
    assert "<h1>Agents connectés</h1>" in page and "Bloquer travel-bot" in page
    assert "Autoriser travel-bot à exporter" in page and ">jamais<" in page
    response = signed_in.post(f"/dashboard/agents/{agent.pk}/block/", follow=True, **FRENCH)
    page = response.content.decode()
    assert AgentBlock.objects.filter(user=user, agent=agent).exists()
    assert "“travel-bot” est bloqué : il ne peut plus atteindre votre mémoire." in page
    assert "Débloquer travel-bot" in page and ">bloqué<" in page


def test_the_access_log_is_in_french_and_its_stored_codes_stay_english(signed_in, user, remember):
    lyon = remember("Lives in Lyon.")
    record_access(
        actor=AGENT,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_SEARCH,
        object_ids=[lyon.pk],
        mode="personal",
    )
    record_access(actor=AGENT, subject_user_id=user.pk, action=AuditAction.ACCESS_REFUSED)
    page = signed_in.get("/dashboard/access/", **FRENCH).content.decode()
    assert "<h1>Qui a consulté ma mémoire</h1>" in page
    assert "recherche dans les souvenirs" in page and "Agent “travel bot”" in page
    assert "<strong>refusé :</strong> tentative d’accès à votre mémoire" in page
    assert '<td data-label="Canal">API</td>' in page and ">Quand</th>" in page
    assert "Montrer aussi ce que j’ai fait moi-même" in page
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"memory.search", "access.refused"} <= actions


def test_audit_words_follow_the_active_language():
    with translation.override("fr"):
        assert action_words("memory.read") == "lecture d’un souvenir"
        assert action_words("admin.user.change") == (
            "modification d’un enregistrement (user) dans le site d’administration"
        )
    assert action_words("memory.read") == "read a memory"
    assert AuditAction.MEMORY_READ == "memory.read"


def test_receipt_lines_take_the_french_plural():
    with translation.override("fr"):
        # French: 0 and 1 are singular.
        assert [receipt_line("fact", n) for n in (0, 1, 2)] == ["0 fait", "1 fait", "2 faits"]
        assert receipt_line("message", 3) == "3 messages de conversation"
    assert [receipt_line("fact", n) for n in (0, 1, 2)] == ["0 facts", "1 fact", "2 facts"]


def test_delete_all_is_in_french_and_takes_the_french_phrase(signed_in, user, remember):
    remember("Lives in Lyon.")
    remember("Allergic to peanuts.")
    page = signed_in.get("/dashboard/modes/personal/delete-all/", **FRENCH).content.decode()
    assert "<h1>Tout supprimer</h1>" in page and "tapez “tout supprimer”" in page
    assert "tapez “supprimer personnel”" in page and "← Retour au mode Personnel" in page
    wrong = signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "everything", "confirmation": "tout effacer"},
        **FRENCH,
    )
    assert wrong.status_code == 422
    assert "Tapez exactement “tout supprimer” pour confirmer." in wrong.content.decode()
    assert Memory.all_owners.filter(user=user).count() == 2
    done = signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "everything", "confirmation": "Tout supprimer"},
        follow=True,
        **FRENCH,
    )
    assert "Supprimé : 2 souvenirs effacés pour de bon" in done.content.decode()
    assert Memory.all_owners.filter(user=user).count() == 0


def test_delete_all_in_french_still_takes_the_english_phrase(signed_in, user, remember):
    remember("Lives in Lyon.")
    signed_in.post(
        "/dashboard/modes/personal/delete-all/",
        {"scope": "personal", "confirmation": "delete personal"},
        **FRENCH,
    )
    assert Memory.all_owners.filter(user=user).count() == 0


def test_delete_all_of_a_mode_takes_its_name_in_french_not_its_slug(
    signed_in, user, personal, work, remember, embedder
):
    remember("Lives in Lyon.")
    factories.make_memory(user, work, "Works at Hexa.", embedder=embedder)
    url = "/dashboard/modes/personal/delete-all/"
    other_mode = signed_in.post(
        url, {"scope": "personal", "confirmation": "supprimer travail"}, **FRENCH
    )
    assert other_mode.status_code == 422  # The phrase names the mode deleted, not another.
    assert "Tapez exactement “supprimer personnel” pour confirmer." in other_mode.content.decode()
    signed_in.post(url, {"scope": "personal", "confirmation": "Supprimer  Personnel"}, **FRENCH)
    assert Memory.all_owners.filter(user=user, mode=personal).count() == 0
    assert Memory.all_owners.filter(user=user, mode=work).count() == 1


@pytest.mark.parametrize(
    ("language", "shown", "typed"),
    [
        ("fr", "tapez “supprimer boulot”", "supprimer boulot"),
        ("en", "type “delete boulot”", "delete boulot"),
    ],
)
def test_delete_all_of_a_renamed_mode_takes_the_name_its_user_typed(
    signed_in, user, work, embedder, language, shown, typed
):
    work.name = "Boulot"
    work.save(update_fields=["name"])
    factories.make_memory(user, work, "Works at Hexa.", embedder=embedder)
    url = "/dashboard/modes/work/delete-all/"
    page = signed_in.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert shown in page and " work”" not in page  # Not the slug.
    refused = signed_in.post(
        url, {"scope": "work", "confirmation": typed.replace("boulot", "travail")}
    )
    assert refused.status_code == 422
    signed_in.post(url, {"scope": "work", "confirmation": typed}, HTTP_ACCEPT_LANGUAGE=language)
    assert Memory.all_owners.filter(user=user, mode=work).count() == 0


def test_account_deletion_page_is_in_french(signed_in):
    page = signed_in.get("/dashboard/account/delete/", **FRENCH).content.decode()
    assert "<h1>Supprimer mon compte</h1>" in page and "Exportez tout en JSON" in page
    assert "Supprimer mon compte définitivement" in page


def test_the_same_pages_in_english_are_unchanged(signed_in, user, workspace, remember):
    remember("Might take up climbing.", source="extracted", status="candidate")
    factories.make_agent(workspace, "travel-bot")
    record_access(actor=AGENT, subject_user_id=user.pk, action=AuditAction.MEMORY_SEARCH)
    listing = signed_in.get("/dashboard/").content.decode()
    assert (
        "Is this right?" in listing and "Yes, it’s right" in listing and ">Profile</a>" in listing
    )
    assert "Est-ce juste" not in listing
    agents = signed_in.get("/dashboard/agents/").content.decode()
    assert "<h1>Connected agents</h1>" in agents and "Block travel-bot" in agents
    log = signed_in.get("/dashboard/access/").content.decode()
    assert "searched memories" in log and '<td data-label="Through">api</td>' in log
    delete_all = signed_in.get("/dashboard/modes/personal/delete-all/").content.decode()
    assert "type “delete everything”" in delete_all and "type “delete personal”" in delete_all


def test_the_forget_preview_counts_in_french(signed_in, user, personal, remember, embedder):
    remember("Lives in Lyon.")
    remember("Allergic to peanuts.")
    session = start_session(user=user, mode=personal, actor=Actor.system("tests"))
    add_message(
        session=session, role="user", content="Hi.", actor=Actor.system("tests"), embedder=embedder
    )
    page = signed_in.get(
        "/dashboard/modes/personal/forget/?what=last-hour", **FRENCH
    ).content.decode()
    assert "<strong>2 souvenirs vont disparaître</strong>, et avec eux :" in page
    assert "1 message de conversation." in page and "· enregistré à l’instant" in page
    assert ">Fait</span>" in page


def test_the_usage_panel_is_in_french(signed_in, remember, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 40
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = 0
    remember("Lives in Lyon.")
    page = signed_in.get("/dashboard/settings/", **FRENCH).content.decode()
    assert ">Utilisation</h2>" in page and "Souvenirs :" in page and "sur 40" in page
    assert "(sans limite)" in page and 'aria-label="Souvenirs : 2 % de la limite"' in page
