"""Audit actions became one enumeration (``core.audit_actions.AuditAction``) spelt
``<entity>.<verb>``: rewrite the rows stored under the older spellings. The map is frozen here
(the module's ``LEGACY_SPELLINGS`` may grow). Going back restores the old spellings; the two
pairs of synonyms the enumeration merged (``import`` / ``import:update``, ``import:remove`` /
``import:delete``) come back as the first of each."""

from django.db import migrations

SPELLINGS = {
    "api_token:issue": "api_token.issue",
    "api_token:rotate": "api_token.rotate",
    "api_token:revoke": "api_token.revoke",
    "system:create": "system.create",
    "system:display_name": "system.display_name",
    "alias:set": "alias.set",
    "alias:delete": "alias.delete",
    "taskset:create": "taskset.create",
    "taskset:update": "taskset.update",
    "taskset:freeze": "taskset.freeze",
    "taskset:new_version": "taskset.new_version",
    "survey_text": "survey.text",
    "add": "proposable.add",
    "edit": "proposable.edit",
    "propose": "proposable.propose",
    "propose:revise": "proposable.revise",
    "import": "import.update",
    "import:update": "import.update",
    "import:remove": "import.remove",
    "import:delete": "import.remove",
    "review:proposed": "review.proposed",
    "review:accepted": "review.accepted",
    "review:edited": "review.edited",
    "review:rejected": "review.rejected",
    "review:undo": "review.undo",
    "judge_config:create": "judge_config.create",
    "judge_config:update": "judge_config.update",
}


def _rewrite(apps, mapping: dict) -> None:
    AuditLog = apps.get_model("core", "AuditLog")
    for old, new in mapping.items():
        AuditLog.objects.filter(action=old).update(action=new)


def forwards(apps, schema_editor):
    _rewrite(apps, SPELLINGS)


def backwards(apps, schema_editor):
    old_of = {}
    for old, new in SPELLINGS.items():
        old_of.setdefault(new, old)
    _rewrite(apps, old_of)


class Migration(migrations.Migration):
    dependencies = [("core", "0004_workerheartbeat_from_scoring")]

    operations = [migrations.RunPython(forwards, backwards)]
