"""What every write of user data checks first: valid text in the size cap, memory not paused or off.

Below every service that writes (memories, sessions, journal, answers): a check that lived in
one of them would make the others import it, and the forget cascade with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.errors import (
    ContentTooLargeError,
    InvalidInputError,
    MemoryOffError,
    MemoryPausedError,
)
from memoryhub.models import ActorType, Mode, User


def check_storable(text: str, *, field: str) -> int:
    """Refuse what PostgreSQL cannot store (NUL, lone surrogates) as a 422; return the UTF-8 size."""
    if "\x00" in text:
        raise InvalidInputError(
            gettext_noop("{field} must not contain NUL characters"), field=field
        )
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInputError(
            gettext_noop("{field} is not valid UTF-8 text"), field=field
        ) from None


def check_content(content: str, *, field: str = "content") -> str:
    """Validate memory text: non-empty, valid text, within the size cap; return it stripped."""
    if not isinstance(content, str):
        raise InvalidInputError(gettext_noop("{field} must be a string"), field=field)
    stripped = content.strip()
    if not stripped:
        raise InvalidInputError(gettext_noop("{field} must not be empty"), field=field)
    size = check_storable(stripped, field=field)
    if size > settings.MEMORYHUB_MAX_CONTENT_BYTES:
        raise ContentTooLargeError(
            gettext_noop("{field} is {size} bytes; the limit is {limit} bytes"),
            field=field,
            size=size,
            limit=settings.MEMORYHUB_MAX_CONTENT_BYTES,
        )
    return stripped


def check_batch_content(contents: Sequence[str]) -> None:
    """Refuse a batch whose texts add up to more than MEMORYHUB_MAX_BATCH_CONTENT_BYTES (413).

    Each text is checked on its own (check_content); this bounds the whole request, so that no
    batch holds a web worker for long: every byte is embedded, indexed and scanned.
    """
    size = sum(len(content.encode("utf-8", "surrogatepass")) for content in contents)
    limit = settings.MEMORYHUB_MAX_BATCH_CONTENT_BYTES
    if size > limit:
        raise ContentTooLargeError(
            gettext_noop(
                "the batch's contents add up to {size} bytes; the limit is {limit} bytes: "
                "send them in smaller batches"
            ),
            size=size,
            limit=limit,
        )


def check_writable(user: User, actor: Actor, mode: Mode | None = None) -> None:
    """Refuse writes by agents and the system while the user has paused memory, or turned it
    off in the mode (MemoryOffError, a MemoryPausedError). The user's own writes always pass.
    """
    if actor.actor_type == ActorType.USER:
        return
    if user.is_memory_paused:
        raise MemoryPausedError(
            gettext_noop(
                "this user has paused memory: nothing new is remembered until they resume it"
            )
        )
    if mode is not None and mode.is_memory_off:
        raise MemoryOffError(
            gettext_noop(
                "this user turned memory off in the {mode!r} mode: nothing is saved there"
            ),
            mode=mode.slug,
        )
