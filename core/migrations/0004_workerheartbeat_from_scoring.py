# WorkerHeartbeat moves from scoring to core with its table (scoring_workerheartbeat): state only.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_auditlog_from_old_trails"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="WorkerHeartbeat",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("hostname", models.CharField(max_length=255, unique=True)),
                        ("pid", models.PositiveIntegerField()),
                        ("started_at", models.DateTimeField()),
                        ("last_seen", models.DateTimeField(db_index=True)),
                    ],
                    options={"db_table": "scoring_workerheartbeat"},
                ),
            ],
            database_operations=[],
        ),
    ]
