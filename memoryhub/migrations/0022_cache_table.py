# The table of the database cache (settings.CACHE_TABLE, CACHE_URL=db:// and the default with
# DEBUG off), as `manage.py createcachetable` would create it; created here so that `migrate`
# alone readies a deployment. IF NOT EXISTS: a table made by createcachetable is kept.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0021_rate_limit_window_start_index"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                """
                CREATE TABLE IF NOT EXISTS "memoryhub_cache" (
                    "cache_key" varchar(255) NOT NULL PRIMARY KEY,
                    "value" text NOT NULL,
                    "expires" timestamp with time zone NOT NULL
                )
                """,
                'CREATE INDEX IF NOT EXISTS "memoryhub_cache_expires" '
                'ON "memoryhub_cache" ("expires")',
            ],
            reverse_sql=['DROP TABLE IF EXISTS "memoryhub_cache"'],
        ),
    ]
