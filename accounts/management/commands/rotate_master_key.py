"""manage.py rotate_master_key: re-wrap every data key under the newest master key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from accounts.adapter import reseal_mfa_secrets
from memoryhub.keyring import master_keys, rewrap_all_keys, rewrap_workspace_keys


class Command(BaseCommand):
    help = (
        "Re-wrap all user data keys under the first key of MEMORYHUB_MASTER_KEYS. Put the new key "
        "first, keep the old ones after it, run this, then drop the old ones."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = rewrap_all_keys()
        self.stdout.write(
            f"Re-wrapped {count} data key(s) under master key {master_keys()[0].key_id!r}."
        )
        # Workspace keys (the knowledge graph) are wrapped by the same master keys.
        workspaces = rewrap_workspace_keys()
        self.stdout.write(f"Re-wrapped {workspaces} workspace data key(s).")
        # TOTP secrets and recovery seeds are sealed under a master key too.
        self.stdout.write(f"Re-sealed {reseal_mfa_secrets()} two-factor secret(s).")
