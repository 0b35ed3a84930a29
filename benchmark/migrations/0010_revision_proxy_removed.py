# benchmark.Revision, the proxy of core.AuditLog kept for the native importer after 0008, is gone:
# every caller names core.models.AuditLog. A proxy has no table; nothing changes in the database.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('benchmark', '0009_system_display_name'),
    ]

    operations = [
        migrations.DeleteModel(
            name='Revision',
        ),
    ]
