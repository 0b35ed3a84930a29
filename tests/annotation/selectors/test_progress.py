import pytest

from annotation.loop.claims import assignment_skip, claim_next_item
from annotation.selectors.progress import project_progress
from annotation.selectors.projects import projects_for
from annotation.loop.labels import label_submit
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


def test_one_count_serves_the_project_list_the_project_page_and_the_workspace(owner, alice, bob):
    """``labelling_counts`` is the one count of a user's labels, skips and live claims: checked
    against the rows themselves, over two projects, with an expired claim that no longer counts."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment, Label
    from annotation.loop.progress import own_progress
    from annotation.selectors.progress import labelling_counts, projects_progress_for

    first = agreement_project(owner, [alice, bob], name="first", labels=["correct"] * 4, overlap=2)
    second = agreement_project(owner, [alice, bob], name="second", labels=["correct"] * 3, overlap=2)
    for project in (first, second):
        claim = claim_next_item(project=project, user=alice)
        label_submit(item=claim.item, annotator=alice, value={"label": "correct"}, client_token=token())
    assignment_skip(assignment=claim_next_item(project=first, user=alice), user=alice)
    claim_next_item(project=first, user=bob)
    expired = claim_next_item(project=second, user=bob)
    Assignment.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    counts = labelling_counts(project_ids=[first.pk, second.pk])
    now = timezone.now()
    for project in (first, second):
        for user in (alice, bob):
            claims = Assignment.objects.filter(project=project, user=user)
            expected = (Label.objects.filter(project=project, annotator=user).count(),
                        claims.filter(status="skipped").count(),
                        claims.filter(status="active", expires_at__gt=now).count())
            got = counts.get((project.pk, user.pk))
            assert (got["labels"], got["skips"], got["active_claims"]) == expected
    assert (counts[first.pk, alice.pk]["skips"], counts[first.pk, bob.pk]["active_claims"]) == (1, 1)
    assert counts[second.pk, bob.pk]["active_claims"] == 0  # expired
    assert set(labelling_counts(project_ids=[first.pk], user=alice)) == {(first.pk, alice.pk)}
    assert own_progress(project=first, user=alice)["mine"] == {"labels": 1, "skips": 1}
    assert own_progress(project=second, user=bob)["mine"] == {"labels": 0, "skips": 0}
    assert {pk: row["mine"] for pk, row in projects_progress_for(user=alice, projects=projects_for(alice)).items()} == {
        first.pk: 1, second.pk: 1}
    assert labelling_counts(project_ids=[]) == {}
