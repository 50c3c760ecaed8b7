"""Bring back into their rows the embeddings that were moved to TOAST before migration 0005.

Only rows whose vector sits out of line are rewritten (`pg_column_toast_chunk_id`, PostgreSQL
17+); the cast gives PostgreSQL a fresh value, which the new toast_tuple_target keeps inline.
One pass over each table; nothing else in the rows changes.
"""

from django.db import migrations

REWRITE = """
UPDATE {table} SET embedding = embedding::real[]::vector
WHERE embedding IS NOT NULL AND pg_column_toast_chunk_id(embedding) IS NOT NULL
"""


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0006_extraction_requeue_count")]

    operations = [
        migrations.RunSQL(REWRITE.format(table=table), migrations.RunSQL.noop)
        for table in ("memoryhub_memory", "memoryhub_message")
    ]
