"""``manage.py blind_audit <project> [--as USER] [--json]``: the known attacks on a blind project,
run as one of its annotators (``annotation.blind_audit``); nothing it does is kept."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.blind_audit import blind_audit
from annotation.models import AnnotationProject


class Command(BaseCommand):
    help = "Run the known attacks on a blind project as one of its annotators; per attack hits, trials, chance, p."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project id or name")
        parser.add_argument("--as", dest="username", default=None, help="the annotator to play (default: the first)")
        parser.add_argument("--json", action="store_true", help='{"attacks": [{"name", "hits", ...}, ...]}')

    def handle(self, *args, project, username, json: bool = False, **options):
        found = AnnotationProject.objects.filter(pk=int(project)) if project.isdigit() else \
            AnnotationProject.objects.filter(name=project)
        row = found.first()
        if row is None:
            raise CommandError(f"no annotation project {project!r}")
        try:
            report = blind_audit(project=row, username=username)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if json:
            self.stdout.write(_json.dumps(report, indent=2))
            return
        self.stdout.write(f"blind audit of {report['project']!r}, as annotator {report['annotator']!r}"
                          f"{'' if row.blind else ' (this project is not blind)'}")
        for attack in report["attacks"]:
            verdict = "BEATS CHANCE" if attack["beats_chance"] else "at chance"
            self.stdout.write(f"  {attack['name']:9s} {attack['hits']:4d}/{attack['trials']:<4d} hits,"
                              f" chance {attack['chance']:.3f}, p = {attack['p_value']:.3g}  {verdict}")


_json = json
