"""What the test provider says about its users. Some users are made to get ID tokens that a
careful client must refuse (a provider misconfigured, or a token replayed to another client):
signed by the provider's real key, with one claim wrong."""

import time

# username -> the claim the ID token hook spoils
SPOILED = {
    "other-app": {"aud": "another-application"},
    "late": {"exp": lambda token: int(time.time()) - 3600, "iat": lambda token: int(time.time()) - 7200},
}


def userinfo(claims, user):
    claims["email"] = user.email
    claims["email_verified"] = True
    claims["given_name"] = user.first_name
    claims["family_name"] = user.last_name
    claims["name"] = f"{user.first_name} {user.last_name}".strip()
    return claims


def id_token_hook(id_token, user, token, request):
    for claim, value in SPOILED.get(user.username, {}).items():
        id_token[claim] = value(id_token) if callable(value) else value
    return id_token
