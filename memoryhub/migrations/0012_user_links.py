# Issue 14: agents set no login identity; a person links their login through a one-time link.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.db import migrations, models


def forget_agent_set_emails(apps, schema_editor):
    """Clear the emails agents gave users nobody ever signed in as.

    Such an email was never proven: left in place, a password reset to it would still hand the
    agent's user (and its workspace) to whoever owns the address.
    """
    User = apps.get_model("memoryhub", "User")
    EmailAddress = apps.get_model("account", "EmailAddress")
    User.objects.filter(
        external_id__isnull=False,
        email__isnull=False,
        password__startswith=UNUSABLE_PASSWORD_PREFIX,
    ).exclude(pk__in=EmailAddress.objects.values("user_id")).update(email=None)


class Migration(migrations.Migration):
    dependencies = [
        ("account", "0001_initial"),
        ("memoryhub", "0011_idempotency"),
    ]

    operations = [
        migrations.CreateModel(
            name="UserLink",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("token_digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires_at", models.DateTimeField()),
                ("used_at", models.DateTimeField(blank=True, null=True)),
                (
                    "agent",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memoryhub.agent",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.RunPython(forget_agent_set_emails, migrations.RunPython.noop),
    ]
