# ExportJob moves from benchmark to annotation (it exports annotations) with its table and rows.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_annotatorprofile_to_core"),
        ("benchmark", "0006_discipline_annotators"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ExportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('taskset', 'Task set'), ('annotations', 'Annotations')], max_length=20)),
                        ('parameters', models.JSONField(default=dict, help_text='what to export: task set or project, format, history')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], db_index=True, default='queued', max_length=10)),
                ('worker', models.CharField(blank=True, help_text='the Celery worker running it; empty in a command', max_length=200)),
                        ('progress_done', models.PositiveIntegerField(default=0)),
                        ('progress_total', models.PositiveIntegerField(default=0)),
                        ('file_path', models.CharField(blank=True, max_length=500)),
                        ('filename', models.CharField(blank=True, help_text='the name the download is offered under', max_length=255)),
                        ('size', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('sha256', models.CharField(blank=True, max_length=64)),
                        ('error', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('requested_by', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='export_jobs', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'benchmark_exportjob',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['requested_by', 'created_at'], name='benchmark_e_request_989206_idx')],
                        'constraints': [models.CheckConstraint(condition=models.Q(('progress_done__lte', models.F('progress_total')), ('progress_total', 0), _connector='OR'), name='exportjob_progress_bounded'), models.CheckConstraint(condition=models.Q(models.Q(('status', 'done'), _negated=True), models.Q(('file_path', ''), _negated=True), _connector='OR'), name='exportjob_done_has_file')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
