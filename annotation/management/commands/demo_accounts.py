from django.core.management.base import BaseCommand

from annotation.services.accounts import demo_accounts_ensure, demo_projects_ensure


class Command(BaseCommand):
    help = "Create the demo accounts and the demo's annotation projects (idempotent) and print them."

    def handle(self, *args, **options):
        self.stdout.write("Demo accounts (development only):")
        for username, password, role, created in demo_accounts_ensure():
            state = "created" if created else "exists"
            self.stdout.write(f"  {role:<10} user {username!r:<14} password {password!r}  ({state})")
        projects = demo_projects_ensure()
        if projects:
            self.stdout.write("Annotation projects (both annotators are members; /annotate/):")
        for name, items, created in projects:
            self.stdout.write(f"  {name} — {items} items ({'created' if created else 'exists'})")
