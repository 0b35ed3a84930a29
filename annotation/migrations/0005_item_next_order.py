# The claim query's order (next_item_for): walk this index instead of sorting every open item.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0004_webhook_webhookdelivery"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="annotationitem",
            index=models.Index(
                models.F("project"), models.F("status"), models.F("labels_needed") - models.F("labels_done"),
                models.F("labels_done"), models.F("position"), models.F("id"), name="item_next_order",
            ),
        ),
    ]
