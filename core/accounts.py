"""Who a user is globally: curator, annotator or viewer (``AnnotatorProfile.role``)."""

from .models import AnnotatorProfile, Role


def is_global_curator(user) -> bool:
    """Superusers and users whose ``AnnotatorProfile.role`` is curator."""
    if not getattr(user, "is_authenticated", False):
        return False
    return user.is_superuser or AnnotatorProfile.objects.filter(user=user, role=Role.CURATOR).exists()


def is_viewer(user) -> bool:
    return AnnotatorProfile.objects.filter(user=user, role=Role.VIEWER).exists()
