from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from benchmark.services.tasksets import TaskSetError, taskset_changelog, taskset_freeze, taskset_get

from .export_taskset import TaskSetCommand


class Command(TaskSetCommand):
    help = "Freeze a task set version: store its native-JSONL snapshot and sha256; it cannot change afterwards."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--allow-uncurated", action="store_true", help="also admit draft and in-review tasks")
        parser.add_argument("--user", help="username recorded as the one who froze it")

    def handle(self, *args, name: str, version: int | None, allow_uncurated: bool, user: str | None, **options):
        actor = None
        if user:
            User = get_user_model()
            actor = User.objects.filter(**{User.USERNAME_FIELD: user}).first()
            if actor is None:
                raise CommandError(f"no user {user!r}")
        try:
            task_set = taskset_freeze(
                task_set=taskset_get(name=name, version=version), actor=actor, allow_uncurated=allow_uncurated
            )
        except TaskSetError as exc:
            raise CommandError(str(exc)) from None
        changes = taskset_changelog(task_set=task_set)
        against = f"against {changes.previous}" if changes.previous else "(first version)"
        self.stdout.write(
            f"froze {task_set}: {task_set.tasks.count()} tasks, sha256 {task_set.content_hash}\n"
            f"{against}: {len(changes.added)} added, {len(changes.removed)} removed, "
            f"{len(changes.changed)} changed, {changes.unchanged} unchanged"
        )
