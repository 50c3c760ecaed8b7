"""Login limits hold across web workers: two real web servers on one database and its cache.

allauth keeps the "TOTP code already used" markers and the failed-login budget in Django's
cache. Each server here is its own process, started with the production settings (DEBUG off,
CACHE_URL unset: the database cache) on the test database, so a per-process cache would let
a code through twice and give every worker a budget of its own. Both are sent the same Host,
as a proxy in front of the workers does (allauth's budget is per site and email).
"""

from __future__ import annotations

import http.client
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import format_hotp_value, generate_totp_secret, hotp_value
from django.conf import settings
from django.db import connection

from accounts.adapter import MFAAdapter
from memoryhub.models import User
from memoryhub.process_model import web_command
from tests import factories
from tests.pg_clusters import free_port
from tests.processes import current_database_url, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
PASSWORD = "correct horse battery staple"
TOTP_PERIOD_SECONDS = 30
# allauth's default: five failed logins per account within five minutes, then refusal.
LOGIN_ATTEMPTS_LIMIT = 5
# The outer environment's database, broker, cache and MemoryHub settings stay out.
OUTER_PREFIXES = ("DATABASE_", "CELERY_", "CACHE_", "MEMORYHUB_", "DJANGO_")


@dataclass(frozen=True)
class Reply:
    status: int
    location: str
    body: str


class Browser:
    """One browser's cookies, sent to whichever server it is pointed at (same Host)."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}

    def get(self, port: int, path: str) -> Reply:
        return self._send(port, "GET", path, None)

    def post(self, port: int, path: str, form: dict[str, str]) -> Reply:
        # Django accepts the cookie's CSRF secret itself as the form token.
        form = {**form, "csrfmiddlewaretoken": self.cookies["csrftoken"]}
        return self._send(port, "POST", path, urlencode(form))

    def _send(self, port: int, method: str, path: str, body: str | None) -> Reply:
        headers = {"Host": HOST, "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            client.request(method, path, body=body, headers=headers)
            response = client.getresponse()
            for header in response.headers.get_all("Set-Cookie") or []:
                for name, morsel in SimpleCookie(header).items():
                    self.cookies[name] = morsel.value
            return Reply(
                response.status,
                response.headers.get("Location", ""),
                response.read().decode(errors="replace"),
            )
        finally:
            client.close()


def _answers(port: int, process: subprocess.Popen[bytes], log: Path) -> bool:
    assert process.poll() is None, log.read_text(errors="replace")[-3000:]
    try:
        return Browser().get(port, "/accounts/login/").status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def servers(django_db_setup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """Two web servers, one process each, on the test database; their ports."""
    logs = tmp_path_factory.mktemp("web")
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(OUTER_PREFIXES)}
    env = {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "DEBUG": "false",  # With CACHE_URL unset: the database cache, production's default.
        # DEBUG off wants an audit key of its own: the servers sign their cookies with another
        # secret and keep the suite's audit key, so pseudonyms match the test's.
        "SECRET_KEY": f"{settings.SECRET_KEY}-web-servers",
        "MEMORYHUB_MASTER_KEYS": settings.MEMORYHUB_MASTER_KEYS,
        "MEMORYHUB_AUDIT_KEY": settings.MEMORYHUB_AUDIT_KEY,
        "MEMORYHUB_DATA_DIR": str(logs / "data"),
        "DATABASE_URL": current_database_url(),
        "DATABASE_POOL_MAX_SIZE": "2",
        "ALLOWED_HOSTS": HOST,
        # Plain HTTP on loopback: no redirect to HTTPS, cookies sent without TLS.
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
    }
    started: list[tuple[int, subprocess.Popen[bytes], Path]] = []
    try:
        for number in (1, 2):
            port, log = free_port(), logs / f"web-{number}.log"
            argv = web_command(host="127.0.0.1", port=port, workers=1, production=False)
            process = subprocess.Popen(  # noqa: S603  # Our own interpreter and arguments.
                argv, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
            )
            started.append((port, process, log))
        for port, process, log in started:
            wait_for(lambda: _answers(port, process, log), f"web server on {port}", timeout=120)  # noqa: B023
        yield started[0][0], started[1][0]
    finally:
        for _, process, _ in started:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture
def empty_cache(servers):
    """The shared cache starts empty (the IP's budget of an earlier run is gone)."""
    with connection.cursor() as cursor:
        cursor.execute(f'DELETE FROM "{settings.CACHE_TABLE}"')  # noqa: S608  # Our constant.


def _person(email: str) -> User:
    user = factories.make_user(email=email, password=PASSWORD)
    # Production verifies email addresses before the first login.
    EmailAddress.objects.update_or_create(
        user=user, email=email, defaults={"verified": True, "primary": True}
    )
    return user


def _sign_in(browser: Browser, port: int, email: str, password: str = PASSWORD) -> Reply:
    browser.get(port, "/accounts/login/")
    return browser.post(port, "/accounts/login/", {"login": email, "password": password})


def _enter_code(browser: Browser, port: int, code: str) -> Reply:
    return browser.post(port, "/accounts/2fa/authenticate/", {"code": code})


def _forget_used_codes() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f'DELETE FROM "{settings.CACHE_TABLE}" WHERE cache_key LIKE %s',  # noqa: S608
            ["%allauth.mfa.totp.used%"],
        )


def test_a_totp_code_used_on_one_worker_is_refused_on_the_other(servers, empty_cache):
    first_port, second_port = servers
    user = _person("totp@example.com")
    secret = generate_totp_secret()
    Authenticator.objects.create(
        user=user, type=Authenticator.Type.TOTP, data={"secret": MFAAdapter().encrypt(secret)}
    )
    # A code is valid for one 30-second period; all three code steps must fall in the same
    # one, or "refused" could mean "expired". A slow machine may need another try.
    for _ in range(3):
        period = int(time.time()) // TOTP_PERIOD_SECONDS
        code = format_hotp_value(hotp_value(secret, period))
        first, second = Browser(), Browser()
        for browser, port in ((first, first_port), (second, second_port)):
            assert _sign_in(browser, port, user.email).location == "/accounts/2fa/authenticate/"
        accepted = _enter_code(first, first_port, code)
        refused = _enter_code(second, second_port, code)
        # The control: the very same code, once its used-marker is gone, still lets one in.
        _forget_used_codes()
        accepted_again = _enter_code(second, second_port, code)
        if int(time.time()) // TOTP_PERIOD_SECONDS == period:
            break
    else:
        pytest.fail("no try fitted in one TOTP period")
    assert (accepted.status, accepted.location) == (302, "/dashboard/")
    assert refused.status == 200
    assert "Incorrect code." in refused.body
    assert (accepted_again.status, accepted_again.location) == (302, "/dashboard/")


def test_failed_logins_on_both_workers_use_up_one_budget(servers, empty_cache):
    first_port, second_port = servers
    user = _person("budget@example.com")
    assert _sign_in(Browser(), first_port, user.email).location == "/dashboard/"
    # Three failures on one worker, two on the other: neither alone reached the limit.
    failures = [
        _sign_in(Browser(), port, user.email, password="wrong password")
        for port in (first_port, first_port, first_port, second_port, second_port)
    ]
    assert len(failures) == LOGIN_ATTEMPTS_LIMIT
    assert all(f.status == 200 and "not correct" in f.body for f in failures)
    for port in (first_port, second_port):
        refused = _sign_in(Browser(), port, user.email)
        assert refused.status == 200
        assert "Too many failed login attempts" in refused.body
