"""Exception bases the API maps to HTTP once (``benchmark.api.common.ServiceErrorsMixin``),
so an app above benchmark gets its errors translated without benchmark importing it."""


class ConflictError(Exception):
    """The action conflicts with the current state (HTTP 409); the message says what to do."""
