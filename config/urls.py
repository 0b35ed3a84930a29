from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from benchmark import views as benchmark_views
from config import converters  # noqa: F401 (registers <id:>, used by every app's routes)
from config.throttling import ThrottledLoginView
from scoring import views as scoring_views

urlpatterns = [
    path("", benchmark_views.home, name="home"),
    path("healthz", scoring_views.healthz, name="healthz"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Accounts made with a generated password (manage.py create_account) change it here.
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("benchmark/", include("benchmark.urls")),
    path("annotate/", include("annotation.urls")),
    path("dashboards/", include("annotation.dashboards.urls")),
    path("runs/", include("scoring.urls")),
    path("api/", include("config.api_urls")),
    path("admin/", admin.site.urls),
]
