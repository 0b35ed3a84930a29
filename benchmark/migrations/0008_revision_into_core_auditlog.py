# Revision's rows are in core.AuditLog now (core 0003 carried them over); the name stays as a
# proxy of that model for the native importer.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0007_exportjob_to_annotation"),
        ("core", "0003_auditlog_from_old_trails"),
        ("annotation", "0011_auditevent_into_core_auditlog"),  # no foreign key left to the old table
    ]

    operations = [
        migrations.DeleteModel(name="Revision"),
        migrations.CreateModel(
            name="Revision",
            fields=[],
            options={"proxy": True, "indexes": [], "constraints": []},
            bases=("core.auditlog",),
        ),
    ]
