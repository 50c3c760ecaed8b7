"""The usage panel on the settings page: the user's own memories, bytes and answers, and limits."""

from __future__ import annotations

from memoryhub.usage import user_usage


def test_the_settings_page_shows_usage_against_the_limits(signed_in, user, remember, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 40
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = 0
    remember("Lives in Lyon.")
    remember("Works at Hexa.")

    page = signed_in.get("/dashboard/settings/").content.decode()

    assert 'id="usage"' in page
    assert "Memories:" in page and "2" in page and "of 40" in page
    assert 'max="40" value="2"' in page
    assert "(no limit)" in page  # The byte quota is off.
    assert user_usage(user.pk).stored_bytes > 0


def test_the_panel_shows_only_the_signed_in_user(signed_in, other_user, remember, settings):
    settings.MEMORYHUB_QUOTA_MEMORIES_PER_USER = 40
    for n in range(3):
        remember(f"Bob's fact {n}.", owner=other_user)

    page = signed_in.get("/dashboard/settings/").content.decode()

    assert 'max="40" value="0"' in page


def test_an_edit_past_the_byte_quota_is_refused_in_the_readers_language(
    signed_in, user, personal, remember, settings
):
    item = remember("Lives in Lyon.")
    settings.MEMORYHUB_QUOTA_BYTES_PER_USER = user_usage(user.pk).stored_bytes + 10
    edit = f"/dashboard/modes/personal/memories/{item.pk}/edit/"
    data = {
        "content": "Lives in Lyon, near the river, since the spring of 2019.",
        "importance": "normal",
    }

    french = signed_in.post(edit, data, HTTP_ACCEPT_LANGUAGE="fr")
    english = signed_in.post(edit, data, HTTP_ACCEPT_LANGUAGE="en")

    assert french.status_code == 422 and english.status_code == 422
    assert "octets stockés pour cet utilisateur ; la limite est de" in french.content.decode()
    assert "stored bytes for this user; the limit is" in english.content.decode()
    assert "Lives in Lyon, near the river" not in signed_in.get("/dashboard/").content.decode()
