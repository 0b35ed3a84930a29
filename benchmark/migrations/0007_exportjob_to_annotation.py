# ExportJob now lives in annotation (same table).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0006_discipline_annotators"),
        ("annotation", "0010_exportjob_from_benchmark"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ExportJob")],
            database_operations=[],
        ),
    ]
