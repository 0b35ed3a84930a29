from tests.api.conftest import world  # noqa: F401  (the API tests' world, shared)
