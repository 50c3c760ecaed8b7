"""What is stored in English and shown to a person, said in their language when shown (issue 28).

The default modes' names, an import file's error naming an item, an audit entry's action and the
admin tables' times. What is stored, and what the API sends, stays as it was.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from allauth.mfa.models import Authenticator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import translation

from dashboard.templatetags.memory_words import exact_time, mode_slug_name, zoned_time
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.imports.services import ImportFileRejectedError, start_import
from memoryhub.models import DEFAULT_WORKSPACE_NAME, DEFAULT_WORKSPACE_SLUG, ImportJob, Mode
from memoryhub.services.agents import get_or_create_workspace
from tests import factories
from tests.imports.files import committed

FR = {"HTTP_ACCEPT_LANGUAGE": "fr"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
MOMENT = datetime(2025, 5, 20, 10, 0, 5, tzinfo=UTC)


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(client, workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(staff)
    return client


# The default modes' names.


def test_the_default_modes_are_named_in_french_on_the_dashboard(signed_in, personal, work):
    page = signed_in.get("/dashboard/", **FR).content.decode()
    assert ">Personnel</a>" in page and ">Travail</a>" in page  # The mode switcher.
    assert "Personnel · MemoryHub" in page  # The title.
    assert ">Personal<" not in page and ">Work<" not in page
    english = signed_in.get("/dashboard/", **EN).content.decode()
    assert ">Personal</a>" in english and ">Work</a>" in english


def test_showing_a_default_mode_in_french_never_rewrites_its_stored_name(signed_in, work):
    signed_in.get("/dashboard/?mode=work", **FR)
    assert Mode.objects.get(pk=work.pk).name == "Work"


def test_a_mode_made_on_demand_with_its_slug_as_name_is_still_the_default(user):
    mode = factories.mode_of(user, "work")
    mode.name = "work"  # What ensure_mode names a default mode it makes on demand.
    with translation.override("fr"):
        assert mode.display_name == "Travail"


def test_a_renamed_mode_keeps_the_name_its_user_typed(signed_in, personal, work):
    work.name = "Boulot"
    work.save(update_fields=["name"])
    page = signed_in.get("/dashboard/?mode=work", **FR).content.decode()
    assert ">Boulot</a>" in page and "Boulot · MemoryHub" in page
    assert "Travail" not in page
    assert ">Personnel</a>" in page


def test_the_settings_keys_and_import_pages_name_the_default_modes_in_french(
    signed_in, personal, work
):
    settings_page = signed_in.get("/dashboard/settings/", **FR).content.decode()
    assert "Désactiver la mémoire dans Travail" in settings_page
    keys_page = signed_in.get("/dashboard/keys/", **FR).content.decode()
    assert f'<option value="{work.pk}">Travail</option>' in keys_page
    imports_page = signed_in.get("/dashboard/imports/", **FR).content.decode()
    assert f'<option value="{personal.pk}">Personnel</option>' in imports_page


def test_a_flash_message_names_the_default_mode_in_french(signed_in, personal, work):
    response = signed_in.post("/dashboard/modes/work/memory/", {"is_off": "on"}, follow=True, **FR)
    assert "La mémoire est désactivée dans le mode “Travail”" in response.content.decode()


def test_a_mode_known_by_its_slug_alone_is_named_in_french_if_it_is_a_default():
    with translation.override("fr"):
        assert mode_slug_name("personal") == "Personnel"
        assert mode_slug_name("side-project") == "side-project"
        assert mode_slug_name("") == ""


# An import file's errors that name an item.


def _upload(client, mode, data: bytes, **headers):
    with committed():
        return client.post(
            "/dashboard/imports/",
            {"file": SimpleUploadedFile("memories.json", data), "mode": mode.pk},
            **headers,
        )


def test_an_import_error_naming_an_item_is_in_french_on_the_page(signed_in, personal):
    response = _upload(signed_in, personal, b'[{"memory": "a"}, {"memory": 5}]', **FR)
    assert response.status_code == 422
    assert "élément 1 n’a pas de texte « memory »" in response.content.decode()
    english = _upload(signed_in, personal, b'[{"memory": "a"}, {"memory": 5}]', **EN)
    assert "item 1 has no &#x27;memory&#x27; text" in english.content.decode()
    assert not ImportJob.objects.exists()


def test_an_import_error_keeps_its_english_message_and_code_for_the_api(user, personal):
    data = b'{"format": "memoryhub-export/1", "modes": [{"slug": "work", "memories": [{"id": 1}]}]}'
    with pytest.raises(ImportFileRejectedError) as caught:
        start_import(
            user=user,
            mode=personal,
            actor=Actor.for_user(user.pk),
            agent=None,
            chunks=[data],
        )
    error = caught.value
    assert error.code == "import_malformed"
    assert str(error) == "mode work, memory 0 has no id or no content"
    with translation.override("fr"):
        assert error.in_words() == (
            "mode Travail, souvenir 0 n’a pas d’identifiant ou pas de contenu"
        )
        assert str(error) == "mode work, memory 0 has no id or no content"


# The admin audit table.


def test_an_audit_entry_shows_its_action_in_french_with_its_code(admin_client, user):
    record_access(
        actor=Actor.for_user(user.pk), subject_user_id=user.pk, action=AuditAction.MEMORY_DELETE
    )
    page = admin_client.get("/admin-tools/audit/", {"action": "memory.delete"}, **FR)
    text = page.content.decode()
    assert "Suppression de souvenirs" in text
    assert '<code class="audit-code">memory.delete</code>' in text
    english = admin_client.get("/admin-tools/audit/", {"action": "memory.delete"}, **EN)
    assert "Deleted memories" in english.content.decode()


def test_the_audit_table_names_a_role_change_of_the_user_not_to_them(admin_client, user):
    record_access(
        actor=Actor.for_user(user.pk),
        subject_user_id=user.pk,
        action=AuditAction.ROLE_GRANT_REVIEWER,
    )
    query = {"action": "role.grant_reviewer"}
    french = admin_client.get("/admin-tools/audit/", query, **FR).content.decode()
    english = admin_client.get("/admin-tools/audit/", query, **EN).content.decode()
    assert "Attribution du rôle de relecteur<br>" in french
    assert "Granted the reviewer role<br>" in english and "made you" not in english.lower()
    assert '<code class="audit-code">role.grant_reviewer</code>' in english


def test_the_audit_table_writes_its_times_in_the_readers_format(admin_client, user):
    with time_machine.travel(MOMENT, tick=False):
        record_access(
            actor=Actor.for_user(user.pk), subject_user_id=user.pk, action=AuditAction.MEMORY_READ
        )
    query = {"action": "memory.read"}
    french = admin_client.get("/admin-tools/audit/", query, **FR).content.decode()
    assert ">20 mai 2025, 10:00:05 UTC</time>" in french
    english = admin_client.get("/admin-tools/audit/", query, **EN).content.decode()
    assert ">20 May 2025, 10:00:05 UTC</time>" in english
    assert "2025-05-20 10:00:05" not in french + english


def test_exact_and_zoned_times_follow_the_language():
    with translation.override("fr"):
        assert exact_time(MOMENT) == "20 mai 2025, 10:00:05 UTC"
        assert zoned_time(datetime(2025, 12, 3, 18, 7, tzinfo=UTC)) == "3 déc. 2025, 18:07 UTC"
    with translation.override("en"):
        assert zoned_time(datetime(2025, 12, 3, 18, 7, tzinfo=UTC)) == "3 Dec 2025, 18:07 UTC"
        assert exact_time(None) == ""


def test_the_sign_up_workspace_is_named_in_french_and_a_named_one_as_typed(db):
    default = get_or_create_workspace(slug=DEFAULT_WORKSPACE_SLUG, name=DEFAULT_WORKSPACE_NAME)
    named = factories.make_workspace()
    with translation.override("fr"):
        assert default.display_name == "Espace de travail par défaut"
        assert named.display_name == named.name
    with translation.override("en"):
        assert default.display_name == "Default workspace"
    default.refresh_from_db()
    assert default.name == "Default workspace"
