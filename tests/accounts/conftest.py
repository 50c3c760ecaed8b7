"""Fixtures for role tests: users with and without a TOTP authenticator."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import Group

from accounts.roles import REVIEWERS_GROUP


def add_totp(user):
    # The row is what "has an active TOTP authenticator" means; the secret is irrelevant here.
    return Authenticator.objects.create(
        user=user, type=Authenticator.Type.TOTP, data={"secret": "x"}
    )


@pytest.fixture
def reviewer(user):
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    user.groups.add(group)
    return user


@pytest.fixture
def staff(user):
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user
