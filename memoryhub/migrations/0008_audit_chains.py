"""Give every audit row a chain: one hash chain per subject instead of one for the whole log.

The rows written before this migration form the one global chain and are marked "legacy" by
the column's default. ADD COLUMN with a constant default only records the default in the
catalogue (no table rewrite, no UPDATE), so the append-only trigger of migration 0002, which
fires on UPDATE and DELETE, neither fires nor needs to be disabled. Django drops the default
right after: new rows always name their chain.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0007_rewrite_toasted_embeddings")]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="chain",
            field=models.CharField(default="legacy", max_length=64),
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["chain", "id"], name="audit_chain_idx"),
        ),
    ]
