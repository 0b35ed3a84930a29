"""``store.insert_rows`` writes every concrete field itself: it refuses a model with a field
the database writes (generated, or a ``db_default``), which ``bulk_create`` handles and it would
get wrong, before any SQL runs; so does the hand-written UPDATE."""

import pytest
from django.db import models
from django.db.models.functions import Lower
from django.test.utils import isolate_apps

from annotation.loop import store


@pytest.fixture
def written_by_database():
    """Two models (in a registry of their own: no table, no other code sees them), each with a
    field the database writes."""
    with isolate_apps("annotation"):
        class WithGenerated(models.Model):
            name = models.CharField(max_length=20)
            lowered = models.GeneratedField(expression=Lower("name"), output_field=models.CharField(max_length=20),
                                            db_persist=True)

            class Meta:
                app_label = "annotation"

        class WithDbDefault(models.Model):
            name = models.CharField(max_length=20)
            counted = models.IntegerField(db_default=0)

            class Meta:
                app_label = "annotation"

        yield {"lowered": WithGenerated, "counted": WithDbDefault}


@pytest.mark.parametrize("field", ["lowered", "counted"])
def test_insert_rows_refuses_a_model_with_a_field_the_database_writes(field, written_by_database, db,
                                                                      django_assert_num_queries):
    model = written_by_database[field]
    with django_assert_num_queries(0), pytest.raises(TypeError, match=f"{field} are written by the database"):
        store.insert_rows(model, [model(name="Row")])


@pytest.mark.parametrize("field", ["lowered", "counted"])
def test_the_hand_written_update_refuses_them_too(field, written_by_database):
    model = written_by_database[field]
    row = model(pk=1, name="Row")
    with pytest.raises(TypeError, match=f"{field} are written by the database"):
        store.writes._update_sql(model, [row], ["name", field])
    assert store.writes._update_sql(model, [row], ["name"])[1] == ["Row", 1]  # a field it may write
