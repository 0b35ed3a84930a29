"""What a global curator may do in the Django admin, from their role rather than per-user grants.

Curators are staff (``account_create``) but hold no model permissions of their own, so the admin
showed them nothing. The admin pages that belong to curation — today the system alias table the
importers resolve released system names through — are theirs by role: this backend answers
Django's permission checks for exactly those models, and nothing else.
"""

from core.accounts import is_global_curator

# app_label -> model names a curator views, adds, changes and deletes in the admin
CURATED_IN_ADMIN = {"benchmark": ("systemalias",)}
_ACTIONS = ("view", "add", "change", "delete")


class CuratorAdminBackend:
    """Authorization only (``authenticate`` finds no one): the ModelBackend still signs people in."""

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm: str, obj=None) -> bool:
        app_label, _, codename = perm.partition(".")
        action, _, model = codename.partition("_")
        return (action in _ACTIONS and model in CURATED_IN_ADMIN.get(app_label, ())
                and user_obj.is_active and user_obj.is_staff and is_global_curator(user_obj))

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        return (app_label in CURATED_IN_ADMIN and user_obj.is_active and user_obj.is_staff
                and is_global_curator(user_obj))
