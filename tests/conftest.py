"""Shared fixtures: real PostgreSQL (pytest-django's test database), real embeddings."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from psycopg import sql

from memoryhub.actors import Actor
from memoryhub.celery import app
from memoryhub.embeddings import Embedder, default_embedder
from memoryhub.services.access import access_buffer
from memoryhub.services.ratelimit import invalid_key_counter
from tests import factories


@pytest.fixture(autouse=True, scope="session")
def _catalogues_compiled():
    """The French catalogue compiled from its parts, as `make setup` does, before any page."""
    call_command("compile_catalogue", verbosity=0)


@pytest.fixture(autouse=True, scope="session")
def _tasks_queue_in_memory():
    """Tasks that tests queue (on commit) stay in this process's memory.

    With the default filesystem broker they would land in .data/celery-queue, where the next
    `make run` worker would pick them up. The worker tests bring their own Redis broker.
    """
    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database lets flush TRUNCATE the audit table between transactional tests.

    The audit's TRUNCATE trigger (migration 0026) allows it only where this setting is on; it is
    set on the throwaway test database alone, for every connection opened from now on.
    """
    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            cursor.execute(
                sql.SQL("ALTER DATABASE {} SET memoryhub.audit_truncate_allowed = 'on'").format(
                    sql.Identifier(connection.settings_dict["NAME"])
                )
            )
        connection.close()
        connection.close_pool()  # Pooled connections opened before would not have it.


@pytest.fixture(autouse=True)
def _no_pending_memory_access():
    """Each test starts with no recall counts buffered by an earlier one (services/access.py)."""
    access_buffer.clear()


@pytest.fixture(autouse=True)
def _no_rate_limits_carried_over():
    """Each test starts with no login attempts counted by allauth's rate limits.

    The test cache lives for the whole run, and the browser tests sign in from 127.0.0.1 many
    times a minute: past allauth's 30 logins per minute and IP, a later test got a 429.
    """
    cache.clear()


@pytest.fixture(autouse=True)
def _no_invalid_keys_counted():
    """Each test starts with no invalid keys counted in this process (services/ratelimit.py)."""
    invalid_key_counter.clear()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real MiniLM embedder, loaded once for the whole run."""
    return default_embedder()


@pytest.fixture
def workspace(db):
    return factories.make_workspace()


@pytest.fixture
def user(workspace):
    return factories.make_user(workspace=workspace, email="alice@example.com", external_id="alice")


@pytest.fixture
def other_user(workspace):
    return factories.make_user(workspace=workspace, email="bob@example.com", external_id="bob")


@pytest.fixture
def personal(user):
    return factories.mode_of(user, "personal")


@pytest.fixture
def work(user):
    return factories.mode_of(user, "work")


@pytest.fixture
def system_actor() -> Actor:
    return Actor.system("tests")


@pytest.fixture
def superuser_client(client, workspace):
    """A client signed in as a superuser with TOTP set up: the Django admin lets them in."""
    root = factories.make_user(workspace=workspace, email="admin@example.com")
    root.is_staff = root.is_superuser = True
    root.save(update_fields=["is_staff", "is_superuser"])
    Authenticator.objects.create(user=root, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client.force_login(root)
    return client


@pytest.fixture
def eager():
    """Queued Celery tasks run at once, in the test (on commit: see tests/imports/files.py)."""
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False
