import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.services.accounts import ACCOUNT_ROLES, account_create


class Command(BaseCommand):
    help = ("Create a real account: the first curator of a new installation, then curators and annotators. "
            "Without --password-stdin a random password is generated and printed once.")

    def add_arguments(self, parser):
        parser.add_argument("--username", required=True)
        parser.add_argument("--role", required=True, choices=[str(role) for role in ACCOUNT_ROLES])
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true",
                            help="read the password from the first line of standard input (not the command line, "
                                 "where other users and the shell history could see it)")

    def handle(self, *args, username: str, role: str, email: str, password_stdin: bool, **options):
        password = None
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input held no password")
        try:
            user, generated = account_create(username=username, role=role, password=password, email=email)
        except ValueError as exc:
            raise CommandError(f"no account created: {exc}") from None
        self.stdout.write(f"created {role} {user.username!r}")
        if generated:
            self.stdout.write(f"password (shown once, not stored in clear): {generated}")
