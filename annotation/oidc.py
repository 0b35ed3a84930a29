"""Sign-in with the institution's OpenID Connect provider (mozilla-django-oidc), off unless
``OIDC_ISSUER`` is set.

The authorization code flow with PKCE (S256), state and nonce is mozilla-django-oidc's; this
module adds what it leaves out or takes from static settings:

* endpoints come from the issuer's discovery document (``core.oidc``), read at the first
  sign-in, never while a backend is built (Django builds every backend for every session check
  and password login: a provider that is down must not stop those);
* the ID token is checked for its signature (the provider's JWKS), issuer, audience (our client
  id), expiry and issue time, which the library's ``_verify_jws`` skips in part (no audience);
  the userinfo answer must name the same subject;
* an account is matched by its e-mail address; a first sign-in creates an annotator account
  (never a curator: rights come from a curator, by invitation or on the members page) only for
  ``OIDC_ALLOWED_DOMAINS`` when set, and joins the projects its address was invited to;
* every refusal is a page that says why (wrong audience, expired token, unknown domain, a
  provider that does not answer), never a 500.
"""

import logging
import re

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404
from django.shortcuts import render
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from core.audit_actions import AuditAction
from core.authentication import ProfileModelBackend
from core.models import AnnotatorProfile, Role
from core.oidc import OidcUnavailable, oidc_discovery, oidc_enabled, oidc_provider_name

from .services.audit import audit_record
from .services.invitations import invitations_join_for

LOGGER = logging.getLogger(__name__)
LEEWAY_SECONDS = 30  # clock skew allowed between the provider and this server


class SsoRefused(Exception):
    """A sign-in the provider completed but this server refuses; the message is shown."""


def _email_domain(email: str) -> str:
    return email.rpartition("@")[2].lower()


class OidcBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):  # noqa: D107 — no settings or discovery here (see the module)
        self.UserModel = get_user_model()

    def get_user(self, user_id):
        return ProfileModelBackend.get_user(self, user_id)

    def authenticate(self, request, **kwargs):
        # Only the callback view's call (it passes the session's nonce); never a password login.
        if not oidc_enabled() or request is None or "nonce" not in kwargs or "password" in kwargs:
            return None
        document = oidc_discovery()
        self.OIDC_OP_TOKEN_ENDPOINT = document["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = document["userinfo_endpoint"]
        self.OIDC_OP_JWKS_ENDPOINT = document["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload, key):
        algorithm = jwt.get_unverified_header(payload).get("alg")
        if algorithm != self.OIDC_RP_SIGN_ALGO:
            raise SsoRefused(f"the ID token is signed with {algorithm!r}, not {self.OIDC_RP_SIGN_ALGO!r} (OIDC_SIGN_ALGO)")
        try:
            return jwt.decode(payload, key, algorithms=[algorithm], audience=self.OIDC_RP_CLIENT_ID,
                              issuer=settings.OIDC_ISSUER, leeway=LEEWAY_SECONDS,
                              options={"require": ["exp", "iat", "aud", "iss", "sub"]})
        except jwt.ExpiredSignatureError:
            raise SsoRefused("the identity provider's ID token has expired; sign in again (if this repeats, "
                             "the server's clock and the provider's disagree)") from None
        except jwt.InvalidAudienceError:
            raise SsoRefused("the ID token was issued for another application (its audience is not this server's "
                             "OIDC_CLIENT_ID)") from None
        except jwt.InvalidIssuerError:
            raise SsoRefused("the ID token was issued by another provider than OIDC_ISSUER") from None
        except jwt.PyJWTError as exc:
            raise SsoRefused(f"the ID token failed validation ({exc})") from None

    def get_userinfo(self, access_token, id_token, payload):
        claims = super().get_userinfo(access_token, id_token, payload)
        if claims.get("sub") != payload.get("sub"):  # OpenID Connect Core 1.0, §5.3.4
            raise SsoRefused("the provider's user information names another subject than its ID token")
        return claims

    def verify_claims(self, claims) -> bool:
        email = (claims.get("email") or "").strip()
        if not email:
            raise SsoRefused("the identity provider sent no e-mail address (the 'email' scope)")
        if claims.get("email_verified") is False:
            raise SsoRefused(f"the identity provider has not verified the address {email}")
        allowed = settings.OIDC_ALLOWED_DOMAINS
        if allowed and _email_domain(email) not in allowed:
            raise SsoRefused(f"accounts of {_email_domain(email)} cannot sign in here (allowed: {', '.join(allowed)})")
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(email__iexact=claims["email"].strip())

    @transaction.atomic
    def create_user(self, claims):
        email = claims["email"].strip().lower()
        user = self.UserModel(username=_free_username(email), email=email, is_staff=False,
                              first_name=(claims.get("given_name") or "")[:150],
                              last_name=(claims.get("family_name") or "")[:150])
        user.set_unusable_password()
        user.save()
        AnnotatorProfile.objects.create(user=user, role=Role.ANNOTATOR)
        audit_record(actor=user, action=AuditAction.ACCOUNT_SSO_CREATE, target_kind="user", target_id=user.pk,
                     after={"username": user.username, "email": email, "role": Role.ANNOTATOR,
                            "issuer": settings.OIDC_ISSUER})
        invitations_join_for(user=user)
        return user

    def update_user(self, user, claims):
        invitations_join_for(user=user)  # invited after the account was made
        return user


def _free_username(email: str) -> str:
    """The address's local part, made a valid username, with a number when it is taken."""
    base = re.sub(r"[^\w.@+-]", "", email.partition("@")[0])[:140] or "user"
    taken = set(get_user_model().objects.filter(username__istartswith=base).values_list("username", flat=True))
    taken = {name.lower() for name in taken}
    candidate, number = base, 1
    while candidate.lower() in taken:
        number += 1
        candidate = f"{base}{number}"
    return candidate


def _refused(request, reason: str, status: int):
    return render(request, "registration/sso_refused.html",
                  {"reason": reason, "provider": oidc_provider_name()}, status=status)


class OidcStartView(OIDCAuthenticationRequestView):
    """``/oidc/authenticate/``: to the provider's authorization endpoint, with state, nonce and PKCE."""

    def __init__(self, **kwargs):  # the library reads the endpoint from settings here; we discover it in get()
        View.__init__(self, **kwargs)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in with an identity provider is not configured")
        try:
            document = oidc_discovery()
        except OidcUnavailable as exc:
            LOGGER.warning("OIDC sign-in refused: %s", exc)
            return _refused(request, str(exc), status=502)
        self.OIDC_OP_AUTH_ENDPOINT = document["authorization_endpoint"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """``/oidc/callback/``: the provider's answer; signed in, or a page that says why not."""

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Sign-in with an identity provider is not configured")
        try:
            return super().get(request)
        except SsoRefused as exc:
            reason, status = str(exc), 403
        except OidcUnavailable as exc:
            reason, status = str(exc), 502
        except requests.RequestException as exc:
            reason, status = f"the identity provider did not answer as expected ({type(exc).__name__})", 502
        except SuspiciousOperation as exc:  # an unknown state, a nonce that does not match, no matching key
            reason, status = f"the sign-in could not be verified ({exc}); start again from the login page", 400
        LOGGER.warning("OIDC sign-in refused: %s", reason)
        return _refused(request, reason, status)

    def login_failure(self):
        error = self.request.GET.get("error_description") or self.request.GET.get("error")
        reason = (f"the identity provider refused the sign-in ({error[:200]})" if error else
                  "the sign-in did not complete (it was started in another browser session, or the account is "
                  "inactive); start again from the login page")
        return _refused(self.request, reason, 403)
