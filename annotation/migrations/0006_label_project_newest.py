# The agreement dashboard fingerprints a project by its newest label: one step in this index.

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0005_item_next_order'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='label',
            index=models.Index(fields=['project', 'id'], name='label_project_newest'),
        ),
    ]
