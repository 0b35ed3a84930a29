# AnnotatorProfile moves from annotation to core with its table and rows: state only.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0008_preference_shown_texts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AnnotatorProfile",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("role", models.CharField(choices=[("curator", "Curator"), ("annotator", "Annotator"), ("viewer", "Viewer")], default="annotator", max_length=20)),
                        ("qualification", models.JSONField(blank=True, default=list, help_text="answers to qualification questions")),
                        ("external_id", models.CharField(blank=True, help_text="annotator id in an imported dataset", max_length=200)),
                        ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="profile", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "annotation_annotatorprofile"},
                ),
            ],
            database_operations=[],
        ),
    ]
