import pytest

from tests.annotation_factories import curator


@pytest.fixture
def curator_client(client, db):
    user = curator("boss")
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def _empty_cache():
    """Dashboard figures are cached by their rows' fingerprint; ids repeat across rolled-back tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
