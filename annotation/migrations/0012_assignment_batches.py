from django.db import migrations


class Migration(migrations.Migration):
    """An annotator may hold several claims in a project at once (batch claims, issue #20)."""

    dependencies = [
        ('annotation', '0011_auditevent_into_core_auditlog'),
    ]

    operations = [
        migrations.RemoveConstraint(model_name='assignment', name='assignment_one_active'),
    ]
