# The annotator-discipline link, declared on this side now (core depends on no app); the table
# and its columns are the ones annotation.AnnotatorProfile.disciplines made.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("benchmark", "0005_importjob"),
        ("annotation", "0009_annotatorprofile_to_core"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="discipline",
                    name="annotators",
                    field=models.ManyToManyField(blank=True, db_table="annotation_annotatorprofile_disciplines", related_name="disciplines", to="core.annotatorprofile"),
                ),
            ],
            database_operations=[],
        ),
    ]
