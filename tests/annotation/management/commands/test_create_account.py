"""``manage.py create_account``: the command line over account_create."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import AuditLog
from core.accounts import is_global_curator

pytestmark = pytest.mark.django_db
User = get_user_model()


def _run(*args, stdin: str = "") -> str:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", io.StringIO(stdin))
        call_command("create_account", *args, stdout=out)
    return out.getvalue()


def test_the_first_curator_with_a_password_from_stdin():
    out = _run("--username", "ada", "--role", "curator", "--password-stdin", stdin="a long phrase nobody guesses\n")
    assert out == "created curator 'ada'\n"
    user = User.objects.get(username="ada")
    assert is_global_curator(user) and user.check_password("a long phrase nobody guesses")


def test_an_annotator_gets_a_generated_password_printed_once():
    out = _run("--username", "ben", "--role", "annotator", "--email", "ben@example.org")
    generated = re.fullmatch(r"created annotator 'ben'\npassword \(shown once, not stored in clear\): (\S+)\n", out)
    assert generated, out
    user = User.objects.get(username="ben")
    assert user.check_password(generated[1]) and user.email == "ben@example.org" and not is_global_curator(user)


def test_errors_are_one_line_and_store_nothing():
    _run("--username", "ada", "--role", "curator", "--password-stdin", stdin="a long phrase nobody guesses\n")
    with pytest.raises(CommandError, match=r"^no account created: username: an account named 'ada' already exists"):
        _run("--username", "ada", "--role", "annotator")
    with pytest.raises(CommandError, match=r"^no account created: password: This password is too short"):
        _run("--username", "ben", "--role", "annotator", "--password-stdin", stdin="short\n")
    with pytest.raises(CommandError, match=r"^--password-stdin: standard input held no password"):
        _run("--username", "ben", "--role", "annotator", "--password-stdin", stdin="")
    with pytest.raises(CommandError, match=r"argument --role: invalid choice: 'viewer'"):
        _run("--username", "ben", "--role", "viewer")
    assert list(User.objects.values_list("username", flat=True)) == ["ada"]
    assert AuditLog.objects.filter(action="account.create").count() == 1
