"""Authentication that loads a user's global role (``AnnotatorProfile``) with the user, in the
same query: every write checks the role (``core.accounts``), and the annotator loop counts its
queries (issue #20)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from rest_framework import authentication, exceptions

from . import rawsql


class ProfileModelBackend(ModelBackend):
    """Django's username and password backend; a signed-in session's user comes with its profile."""

    def get_user(self, user_id):
        # Every request reads it: hand-written, as the annotator loop's other hot reads (core.rawsql).
        user_model = get_user_model()
        profile = user_model._meta.get_field("profile")  # the reverse side of AnnotatorProfile.user
        user = rawsql.first_row(
            user_model,
            f"SELECT u.*, {rawsql.joined_columns(profile.related_model, 'pr')} FROM {rawsql.table(user_model)} u"
            f" LEFT JOIN {rawsql.table(profile.related_model)} pr ON pr.{profile.field.column} = u.id WHERE u.id = %s",
            [user_id])
        if user is None or not self.user_can_authenticate(user):
            return None
        found = rawsql.joined_row(user, profile.related_model, "pr") if user.pr__id is not None else None
        profile.set_cached_value(user, found)
        if found is not None:
            profile.field.set_cached_value(found, user)
        return user


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``Authorization: Token <key>``; the token's user comes with its profile."""

    def authenticate_credentials(self, key):
        token = self.get_model().objects.select_related("user__profile").filter(key=key).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token
