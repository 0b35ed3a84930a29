"""Authentication that loads a user's global role (``AnnotatorProfile``) with the user, in the
same query: every write checks the role (``core.accounts``), and the annotator loop counts its
queries (issue #20)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from rest_framework import authentication, exceptions



class ProfileModelBackend(ModelBackend):
    """Django's username and password backend; a signed-in session's user comes with its profile."""

    def get_user(self, user_id):
        # sliced, not first(): its ORDER BY only costs compiling on every request
        user = next(iter(get_user_model().objects.select_related("profile").filter(pk=user_id)[:1]), None)
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
