from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView

from config import account_views
from config import views as config_views
from scoring import views as scoring_views

urlpatterns = [
    path("", config_views.home, name="home"),
    path("healthz", scoring_views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages that name no icon (JSON answers, the admin).
    path("favicon.ico", RedirectView.as_view(url=f"{settings.STATIC_URL}favicon.svg", permanent=True)),
    path("login/", account_views.LoginView.as_view(), name="login"),
    # Sign-in with the OpenID Connect provider of OIDC_ISSUER (404 while it is unset).
    path("oidc/authenticate/", account_views.oidc_start, name="oidc_authentication_init"),
    path("oidc/callback/", account_views.oidc_callback, name="oidc_authentication_callback"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Accounts made with a generated password (manage.py create_account) change it here.
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("account/tokens/", account_views.account_tokens, name="account_tokens"),
    # A new account's one-time link to set its password (a password-reset token, made by account_invite).
    path("invite/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="registration/invite.html", success_url=reverse_lazy("invite_done")), name="invite"),
    # An e-mailed invitation's one-time link (annotation.services.invitations).
    path("invitation/<str:token>/", account_views.invitation, name="invitation"),
    path("invite/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="registration/invite_done.html"), name="invite_done"),
    path("benchmark/", include("benchmark.urls")),
    # The apps above benchmark declare their pages at full paths, /benchmark/… ones included
    # (scoring: /runs/, the task page's propose POST; annotation: /annotate/, /benchmark/exports/).
    path("", include("scoring.urls")),
    path("", include("annotation.urls")),
    path("dashboards/", include("annotation.dashboards.urls")),
    path("api/", include("config.api_urls")),
    path("admin/", admin.site.urls),
]
