"""A heavy user's kept counts: their active memories per mode, and per blind-index digest."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from .workspaces import Mode, User


class CountedMode(models.Model):
    """A mode of a heavy user whose counts are kept: its row says how many memories are active.

    Written by `services/term_counts.py` when a user gets their own vector index, then kept by
    triggers on the memory table (migration 0037) on every insert, delete and change of status,
    tokens or mode, whichever path writes. A heavy search reads the IDF's N here instead of
    counting 100,000 rows; a mode without this row is counted at search time.
    """

    mode = models.OneToOneField(Mode, primary_key=True, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    memory_count = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"mode {self.mode_id} of {self.user_id}: {self.memory_count} active memories"


class TermCount(models.Model):
    """How many active memories of a counted mode hold one blind-index digest.

    The digest is a keyed hash of a word (keyring.py), never the word: these rows hold no more
    than the memory table's blind index already does, and go with the user. A digest whose
    count falls to 0 loses its row, so a forgotten word leaves nothing here either.
    """

    # The unique key's first column: it serves the user's deletion, so no index of its own.
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+", db_index=False)
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=16)
    memory_count = models.BigIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["user", "mode", "digest"], name="term_count_key"),
        ]

    def __str__(self) -> str:
        return f"{self.digest} in mode {self.mode_id}: {self.memory_count}"
