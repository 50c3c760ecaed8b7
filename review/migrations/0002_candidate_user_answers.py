# Issue 17: a reviewer answers a question about the user for them, or leaves it to them.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="learningcandidate",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("approved", "Approved"),
                    ("rejected", "Rejected"),
                    ("answered", "Answered for the user"),
                    ("needs_user", "Needs the user"),
                ],
                default="pending",
                max_length=10,
            ),
        ),
    ]
