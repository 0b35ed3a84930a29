"""Authentication that loads a user's global role (``AnnotatorProfile``) with the user, in the
same query: every write checks the role (``core.accounts``), and the annotator loop counts its
queries (issue #20)."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.contrib.auth.backends import ModelBackend
from rest_framework import authentication, exceptions

from .compiled import CompiledRead

# every signed-in request reads its user: compiled once (``core.compiled``), not per request
_USER_WITH_PROFILE = CompiledRead(
    lambda user_id: get_user_model().objects.select_related("profile").filter(pk=user_id).order_by()[:1], "user_id")


class ProfileModelBackend(ModelBackend):
    """Django's username and password backend; a signed-in session's user comes with its profile."""

    def get_user(self, user_id):
        try:
            user_id = get_user_model()._meta.pk.to_python(user_id)  # the session holds it as a string
        except ValidationError:
            return None
        user = _USER_WITH_PROFILE.first(user_id=user_id)
        if user is None or not self.user_can_authenticate(user):
            return None
        return user


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``Authorization: Token <key>``; the token's user comes with its profile."""

    def authenticate_credentials(self, key):
        token = next(iter(self.get_model().objects.select_related("user__profile").filter(key=key)[:1]), None)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token
