"""The one module that wraps `standardwebhooks` (the Standard Webhooks reference package)."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"  # noqa: S105  # The scheme's prefix, not a secret.


def new_secret() -> str:
    """A fresh endpoint secret in Standard Webhooks form: whsec_ + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def signature_header(*, secrets_: list[str], message_id: str, at: datetime, body: str) -> str:
    """The `webhook-signature` value: one `v1,<sig>` per secret, space-separated.

    During a rotation's grace period both the new and the old secret sign, so a receiver
    still holding the old one verifies too (the scheme accepts any matching signature).
    """
    return " ".join(Webhook(secret).sign(message_id, at, body) for secret in secrets_)


def verify(*, secret: str, body: bytes | str, headers: dict[str, str]) -> object:
    """Verify a signed message as a receiver does; raises standardwebhooks' WebhookVerificationError."""
    return Webhook(secret).verify(body, headers)
