import pytest

pytestmark = pytest.mark.django_db


def test_item_targets_reads_gold_references_with_their_publication(owner, alice, django_assert_num_queries):
    from annotation.selectors.targets import item_targets
    from annotation.services.projects import project_create
    from tests.factories import GoldReferenceFactory, TaskFactory

    task = TaskFactory()
    for _ in range(4):
        GoldReferenceFactory(task=task)
    project = project_create(name="refs", kind="verify", created_by=owner, tasks=[task], item_kinds=["gold_reference"])
    items = list(project.items.all())
    with django_assert_num_queries(1):
        texts = [str(target) for target in item_targets(items).values()]
    assert len(texts) == 4 and all(text.startswith("A Study of Topic") for text in texts)
