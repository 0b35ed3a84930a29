"""A real OpenID Connect provider (django-oidc-provider) for the sign-in tests, run by ``serve``
in a second process on a free loopback port with its own SQLite database."""
