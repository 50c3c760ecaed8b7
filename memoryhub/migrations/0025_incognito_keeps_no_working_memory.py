"""An ended incognito session holds no working memory, enforced by a check constraint.

Working memory that a write racing the end of an incognito session left behind is what the
user was promised would be deleted: it is deleted here (the count is printed), under a lock
that keeps a new one from landing before the constraint is added.
"""

from django.db import migrations, models

CLEAR_LEFT_BEHIND = """
UPDATE memoryhub_session
SET working_memory_ciphertext = NULL,
    working_memory_updated_at = NULL,
    working_memory_expires_at = NULL
WHERE is_incognito AND ended_at IS NOT NULL AND working_memory_ciphertext IS NOT NULL
"""


def clear_left_behind(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("LOCK TABLE memoryhub_session IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(CLEAR_LEFT_BEHIND)
        if cursor.rowcount:
            print(  # noqa: T201 - the operator must learn that data was deleted.
                f"\n  Deleted the working memory left in {cursor.rowcount} ended incognito "
                "sessions."
            )


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0024_journal_unresolved_key"),
    ]

    operations = [
        migrations.RunPython(clear_left_behind, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="session",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("is_incognito", False),
                    ("ended_at__isnull", True),
                    ("working_memory_ciphertext__isnull", True),
                    _connector="OR",
                ),
                name="ended_incognito_session_keeps_no_working_memory",
            ),
        ),
    ]
