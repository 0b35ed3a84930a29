"""The REST API's routes (``/api/``): every resource, token issue, the OpenAPI schema and its docs.

Names live in the ``api`` namespace (``api:task-list``); ``tests/api/test_matrix.py`` lists the
expected status of every route for every kind of user and fails on a route it does not know.
"""

from django.contrib.auth.decorators import login_required
from django.urls import URLPattern, URLResolver, include, path, reverse
from django.views.generic import TemplateView
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.headers import API_DOCS_POLICY, content_security_policy
from config.throttling import ThrottledObtainAuthToken

app_name = "api"


def _routes(patterns, prefix: str = "") -> list[tuple[str, str]]:
    routes = []
    for entry in patterns:
        if isinstance(entry, URLResolver):
            routes += _routes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern) and entry.name:
            routes.append((prefix + str(entry.pattern), entry.name))
    return routes


class ApiIndex(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(exclude=True)
    def get(self, request):
        """Where to start: the docs, the schema, and every endpoint's path (``<id:pk>`` = an id)."""
        root = reverse("api:index")
        endpoints = [{"name": name, "path": root + route} for route, name in _routes(urlpatterns) if name != "index"]
        return Response({"docs": reverse("api:docs"), "schema": reverse("api:schema"), "endpoints": endpoints})


urlpatterns = [
    path("", ApiIndex.as_view(), name="index"),
    path("", include("benchmark.api.urls")),
    path("", include("scoring.api.urls")),
    path("", include("annotation.api.urls")),
    path("dashboards/", include("annotation.dashboards.api_urls")),
    path("auth/token/", ThrottledObtainAuthToken.as_view(), name="token"),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]), name="schema"),
    path("docs/", content_security_policy(API_DOCS_POLICY)(
        login_required(TemplateView.as_view(template_name="api/docs.html"))), name="docs"),
]
