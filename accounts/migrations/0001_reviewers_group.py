"""Create the "reviewers" group, so a fresh database can grant the reviewer role at once."""

from django.db import migrations

REVIEWERS_GROUP = "reviewers"


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=REVIEWERS_GROUP)


class Migration(migrations.Migration):
    dependencies = [("auth", "0012_alter_user_first_name_max_length")]

    # Reversing keeps the group: its members' role must not vanish with a rollback.
    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
