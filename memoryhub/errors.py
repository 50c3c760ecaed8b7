"""Domain exceptions; the API and the views map them to HTTP status codes in one place each."""

from __future__ import annotations

from django.utils.translation import gettext


class MemoryHubError(Exception):
    """Base class; `code` is the stable machine-readable error code, `status` its HTTP status.

    The message is English: it is what the API sends as `detail`, and what `str()` gives. A
    message marked with gettext_noop, its variables passed apart
    (`InvalidInputError(gettext_noop("{field} must not be empty"), field=field)`), can also be
    said in the reader's language, `in_words()`, for the pages (docs/i18n.md).
    """

    code = "error"
    status = 400

    def __init__(self, message: str = "", **words: object) -> None:
        super().__init__(message.format(**words) if words else message)
        self.message = message
        self.words = words

    def in_words(self) -> str:
        """The message in the active language if its English is in the catalogue, else as is."""
        if not self.message or not isinstance(self.message, str):
            return str(self)  # gettext("") would give the catalogue's header.
        said = gettext(self.message)
        return said.format(**self.words) if self.words else said


class NotAuthenticatedError(MemoryHubError):
    """A missing, unknown or revoked bearer key."""

    code = "not_authenticated"
    status = 401


class InvalidInputError(MemoryHubError):
    code = "invalid_input"
    status = 422


class IdempotencyKeyReusedError(InvalidInputError):
    """An idempotency key sent again with another request: a client bug, never replayed."""

    code = "idempotency_key_reused"


class ContentTooLargeError(MemoryHubError):
    code = "content_too_large"
    status = 413


class NotFoundError(MemoryHubError):
    """Also raised for objects of another user or mode: existence must not leak."""

    code = "not_found"
    status = 404


class AgentBlockedError(MemoryHubError):
    code = "agent_blocked"
    status = 403


class PermissionDeniedError(MemoryHubError):
    code = "forbidden"
    status = 403


class MemoryPausedError(MemoryHubError):
    code = "memory_paused"
    status = 409


class MemoryOffError(MemoryPausedError):
    """The user turned memory off in this mode: nothing is used or saved there."""

    code = "memory_off"


class ConflictError(MemoryHubError):
    code = "conflict"
    status = 409


class GoneError(MemoryHubError):
    """Something that existed and no longer can be used: a used or expired one-time link."""

    code = "gone"
    status = 410


class RateLimitedError(MemoryHubError):
    code = "rate_limited"
    status = 429

    def __init__(
        self,
        message: str,
        *,
        retry_after_seconds: int,
        rate_limit: object | None = None,
        **words: object,
    ) -> None:
        super().__init__(message, **words)
        self.retry_after_seconds = retry_after_seconds
        # The budget that refused (services/ratelimit.RateLimitState), for X-RateLimit-*.
        self.rate_limit = rate_limit


class UnscopedQueryError(RuntimeError):
    """A memory query without a (user, mode) scope: a programming error, never user input."""


class DecryptionError(MemoryHubError):
    """Ciphertext that does not match its key or its (user, table, row, field) binding."""

    code = "decryption_failed"
    status = 500


class KeyDestroyedError(DecryptionError):
    """The user's data key was destroyed (crypto-shredded): nothing of theirs can be read."""

    code = "key_destroyed"


# --- One-time user links (issue 26) --------------------------------------------------------


class NotUserCreatorError(PermissionDeniedError):
    """An agent asking for a link to a user another agent (or a sign-up) created."""

    code = "not_user_creator"


class EmailMismatchError(PermissionDeniedError):
    """A link opened by an account without the email address the link was issued for."""

    code = "email_mismatch"


class EmailNotVerifiedError(PermissionDeniedError):
    """A link opened by an account that has the link's address but has not confirmed it."""

    code = "email_not_verified"


# Quotas and bounds (memoryhub/services/quotas.py, memoryhub/services/request_slots.py).
class QuotaExceededError(MemoryHubError):
    """A configured quota is reached; `quota` names it (the setting's name), nothing else."""

    code = "quota_exceeded"
    status = 429

    def __init__(self, message: str, *, quota: str, **words: object) -> None:
        super().__init__(message, quota=quota, **words)
        self.quota = quota

    def in_words(self) -> str:
        """The message in the active language, and what would pass the quota too (quotas.py
        marks both: "memories for this user" is « souvenirs pour cette personne »)."""
        what = self.words.get("what")
        if not isinstance(what, str):
            return super().in_words()
        return gettext(self.message).format(**{**self.words, "what": gettext(what)})


class TooManyConcurrentRequestsError(RateLimitedError):
    """The key owner already has as many API or MCP requests running as allowed."""

    code = "too_many_concurrent_requests"


# --- History, as-of and export through the API (issue 31) -----------------------------------


class InvalidAsOfError(InvalidInputError):
    """An `as_of` moment in the future, or without a time zone."""

    code = "invalid_as_of"


class ImportNotAllowedError(PermissionDeniedError):
    """An agent uploading an import without the user's "may import" permission."""

    code = "import_not_allowed"


class ExportNotAllowedError(PermissionDeniedError):
    """An agent asking for the user's export without the user's "may export" permission."""

    code = "export_not_allowed"
