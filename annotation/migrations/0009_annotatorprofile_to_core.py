# AnnotatorProfile now lives in core (same table); its disciplines are declared on benchmark.Discipline.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_preference_shown_texts"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AnnotatorProfile")],
            database_operations=[],
        ),
    ]
