"""Where the primary's write-ahead log stood after each user's latest write (memoryhub/replicas.py)."""

from __future__ import annotations

from django.db import models

from .workspaces import User


class UserWriteMark(models.Model):
    """The read-your-writes fence of one user: replicas that have not replayed `lsn` lag them.

    Only written while read replicas are configured; a user with no row never wrote since.
    """

    user = models.OneToOneField(User, primary_key=True, on_delete=models.CASCADE, related_name="+")
    # pg_current_wal_insert_lsn() right after the commit, as a byte position (pg_lsn - '0/0').
    lsn = models.BigIntegerField()
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"write mark of {self.user_id} at {self.lsn}"
