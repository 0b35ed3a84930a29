"""The REST API's routes (``/api/``)."""

urlpatterns: list = []
