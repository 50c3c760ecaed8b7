# Issue 26: only the agent that created a user links it, to a person who proves their email.

import uuid

import django.db.models.deletion
from django.db import migrations, models

from memoryhub.services.audit import subject_pseudonym


def record_creating_agents(apps, schema_editor):
    """Name the creating agent of each agent-created user, from its "user.create" audit row.

    A user whose row is not found keeps no creator: no agent can link it then, and the user
    stays reachable by its agents as before (an admin can still give it a login).
    """
    User = apps.get_model("memoryhub", "User")
    Agent = apps.get_model("memoryhub", "Agent")
    AuditEntry = apps.get_model("memoryhub", "AuditEntry")
    users = User.objects.filter(external_id__isnull=False, created_by_agent__isnull=True)
    for user in users.only("pk", "workspace_id").iterator():
        creator_id = (
            AuditEntry.objects.filter(
                subject=subject_pseudonym(user.pk), action="user.create", actor_type="agent"
            )
            .order_by("id")
            .values_list("actor_id", flat=True)
            .first()
        )
        try:
            agent_id = uuid.UUID(creator_id or "")
        except ValueError:
            continue  # A personal key's row ("personal-key:…"), or none.
        agent = Agent.objects.filter(pk=agent_id, workspace_id=user.workspace_id).first()
        if agent is not None:
            User.objects.filter(pk=user.pk).update(created_by_agent=agent)


def drop_unbound_links(apps, schema_editor):
    """Unused links named no email, so nobody could prove being their person: the agent
    issues a new one."""
    UserLink = apps.get_model("memoryhub", "UserLink")
    UserLink.objects.filter(used_at__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0020_extraction_run_failed_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="user",
            name="created_by_agent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="memoryhub.agent",
            ),
        ),
        migrations.AddField(
            model_name="userlink",
            name="email",
            field=models.EmailField(blank=True, max_length=254),
        ),
        migrations.AddField(
            model_name="userlink",
            name="undone_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(record_creating_agents, migrations.RunPython.noop),
        migrations.RunPython(drop_unbound_links, migrations.RunPython.noop),
    ]
