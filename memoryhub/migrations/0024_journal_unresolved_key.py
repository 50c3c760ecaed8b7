"""One unresolved journal entry per key, enforced by a partial unique index.

Duplicates written before it (two requests that raced past the service's check) are kept, not
deleted: every entry but the newest of a key is marked resolved at the moment the newest was
written, which is what the service and the list already treated them as (the newest one wins).
The table is locked against writes first, so no new duplicate lands before the index is built.
The count of entries so resolved is printed. Going back drops the index and leaves them resolved.
"""

from django.db import migrations, models

RESOLVE_OLDER_DUPLICATES = """
WITH ranked AS (
    SELECT
        id,
        first_value(created_at) OVER newest_first AS newest_created_at,
        row_number() OVER newest_first AS position
    FROM memoryhub_journalentry
    WHERE resolved_at IS NULL AND key_hash <> ''
    WINDOW newest_first AS (
        PARTITION BY agent_id, user_id, mode_id, key_hash ORDER BY created_at DESC, id DESC
    )
)
UPDATE memoryhub_journalentry AS entry
SET resolved_at = ranked.newest_created_at
FROM ranked
WHERE entry.id = ranked.id AND ranked.position > 1
"""


def resolve_older_duplicates(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("LOCK TABLE memoryhub_journalentry IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(RESOLVE_OLDER_DUPLICATES)
        if cursor.rowcount:
            print(  # noqa: T201 - the operator must learn that entries changed.
                f"\n  Marked {cursor.rowcount} duplicate unresolved journal entries resolved "
                "(kept; the newest entry of each key stays unresolved)."
            )


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0023_user_link_proof"),
    ]

    operations = [
        migrations.RunPython(resolve_older_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="journalentry",
            constraint=models.UniqueConstraint(
                condition=models.Q(("resolved_at__isnull", True), ~models.Q(("key_hash", ""))),
                fields=("agent", "user", "mode", "key_hash"),
                name="journal_unresolved_key",
            ),
        ),
    ]
