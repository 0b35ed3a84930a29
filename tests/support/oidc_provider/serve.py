"""Run the test OpenID provider: ``python -m tests.support.oidc_provider.serve PORT CLIENT_ID
CLIENT_SECRET REDIRECT_URI USER:EMAIL:PASSWORD ...`` with ``OIDC_PROVIDER_DB`` and
``OIDC_PROVIDER_SITE_URL`` set. Migrates its database, makes its RSA signing key, its users and
one confidential client (code flow, RS256, no consent screen), prints ``READY`` and serves on
127.0.0.1 until it is terminated."""

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def main(argv: list[str]) -> None:
    port, client_id, secret, redirect_uri, *users = argv
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.support.oidc_provider.settings"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oidc_provider.models import Client, ResponseType

    call_command("migrate", verbosity=0)
    with open(os.devnull, "w") as quiet:  # it prints the key's id, and READY must be the first line
        call_command("creatersakey", stdout=quiet)
    for spec in users:
        username, email, password = spec.split(":")
        user = get_user_model().objects.create_user(username=username, email=email, password=password,
                                                    first_name=username.title())
        assert user.pk
    client = Client.objects.create(name="studio", client_type="confidential", client_id=client_id,
                                   client_secret=secret, jwt_alg="RS256", require_consent=False,
                                   reuse_consent=True)
    client.redirect_uris = [redirect_uri]
    client.save()
    client.response_types.set([ResponseType.objects.get(value="code")])
    server = make_server("127.0.0.1", int(port), get_wsgi_application(), server_class=_Server,
                         handler_class=_QuietHandler)
    print("READY", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
