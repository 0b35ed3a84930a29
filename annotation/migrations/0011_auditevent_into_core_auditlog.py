# AuditEvent's rows are in core.AuditLog now (core 0003 carried them over), and an item's applied
# revision is an AuditLog row with the same id: the foreign key moves before benchmark 0008
# drops the old revision table.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0010_exportjob_from_benchmark"),
        ("core", "0003_auditlog_from_old_trails"),
    ]

    operations = [
        migrations.AlterField(
            model_name="annotationitem",
            name="applied_revision",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to="core.auditlog"),
        ),
        migrations.DeleteModel(name="AuditEvent"),
    ]
