from django.core.management.base import BaseCommand

from annotation.services.accounts import demo_accounts_ensure


class Command(BaseCommand):
    help = "Create the demo accounts (idempotent) and print their credentials."

    def handle(self, *args, **options):
        self.stdout.write("Demo accounts (development only):")
        for username, password, role, created in demo_accounts_ensure():
            state = "created" if created else "exists"
            self.stdout.write(f"  {role:<10} user {username!r:<14} password {password!r}  ({state})")
