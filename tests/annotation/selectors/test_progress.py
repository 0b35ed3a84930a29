import pytest

from annotation.assignment import assignment_skip, claim_next_item
from annotation.selectors.progress import project_progress
from annotation.selectors.projects import projects_for
from annotation.services.labels import label_submit
from annotation.services.projects import membership_add
from tests.annotation_factories import agreement_project, token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_progress_per_role_with_bounded_queries(owner, alice, bob, django_assert_max_num_queries):
    project = agreement_project(owner, [alice, bob], labels=["correct"] * 4, overlap=2)
    viewer = UserFactory(username="viewer")
    membership_add(project=project, user=viewer, role="viewer", actor=owner)
    for user in (alice, bob):
        claim = claim_next_item(project=project, user=user)
        label_submit(item=claim.item, annotator=user, value={"label": "correct"}, client_token=token())
    assignment_skip(assignment=claim_next_item(project=project, user=alice), user=alice)
    claim_next_item(project=project, user=bob)

    with django_assert_max_num_queries(8):
        everyone = project_progress(project=project, user=owner)
    assert (everyone["items"], everyone["complete"], everyone["labels_done"], everyone["labels_needed"]) == (4, 1, 2, 8)
    rows = {row["username"]: row for row in everyone["annotators"]}
    assert set(rows) == {"alice", "bob", "curator"}
    assert (rows["alice"]["labels"], rows["alice"]["skips"], rows["alice"]["active_claims"]) == (1, 1, 0)
    assert (rows["bob"]["labels"], rows["bob"]["skips"], rows["bob"]["active_claims"]) == (1, 0, 1)

    own = project_progress(project=project, user=alice)
    assert [row["username"] for row in own["annotators"]] == ["alice"]
    assert project_progress(project=project, user=viewer)["annotators"] == []
    with pytest.raises(PermissionError, match="outsider is not a member of project 'agreement'"):
        project_progress(project=project, user=UserFactory(username="outsider"))


def test_projects_progress_for_with_bounded_queries(owner, alice, bob, django_assert_max_num_queries):
    from annotation.selectors.progress import projects_progress_for
    from tests.annotation_factories import label_all

    projects = []
    for n in range(3):
        project = agreement_project(owner, [alice, bob], name=f"p{n}", labels=["correct", "omitted"], overlap=2)
        label_all(project.items.first(), [alice, bob], {"label": "correct"}, {"label": "omitted"})
        projects.append(project)
    mine = list(projects_for(alice))
    with django_assert_max_num_queries(3):
        stats = projects_progress_for(user=alice, projects=mine)
    assert {row["mine"] for row in stats.values()} == {1} and not any(row["is_curator"] for row in stats.values())
    assert all(row["percent"] == 50 and "awaiting" not in row for row in stats.values())
    curated = list(projects_for(owner))
    with django_assert_max_num_queries(3):
        stats = projects_progress_for(user=owner, projects=curated)
    row = stats[projects[0].pk]
    assert (row["role"], row["mine"], row["labels_done"], row["labels_needed"], row["annotators"], row["awaiting"]) == (
        "curator", 0, 2, 4, 2, 1
    )
    # Plain projects (without projects_for's annotations) are read through it: one query more.
    assert projects_progress_for(user=owner, projects=projects)[projects[0].pk] == row
    assert projects_progress_for(user=owner, projects=[]) == {}
