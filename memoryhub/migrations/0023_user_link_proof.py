# Issue 26: only the agent that created a user links it, to a person who proves their email.

import itertools
import uuid

import django.db.models.deletion
from django.db import migrations, models

from memoryhub.audit.log import subject_pseudonym

BATCH = 1000


def record_creating_agents(apps, schema_editor):
    """Name the creating agent of each agent-created user, from its "user.create" audit row.

    A user whose row is not found keeps no creator: no agent can link it then, and the user
    stays reachable by its agents as before. Users go by the thousand: one audit query each.
    """
    User = apps.get_model("memoryhub", "User")
    Agent = apps.get_model("memoryhub", "Agent")
    AuditEntry = apps.get_model("memoryhub", "AuditEntry")
    users = User.objects.filter(external_id__isnull=False, created_by_agent__isnull=True)
    pending = users.values_list("pk", "workspace_id").iterator(chunk_size=BATCH)
    while batch := list(itertools.islice(pending, BATCH)):
        by_subject = {subject_pseudonym(pk): (pk, workspace_id) for pk, workspace_id in batch}
        rows = (
            AuditEntry.objects.filter(
                subject__in=by_subject, action="user.create", actor_type="agent"
            )
            .order_by("-id")  # The first row of a subject wins: it is written last below.
            .values_list("subject", "actor_id")
        )
        creators = {}
        for subject, actor_id in rows:
            try:
                creators[subject] = uuid.UUID(actor_id)
            except ValueError:
                continue  # A personal key's row ("personal-key:…").
        agents = dict(
            Agent.objects.filter(pk__in=creators.values()).values_list("pk", "workspace_id")
        )
        for subject, agent_id in creators.items():
            user_id, workspace_id = by_subject[subject]
            if agents.get(agent_id) == workspace_id:
                User.objects.filter(pk=user_id).update(created_by_agent_id=agent_id)


def drop_unbound_links(apps, schema_editor):
    """Unused links named no email, so nobody could prove being their person: the agent
    issues a new one."""
    UserLink = apps.get_model("memoryhub", "UserLink")
    UserLink.objects.filter(used_at__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0022_cache_table"),
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
