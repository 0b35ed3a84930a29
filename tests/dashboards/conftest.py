import pytest

from tests.annotation_factories import curator


@pytest.fixture
def curator_client(client, db):
    user = curator("boss")
    client.force_login(user)
    return client
