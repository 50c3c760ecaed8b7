"""Seal the TOTP secrets and recovery seeds allauth stored in clear before accounts.MFAAdapter.

The adapter opens a plaintext value as it is, so this only closes the window: after it, no
secret of an existing authenticator is readable from a database dump. Going back opens them.
"""

from django.db import migrations

PURPOSE = "mfa"  # accounts.adapter.MFA_SEAL_PURPOSE, frozen here.
FIELDS = {"totp": ("secret",), "recovery_codes": ("seed",)}


def _convert(apps, change):
    authenticators = apps.get_model("mfa", "Authenticator").objects.filter(type__in=list(FIELDS))
    for authenticator in authenticators.iterator():
        data = dict(authenticator.data)
        for name in FIELDS[authenticator.type]:
            if isinstance(data.get(name), str):
                data[name] = change(data[name])
        if isinstance(data.get("migrated_codes"), list):
            data["migrated_codes"] = [change(code) for code in data["migrated_codes"]]
        authenticator.data = data
        authenticator.save(update_fields=["data"])


def seal(apps, schema_editor):
    from memoryhub.keyring import is_sealed_secret, seal_secret

    _convert(
        apps,
        lambda value: value if is_sealed_secret(value) else seal_secret(value, purpose=PURPOSE),
    )


def open_(apps, schema_editor):
    from memoryhub.keyring import open_secret

    _convert(apps, lambda value: open_secret(value, purpose=PURPOSE))


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0013_journal_key_blind_index"),
        ("mfa", "0003_authenticator_type_uniq"),
    ]

    operations = [migrations.RunPython(seal, open_)]
