"""Fixtures for dashboard view tests: a signed-in client and memories made through services."""

from __future__ import annotations

import pytest

from tests import factories

PASSWORD = "correct horse battery staple"  # tests/factories.py's


@pytest.fixture
def signed_in(client, user):
    """A test client signed in as `user` (alice)."""
    client.force_login(user)
    return client


@pytest.fixture
def reauthenticated(signed_in):
    """`signed_in`, having just entered the password again (allauth's reauthentication)."""
    response = signed_in.post("/accounts/reauthenticate/", {"password": PASSWORD})
    assert response.status_code == 302
    return signed_in


@pytest.fixture
def remember(user, personal, embedder):
    """Remember one item through the real service (encrypted, embedded, audited)."""

    def make(content, *, mode=None, kind="fact", owner=None, **fields):
        owner = owner or user
        return factories.make_memory(
            owner,
            mode or (personal if owner == user else factories.mode_of(owner)),
            content,
            kind=kind,
            embedder=embedder,
            **fields,
        )

    return make
