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
