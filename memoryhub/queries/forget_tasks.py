"""Read a queued forget and, once it ran, its receipt."""

from __future__ import annotations

from uuid import UUID

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop

from memoryhub.errors import NotFoundError
from memoryhub.models import ForgetTask, Mode, User


def get_forget_task(*, user: User, mode: Mode, task_id: UUID | str) -> ForgetTask:
    """A forget task of this user and mode; another owner's id is NotFound."""
    try:
        return ForgetTask.objects.get(pk=task_id, user=user, mode=mode)
    except (ForgetTask.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError(gettext_noop("forget task not found")) from None
