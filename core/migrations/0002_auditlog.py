# The one audit trail (core.AuditLog), then the rows of the two old trails carried over.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditLog",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("actor_label", models.CharField(blank=True, help_text="set when no user acted (import, model)", max_length=200)),
                ("action", models.CharField(db_index=True, max_length=50)),
                ("object_id", models.PositiveBigIntegerField(blank=True, null=True)),
                ("project_id", models.BigIntegerField(blank=True, db_index=True, null=True, help_text="the annotation project the action belongs to")),
                ("before", models.JSONField(blank=True, encoder=DjangoJSONEncoder, null=True)),
                ("after", models.JSONField(blank=True, encoder=DjangoJSONEncoder, null=True)),
                ("note", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("actor", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                ("content_type", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, to="contenttypes.contenttype")),
            ],
            options={
                "ordering": ["created_at", "id"],
                "indexes": [
                    models.Index(fields=["content_type", "object_id", "created_at"], name="core_auditl_content_0c8e1f_idx"),
                    models.Index(fields=["project_id", "created_at"], name="core_auditl_project_5b0a7d_idx"),
                ],
            },
        ),
    ]
