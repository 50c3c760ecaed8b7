"""Django's error page and report (DEBUG off) never show a key, a data key or a raw secret."""

from __future__ import annotations

import base64
import secrets
from pprint import pformat

import pytest
from django.utils.html import escape
from django.views.debug import ExceptionReporter

from memoryhub import keyring
from memoryhub.api.auth import authenticate_key
from memoryhub.errors import DecryptionError, NotAuthenticatedError
from memoryhub.services.agents import create_personal_key


@pytest.fixture(autouse=True)
def _debug_off(settings):
    settings.DEBUG = False  # What production reports; with DEBUG on nothing is hidden.


def _report(error: BaseException) -> str:
    """The HTML report Django renders for this error, with every frame's variables.

    It starts at the frame below the test's own, which holds the secret on purpose.
    """
    assert error.__traceback__ is not None
    traceback = error.__traceback__.tb_next
    return ExceptionReporter(None, type(error), error, traceback).get_traceback_html()


def _shows(report: str, value: object) -> bool:
    # As the report prints a variable: pformat, which splits a long bytes value over lines.
    return any(escape(shown) in report for shown in (str(value), repr(value), pformat(value)))


def test_a_malformed_master_key_list_never_shows_its_keys(settings):
    valid = base64.b64encode(secrets.token_bytes(32)).decode()
    settings.MEMORYHUB_MASTER_KEYS = f"k1:{valid},k2:{valid[:20]}"
    with pytest.raises(ValueError, match="k2") as raised:
        keyring.master_keys()
    report = _report(raised.value)
    assert "parse_master_keys" in report  # The report shows the frames…
    assert "encoded" in report  # …and the names of their variables…
    assert not _shows(report, valid)  # …but not their values.
    assert not _shows(report, valid[:20])


def test_a_failed_decryption_never_shows_the_data_key(user):
    cipher = keyring.cipher_for(user)
    blob = cipher.encrypt("a fact", table="memory", row_id="1", field="content")
    with pytest.raises(DecryptionError) as raised:
        cipher.decrypt(blob, table="memory", row_id="2", field="content")
    report = _report(raised.value)
    assert "_open" in report
    assert not _shows(report, cipher.data_key)


def test_a_sealed_secret_that_fails_to_open_never_shows_the_key(db):
    sealed = keyring.seal_secret("JBSWY3DPEHPK3PXP", purpose="mfa")
    with pytest.raises(DecryptionError) as raised:
        keyring.open_secret(sealed, purpose="another purpose")
    report = _report(raised.value)
    assert "open_secret" in report
    master = keyring.master_keys()[0]
    assert not _shows(report, keyring._secret_key(master, "another purpose"))
    assert not _shows(report, master.secret)


def test_a_refused_api_key_never_shows_in_the_report(db):
    presented = "mh_" + secrets.token_urlsafe(32)
    with pytest.raises(NotAuthenticatedError) as raised:
        authenticate_key(presented, client_ip="127.0.0.1")
    report = _report(raised.value)
    assert "authenticate_key" in report
    assert not _shows(report, presented)


def test_an_issued_key_leaves_its_raw_key_out_of_its_repr(user):
    issued = create_personal_key(user=user, name="laptop")
    assert issued.raw_key not in repr(issued)
