# Issue 17: a per-mode "memory off" switch.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0009_user_write_marks"),
    ]

    operations = [
        migrations.AddField(
            model_name="mode",
            name="is_memory_off",
            field=models.BooleanField(default=False),
        ),
    ]
