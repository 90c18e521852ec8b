"""Logging in through the school's LMS: the hub with ``CTXLAB_AUTH=lti13``, end to end.

The test plays the LMS (an LTI 1.3 platform) on a loopback port: it publishes a JSON Web Key
Set, and signs each launch with its RSA key, as Canvas or Moodle would. It starts the hub from
``hub/jupyterhub_config.py`` with the platform's issuer, client id, authorisation URL and key
set, and goes through the OpenID Connect launch a browser goes through: the platform starts the
login at ``/hub/lti13/oauth_login``; the hub answers with a redirect to the platform carrying a
state (kept in a cookie) and a nonce; the platform posts the signed ``id_token`` back to
``/hub/lti13/oauth_callback``. The person is the Unix user named in the launch's custom field
``unix_user``.

It checks that a listed learner gets in, and that nobody gets in with a launch signed by another
key, meant for another tool, with another nonce, for a Unix user the hub does not list, or
without a launch at all (a login form naming a user). An LMS role of Instructor gives a learner
nothing more: the hub's lists decide.

It needs what the hub test needs (root, ``jupyterhub``, ``configurable-http-proxy``), and
jupyterhub-ltiauthenticator in the hub's environment (``hub/install.py`` installs it). With
``CTXLAB_REQUIRE_HUB=1`` (CI) a missing part fails the test.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from test_hub import ANA, BO, TEACHER, Hub, Machine, free_port, shared_environment, why_no_hub

pytestmark = [pytest.mark.slow]

CLIENT_ID = "ctxlab-lti-check"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


class Platform:
    """The LMS: its key set on a loopback port, and launches signed with its key."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = uuid.uuid4().hex
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        keys = json.dumps({"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  (http.server's name)
                status, body = (200, keys) if self.path == "/jwks" else (404, b"{}")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def settings(self) -> dict[str, str]:
        return {"CTXLAB_AUTH": "lti13", "CTXLAB_LTI_ISSUER": self.url, "CTXLAB_LTI_CLIENT_ID": CLIENT_ID,
                "CTXLAB_LTI_AUTHORIZE_URL": f"{self.url}/authorize", "CTXLAB_LTI_JWKS_URL": f"{self.url}/jwks"}

    def id_token(self, user: str, nonce: str, *, roles: tuple[str, ...] = (LEARNER_ROLE,), audience: str = CLIENT_ID,
                 key=None) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url, "aud": audience, "azp": audience, "sub": f"lms-{uuid.uuid4().hex[:8]}", "iat": now,
            "exp": now + 300, "nonce": nonce,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": "1", LTI + "target_link_uri": "https://hub.example/hub/",
            LTI + "resource_link": {"id": "lesson-01"}, LTI + "roles": list(roles),
            LTI + "context": {"id": "cwl-2026", "label": "CWL", "title": "Context Window Lab"},
            LTI + "custom": {"unix_user": user},
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def request(url: str, form: dict | None = None, cookies: dict | None = None) -> tuple[int, dict, dict, str]:
    """One request without following redirects: its status, headers (lower-case names), the cookies
    it set, its body."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(urllib.request.Request(url, data=data, headers=headers), timeout=60)
    except urllib.error.HTTPError as err:
        response = err
    with response:
        body = response.read().decode(errors="replace")
        set_cookies = response.headers.get_all("Set-Cookie") or []
        made = dict(re.match(r"([^=]+)=([^;]*)", cookie).groups() for cookie in set_cookies)
        return response.status, {k.lower(): v for k, v in response.headers.items()}, made, body


def launch(hub: Hub, platform: Platform, user: str, **token_options) -> tuple[int, dict]:
    """The LMS launches the hub for ``user``: the callback's status, and the browser's cookies."""
    status, headers, cookies, _ = request(f"{hub.url}/hub/lti13/oauth_login", form={
        "iss": platform.url, "login_hint": "opaque", "target_link_uri": f"{hub.url}/hub/", "client_id": CLIENT_ID})
    assert status == 302 and headers.get("location", "").startswith(f"{platform.url}/authorize?"), (
        status, headers, hub.tail())
    asked = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(headers["location"]).query))
    assert asked["client_id"] == CLIENT_ID and asked["response_mode"] == "form_post", asked
    nonce = token_options.pop("nonce", asked["nonce"])
    token = platform.id_token(user, nonce, **token_options)
    status, _, set_later, _ = request(asked["redirect_uri"], form={"id_token": token, "state": asked["state"]},
                                   cookies=cookies)
    return status, {**cookies, **set_later}


def logged_in_as(hub: Hub, cookies: dict, user: str) -> bool:
    """Whether the hub takes the browser with ``cookies`` for ``user``: its home page opens, for them."""
    status, _, _, page = request(f"{hub.url}/hub/home", cookies=cookies)
    return status == 200 and user in page


def why_not_here() -> str | None:
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None:
        return "the hub test creates local Unix users: it needs root with useradd and runuser (CI has both)"
    return why_no_hub()


@pytest.fixture(scope="module")
def hub():
    reason = why_not_here()
    if reason:
        if os.environ.get("CTXLAB_REQUIRE_HUB") == "1":
            pytest.fail(f"CTXLAB_REQUIRE_HUB=1 but the hub cannot run here: {reason}")
        pytest.skip(reason)
    base = Path(tempfile.mkdtemp(prefix="ctxlab-lti-", dir="/tmp"))
    base.chmod(0o755)
    machine = platform = running = None
    try:
        machine = Machine(base, shared_environment(base))
        found = subprocess.run([str(machine.bin / "python"), "-c", "import ltiauthenticator"], capture_output=True,
                               check=False)
        assert found.returncode == 0, f"no jupyterhub-ltiauthenticator in the hub's environment: {found.stderr[-500:]}"
        for name in (TEACHER, ANA, BO):
            machine.add_user(name)
        platform = Platform()
        for name in ("CTXLAB_SHARED_ROOT", "CTXLAB_INSTRUCTOR_GROUP"):
            machine.env.pop(name)
        machine.env.update(platform.settings(), CTXLAB_INSTRUCTORS=TEACHER, CTXLAB_LEARNERS=ANA)  # bo is not listed
        running = Hub(machine)
        running.wait_up()
        yield running, platform
    finally:
        if running is not None:
            running.stop()
        if platform is not None:
            platform.stop()
        if machine is not None:
            machine.remove_users()
        shutil.rmtree(base, ignore_errors=True)


def groups_of(hub: Hub, user: str) -> tuple[list[str], bool]:
    status, text = hub.call("GET", f"/hub/api/users/{user}")
    assert status == 200, (status, text)
    found = json.loads(text)
    return sorted(found["groups"]), found["admin"]


def test_a_listed_learner_gets_in_through_the_lms(hub):
    running, platform = hub
    assert not logged_in_as(running, {}, ANA)
    status, cookies = launch(running, platform, ANA)
    assert status == 302, (status, running.tail())
    assert logged_in_as(running, cookies, ANA)


def test_an_lms_instructor_role_gives_a_learner_nothing_more(hub):
    running, platform = hub
    status, cookies = launch(running, platform, ANA, roles=(INSTRUCTOR_ROLE,))
    assert status == 302, (status, running.tail())
    assert groups_of(running, ANA) == (["learners"], False)
    assert groups_of(running, TEACHER) == (["instructors"], False)


@pytest.mark.parametrize("forged", ["another key", "another tool", "another nonce", "an unlisted user"])
def test_no_one_gets_in_with_a_launch_the_hub_should_not_trust(hub, forged):
    running, platform = hub
    options = {
        "another key": {"key": rsa.generate_private_key(public_exponent=65537, key_size=2048)},
        "another tool": {"audience": "someone-elses-tool"},
        "another nonce": {"nonce": uuid.uuid4().hex},
        "an unlisted user": {},
    }[forged]
    user = BO if forged == "an unlisted user" else ANA
    status, cookies = launch(running, platform, user, **options)
    assert status in (400, 401, 403), (forged, status)
    assert not logged_in_as(running, cookies, user), f"a launch with {forged} logged {user} in"


def test_without_a_launch_no_one_gets_in(hub):
    """The hub's own login form, posted with the claims a launch would carry and no signature:
    the LTI authenticator must not take a user name from it."""
    running, _ = hub
    _, _, cookies, _ = request(f"{running.url}/hub/login")
    xsrf = cookies.get("_xsrf", "")
    for form in ({"sub": ANA}, {"username": ANA, "password": "x"}, {"custom_unix_user": ANA}):
        status, _, set_now, _ = request(f"{running.url}/hub/login", form={**form, "_xsrf": xsrf}, cookies=cookies)
        assert not logged_in_as(running, {**cookies, **set_now}, ANA), f"the login form {form} logged {ANA} in"
