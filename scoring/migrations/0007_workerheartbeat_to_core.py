# WorkerHeartbeat now lives in core (same table).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0006_run_finished_with_failures_and_deadline"),
        ("core", "0004_workerheartbeat_from_scoring"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="WorkerHeartbeat")],
            database_operations=[],
        ),
    ]
