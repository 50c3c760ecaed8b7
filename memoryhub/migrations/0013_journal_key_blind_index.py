"""Journal keys leave plaintext: a keyed hash to match on, ciphertext to show, per user's key.

Existing keys are hashed and encrypted with their user's data key before the plaintext column
goes. A user whose key was destroyed cannot have their notes read any more: their keys are
dropped with nothing kept. Going back restores the plaintext from the ciphertext.
"""

from django.db import migrations, models

JOURNAL_TABLE = "journal_entry"  # memoryhub.queries.journal.JOURNAL_TABLE, frozen here.


def seal_keys(apps, schema_editor):
    from memoryhub.errors import KeyDestroyedError
    from memoryhub.keyring import cipher_for

    entries = apps.get_model("memoryhub", "JournalEntry").objects.exclude(key="")
    ciphers = {}
    for entry in entries.iterator(chunk_size=500):
        if entry.user_id not in ciphers:
            try:
                ciphers[entry.user_id] = cipher_for(entry.user_id, create=False)
            except KeyDestroyedError:
                ciphers[entry.user_id] = None
        cipher = ciphers[entry.user_id]
        if cipher is not None:
            entry.key_hash = cipher.journal_key_hash(entry.key)
            entry.key_ciphertext = cipher.encrypt(
                entry.key, table=JOURNAL_TABLE, row_id=entry.pk, field="key"
            )
        entry.key = ""
        entry.save(update_fields=["key", "key_hash", "key_ciphertext"])


def open_keys(apps, schema_editor):
    from memoryhub.errors import KeyDestroyedError
    from memoryhub.keyring import cipher_for

    entries = apps.get_model("memoryhub", "JournalEntry").objects.exclude(key_ciphertext=None)
    for entry in entries.iterator(chunk_size=500):
        try:
            cipher = cipher_for(entry.user_id, create=False)
        except KeyDestroyedError:
            continue
        entry.key = cipher.decrypt(
            entry.key_ciphertext, table=JOURNAL_TABLE, row_id=entry.pk, field="key"
        )
        entry.save(update_fields=["key"])


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0012_user_links"),
    ]

    operations = [
        migrations.AddField(
            model_name="journalentry",
            name="key_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="journalentry",
            name="key_ciphertext",
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.RunPython(seal_keys, open_keys),
        migrations.RemoveField(
            model_name="journalentry",
            name="key",
        ),
    ]
