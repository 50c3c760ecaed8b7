# Issue 18: the answer, candidate and knowledge models moved to memoryhub (memoryhub 0015) with
# their tables as they are: the review app forgets them from its state, no table changes.
# Referrers go first (chunk, document, candidate), so no field is left pointing at a model gone.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0015_knowledge_from_review'),
        ('review', '0002_candidate_user_answers'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='reviewdecision',
                    name='candidate',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='memoryhub.learningcandidate'),
                ),
                migrations.DeleteModel(name='KnowledgeChunk'),
                migrations.DeleteModel(name='KnowledgeDocument'),
                migrations.DeleteModel(name='LearningCandidate'),
                migrations.DeleteModel(name='AnswerRecord'),
            ],
        ),
    ]
