import pytest

from annotation.selectors.projects import projects_for
from tests.annotation_factories import agreement_project

pytestmark = pytest.mark.django_db


def test_projects_for_shows_annotators_only_their_projects(owner, alice, bob):
    mine = agreement_project(owner, [alice], name="mine")
    agreement_project(owner, [bob], name="theirs")
    assert [p.name for p in projects_for(alice)] == ["mine"]
    assert {p.name for p in projects_for(owner)} == {"mine", "theirs"}
    (row,) = projects_for(alice)
    assert (row.my_role, row.n_items, row.n_settled) == ("annotator", mine.items.count(), 0)


def test_projects_for_uses_a_bounded_number_of_queries(owner, alice, django_assert_max_num_queries):
    for n in range(4):
        agreement_project(owner, [alice], name=f"p{n}")
    with django_assert_max_num_queries(2):
        rows = list(projects_for(alice))
    assert len(rows) == 4 and all(row.n_items == 3 for row in rows)
