"""What a global curator may do in the Django admin, from their role rather than per-user grants.

Curators are staff (``account_create``) but hold no model permissions of their own, so the admin
showed them nothing. The admin pages that belong to curation — the system alias table the
importers resolve released system names through, and the systems' display names — are theirs by
role: this backend answers Django's permission checks for exactly those models and actions.
"""

from core.accounts import is_global_curator

_ACTIONS = ("view", "add", "change", "delete")
# app_label -> {model name: the actions a curator has on it in the admin}; systems come from imports,
# so curators only rename them (SystemAdmin lets them change nothing but the display name)
CURATED_IN_ADMIN = {"benchmark": {"systemalias": _ACTIONS, "system": ("view", "change")}}


class CuratorAdminBackend:
    """Authorization only (``authenticate`` finds no one): the ModelBackend still signs people in."""

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm: str, obj=None) -> bool:
        app_label, _, codename = perm.partition(".")
        action, _, model = codename.partition("_")
        return (action in CURATED_IN_ADMIN.get(app_label, {}).get(model, ())
                and user_obj.is_active and user_obj.is_staff and is_global_curator(user_obj))

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        return (app_label in CURATED_IN_ADMIN and user_obj.is_active and user_obj.is_staff
                and is_global_curator(user_obj))
