import pytest

from tests.annotation_factories import annotator, curator


@pytest.fixture
def owner(db):
    return curator()


@pytest.fixture
def alice(db):
    return annotator("alice")


@pytest.fixture
def bob(db):
    return annotator("bob")


@pytest.fixture
def carol(db):
    return annotator("carol")
