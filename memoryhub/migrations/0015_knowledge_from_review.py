# Issue 18: answers, candidates and the knowledge base are domain models now. Their tables stay
# where the review app made them (db_table keeps the names): this changes the state only, and
# every row stays. review 0003 deletes the same models from the review app's state.

import django.contrib.postgres.fields
import django.db.models.deletion
import django.utils.timezone
import pgvector.django.vector
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0014_seal_mfa_secrets'),
        # The tables were created there (review 0001, 0002).
        ('review', '0002_candidate_user_answers'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='AnswerRecord',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('question_ciphertext', models.BinaryField()),
                        ('answer_ciphertext', models.BinaryField()),
                        ('items_ciphertext', models.BinaryField(blank=True, null=True)),
                        ('signals', models.JSONField(default=dict)),
                        ('context_ids', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=64), blank=True, default=list, size=None)),
                        ('composite', models.FloatField(help_text='Weighted signals, as reported.')),
                        ('confidence', models.FloatField(help_text="The composite, adjusted by the user's feedback.")),
                        ('feedback', models.CharField(blank=True, choices=[('up', 'Up'), ('down', 'Down')], max_length=4)),
                        ('feedback_comment_ciphertext', models.BinaryField(blank=True, null=True)),
                        ('feedback_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('agent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='memoryhub.agent')),
                        ('mode', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.mode')),
                        ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.session')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.workspace')),
                    ],
                    options={
                        'db_table': 'review_answerrecord',
                    },
                ),
                migrations.CreateModel(
                    name='KnowledgeDocument',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('title', models.CharField(max_length=200)),
                        ('body', models.TextField()),
                        ('source', models.CharField(choices=[('answer', 'Reviewed answer'), ('fact', 'Reviewed fact'), ('pasted', 'Pasted text'), ('uploaded', 'Uploaded file')], max_length=10)),
                        ('is_published', models.BooleanField(default=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='knowledge_documents', to='memoryhub.workspace')),
                    ],
                    options={
                        'db_table': 'review_knowledgedocument',
                        'ordering': ['-updated_at'],
                    },
                ),
                migrations.CreateModel(
                    name='KnowledgeChunk',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('position', models.PositiveIntegerField()),
                        ('text', models.TextField()),
                        ('embedding', pgvector.django.vector.VectorField(dimensions=384)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.workspace')),
                        ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='memoryhub.knowledgedocument')),
                    ],
                    options={
                        'db_table': 'review_knowledgechunk',
                        'ordering': ['document', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='LearningCandidate',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('kind', models.CharField(choices=[('answer', 'Answer'), ('fact', 'Proposed fact')], max_length=8)),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('answered', 'Answered for the user'), ('needs_user', 'Needs the user')], default='pending', max_length=10)),
                        ('failure_class', models.CharField(blank=True, choices=[('negative_feedback', 'Negative feedback'), ('hallucination', 'Hallucination signal'), ('retrieval_miss', 'Retrieval miss'), ('incomplete', 'Incomplete answer'), ('policy_block', 'Policy block')], max_length=20)),
                        ('findings', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=40), blank=True, default=list, size=None)),
                        ('question_ciphertext', models.BinaryField(blank=True, null=True)),
                        ('answer_ciphertext', models.BinaryField()),
                        ('comment_ciphertext', models.BinaryField(blank=True, null=True)),
                        ('scrub_counts', models.JSONField(blank=True, default=dict)),
                        ('confidence', models.FloatField(blank=True, null=True)),
                        ('embedding', pgvector.django.vector.VectorField(dimensions=384)),
                        ('group_id', models.UUIDField(db_index=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('skipped_at', models.DateTimeField(blank=True, null=True)),
                        ('decided_at', models.DateTimeField(blank=True, null=True)),
                        ('rejection_reason', models.TextField(blank=True)),
                        ('answer', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='candidate', to='memoryhub.answerrecord')),
                        ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('mode', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.mode')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.workspace')),
                    ],
                    options={
                        'db_table': 'review_learningcandidate',
                    },
                ),
                migrations.AddField(
                    model_name='knowledgedocument',
                    name='source_candidate',
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='document', to='memoryhub.learningcandidate'),
                ),
                migrations.AddIndex(
                    model_name='answerrecord',
                    index=models.Index(fields=['user', 'mode'], name='answer_record_scope_idx'),
                ),
                migrations.AddConstraint(
                    model_name='knowledgechunk',
                    constraint=models.UniqueConstraint(fields=('document', 'position'), name='knowledge_chunk_position_unique'),
                ),
                migrations.AddIndex(
                    model_name='learningcandidate',
                    index=models.Index(fields=['workspace', 'status'], name='candidate_queue_idx'),
                ),
            ],
        ),
    ]
