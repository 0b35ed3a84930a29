"""The REST API's routes (``/api/``): every resource, token issue, the OpenAPI schema and its docs.

Names live in the ``api`` namespace (``api:task-list``); ``tests/api/test_matrix.py`` lists the
expected status of every route for every kind of user and fails on a route it does not know.
"""

from django.contrib.auth.decorators import login_required
from django.urls import include, path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import IsAuthenticated

from config.headers import API_DOCS_POLICY, content_security_policy
from config.throttling import ThrottledObtainAuthToken

app_name = "api"
urlpatterns = [
    path("", include("benchmark.api.urls")),
    path("", include("scoring.api.urls")),
    path("", include("annotation.api.urls")),
    path("dashboards/", include("annotation.dashboards.api_urls")),
    path("auth/token/", ThrottledObtainAuthToken.as_view(), name="token"),
    path("schema/", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]), name="schema"),
    path("docs/", content_security_policy(API_DOCS_POLICY)(
        login_required(TemplateView.as_view(template_name="api/docs.html"))), name="docs"),
]
