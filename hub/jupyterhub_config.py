"""JupyterHub for a class of Context Window Lab on one machine, with nbgrader's exchange.

Run as root on the course's machine, installed away from any checkout by ``hub/install.py``:

    CTXLAB_INSTRUCTORS=teacher CTXLAB_LEARNERS=ana,bo \\
        /opt/ctxlab-hub/env/bin/jupyterhub -f /opt/ctxlab-hub/hub/jupyterhub_config.py

At each start it checks, as a learner, that no learner can read a hidden test or a solution of
this course in any folder it or the servers use, and refuses to start otherwise
(``learner_view.py``).

Everyone logs in as their Unix account (with its password, PAM, or through the school's LMS
with LTI 1.3: ``CTXLAB_AUTH=lti13``) and gets their own JupyterLab server, started
as that user from the same Python environment as the hub, so learners have ``ctxlab`` and the
course's pinned packages. Two groups decide the role:

* ``learners`` fetch, validate and submit lessons in the Assignments tab and fetch their
  feedback; the formgrader and the assignment-creation tools are switched off for them
  (``hub/learner/``);
* ``instructors`` also get nbgrader's formgrader, at ``/user/<name>/formgrader`` in a tab of its
  own (JupyterHub forbids framing a user's server, so the JupyterLab panel stays blank); their
  copy of this repository, ``~/course`` (or one root all instructors share,
  ``CTXLAB_SHARED_ROOT``), is the course root, where they run ``nbgrader release_assignment``,
  ``collect``, ``release_feedback`` and ``python -m autograder grade``, and the formgrader
  shows what the grader wrote to ``grading-output/`` there (see ``hub/README.md``).

Every server reads ``hub/exchange/nbgrader_config.py``: one exchange folder and one course id
for all. Settings come from the environment, so one file serves every class:

===========================  ==================================  =========================================
variable                     default                             what it is
===========================  ==================================  =========================================
``CTXLAB_COURSE_ID``         ``context-window-lab``              nbgrader's course id in the exchange
``CTXLAB_EXCHANGE``          ``/srv/nbgrader/exchange``          the exchange root (``0o1777``, at each start)
``CTXLAB_INSTRUCTORS``       (none)                              Unix users who teach, comma-separated
``CTXLAB_COURSE_FOLDER``     ``course``                          the course root in each instructor's home
``CTXLAB_SHARED_ROOT``       (none)                              one course root for all instructors
``CTXLAB_INSTRUCTOR_GROUP``  (none)                              the instructors' Unix group, owning it
``CTXLAB_LEARNERS``          (none)                              Unix users who learn, comma-separated
``CTXLAB_HUB_URL``           ``http://127.0.0.1:8000``           where the hub listens (beyond loopback: TLS)
``CTXLAB_SSL_CERT``          (none)                              the hub's TLS certificate (and ``_KEY``)
``CTXLAB_PLAIN_HTTP``        (none)                              ``1``: plain HTTP beyond loopback, on purpose
``CTXLAB_ADMINS``            (none)                              the hub's admins, comma-separated
``CTXLAB_IDLE_TIMEOUT``      ``3600``                            seconds before an idle server is stopped (0: never)
``CTXLAB_MEMORY_MB``         ``4096``                            memory each process of a learner's server may map
``CTXLAB_HUB_DATA``          ``/srv/jupyterhub``                 the hub's database and cookie secret
``CTXLAB_AUTH``              ``pam``                             ``lti13``: log in through the LMS (LTI 1.3)
``CTXLAB_LTI_ISSUER``        (none)                              with ``lti13``: the LMS's issuer, and its
``CTXLAB_LTI_CLIENT_ID``     (none)                              client id(s), ``_AUTHORIZE_URL``,
``CTXLAB_LTI_JWKS_URL``      (none)                              ``_JWKS_URL`` and ``_USERNAME_KEY``
``CTXLAB_NGSHARE_PYTHON``    (none)                              ngshare's Python: the exchange service
``CTXLAB_NGSHARE_PORT``      ``10101``                           where the hub runs ngshare (loopback)
``CTXLAB_NGSHARE_USER``      ``ctxlab-ngshare``                  the system user ngshare runs as (hub as root)
``CTXLAB_NGSHARE_DATA``      ``/srv/ngshare``                    ngshare's database and files, its user's alone
===========================  ==================================  =========================================

With ``CTXLAB_NGSHARE_PYTHON`` (``PREFIX/ngshare-env/bin/python``, which ``hub/install.py``
makes) the hub runs ngshare as a service, as ``CTXLAB_NGSHARE_USER``, and every server exchanges
through it instead of the shared folder: for hubs whose servers do not share a disk.

Only listed users may log in. Put TLS in front of the hub (a reverse proxy, or
``c.JupyterHub.ssl_cert``/``ssl_key``) before opening it beyond the machine.
"""

import grp
import os
import pwd
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

c = get_config()  # noqa: F821  (JupyterHub provides get_config)

HUB = Path(__file__).resolve().parent
COURSE_ID = os.environ.get("CTXLAB_COURSE_ID", "context-window-lab")
EXCHANGE = Path(os.environ.get("CTXLAB_EXCHANGE", "/srv/nbgrader/exchange"))
DATA = Path(os.environ.get("CTXLAB_HUB_DATA", "/srv/jupyterhub"))
COURSE_FOLDER = os.environ.get("CTXLAB_COURSE_FOLDER", "course")


def _users(variable: str) -> set[str]:
    return {name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()}


def _known(name: str) -> bool:
    """Whether ``name`` is a Unix user of this machine."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


INSTRUCTORS = _users("CTXLAB_INSTRUCTORS")
LEARNERS = _users("CTXLAB_LEARNERS") - INSTRUCTORS

# The exchange must exist and be writable by everyone; nbgrader then gives each course folder
# in it the permissions its documentation lists (inbound 0o733, feedback 0o711...). The root is
# sticky, as /tmp is: anyone may create a folder in it, but only its owner may rename or remove
# it. Without the sticky bit any learner could rename the course folder, put one of their own
# in its place, and receive the other learners' submissions.
EXCHANGE_MODE = 0o1777
EXCHANGE.mkdir(parents=True, exist_ok=True)
EXCHANGE.chmod(EXCHANGE_MODE)
DATA.mkdir(parents=True, exist_ok=True, mode=0o700)

# Several instructors share one course root and one gradebook (nbgrader's "groupshared"): a
# Unix group holds the instructors and nobody else; the course root and the course's folder in
# the exchange belong to it, with the set-group-id bit so that whatever is made inside does too,
# and instructors' servers write with umask 002 so that each can change what another made.
SHARED_ROOT = os.environ.get("CTXLAB_SHARED_ROOT")
GROUP = os.environ.get("CTXLAB_INSTRUCTOR_GROUP")


def _instructor_group(name: str | None) -> int:
    """The id of the instructors' group, after checking it holds every instructor, no learner."""
    if not name:
        raise SystemExit("CTXLAB_SHARED_ROOT is set, so CTXLAB_INSTRUCTOR_GROUP must name the Unix group of the "
                         "instructors (groupadd cwl-staff && usermod -aG cwl-staff teacher)")
    try:
        group = grp.getgrnam(name)
    except KeyError:
        raise SystemExit(f"CTXLAB_INSTRUCTOR_GROUP={name}: there is no such group; create it with "
                         f"`groupadd {name}` and add each instructor with `usermod -aG {name} USER`") from None
    members = set(group.gr_mem) | {user.pw_name for user in pwd.getpwall() if user.pw_gid == group.gr_gid}
    if INSTRUCTORS - members:
        raise SystemExit(f"instructors not in group {name}: {sorted(INSTRUCTORS - members)}; add each with "
                         f"`usermod -aG {name} USER`")
    if LEARNERS & members:
        raise SystemExit(f"learners in the instructors' group {name} could read the solutions and every "
                         f"submission: {sorted(LEARNERS & members)}; remove them with `gpasswd -d USER {name}`")
    return group.gr_gid


if SHARED_ROOT:
    GID = _instructor_group(GROUP)
    root = Path(SHARED_ROOT)
    shown = root.stat() if root.is_dir() else None
    if shown is None or shown.st_gid != GID or shown.st_mode & 0o2070 != 0o2070 or shown.st_mode & 0o007:
        raise SystemExit(
            f"CTXLAB_SHARED_ROOT={root} must be a folder of group {GROUP}, set-group-id and closed to others "
            f"(now: {'missing' if shown is None else oct(shown.st_mode & 0o7777)}): clone the course there, then "
            f"`chgrp -R {GROUP} {root} && chmod -R g+rwX,o-rwx {root} && find {root} -type d -exec chmod g+s {{}} +`")
    course_exchange = EXCHANGE / COURSE_ID  # made here so its group is the instructors', not a learner's
    course_exchange.mkdir(exist_ok=True)
    os.chown(course_exchange, 0, GID)
    course_exchange.chmod(0o2775)

# Where the hub listens: this machine only by default, behind a TLS-terminating proxy (nginx,
# Caddy) on it. The hub takes Unix passwords, so plain HTTP on another interface would carry them
# in clear: beyond loopback it needs its own certificate, or CTXLAB_PLAIN_HTTP=1 said on purpose.
BIND_URL = os.environ.get("CTXLAB_HUB_URL", "http://127.0.0.1:8000")
SSL_CERT, SSL_KEY = os.environ.get("CTXLAB_SSL_CERT"), os.environ.get("CTXLAB_SSL_KEY")


def _check_bind(url: str, cert: str | None, key: str | None, plain: bool) -> None:
    """``SystemExit`` saying what to set when the hub would take passwords in clear beyond loopback."""
    if bool(cert) != bool(key):
        raise SystemExit("set both CTXLAB_SSL_CERT and CTXLAB_SSL_KEY (the certificate and its key), or neither")
    parsed = urlparse(url)
    if cert and parsed.scheme != "https":
        raise SystemExit(f"CTXLAB_HUB_URL={url}: with a certificate the hub serves https; write https://...")
    if parsed.scheme == "https" and not cert:
        raise SystemExit(f"CTXLAB_HUB_URL={url} asks for https: give the certificate and its key "
                         "(CTXLAB_SSL_CERT, CTXLAB_SSL_KEY), or listen on http://127.0.0.1 behind a TLS proxy")
    if parsed.hostname not in ("127.0.0.1", "localhost", "::1") and not cert and not plain:
        raise SystemExit(
            f"CTXLAB_HUB_URL={url} listens beyond this machine without TLS, and the hub takes Unix passwords: "
            "keep the default (http://127.0.0.1:8000) behind a TLS proxy such as nginx or Caddy, or give the hub "
            "a certificate (CTXLAB_SSL_CERT, CTXLAB_SSL_KEY, and an https:// URL); CTXLAB_PLAIN_HTTP=1 allows "
            "plain HTTP on a network you trust")


_check_bind(BIND_URL, SSL_CERT, SSL_KEY, os.environ.get("CTXLAB_PLAIN_HTTP") == "1")
c.JupyterHub.bind_url = BIND_URL
if SSL_CERT:
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = SSL_CERT, SSL_KEY
c.JupyterHub.db_url = f"sqlite:///{DATA / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(DATA / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(DATA / "jupyterhub-proxy.pid")

# How people log in: with their Unix password (PAM), or through the school's LMS with LTI 1.3
# (CTXLAB_AUTH=lti13): the LMS signs a launch for the person and the hub checks the signature
# against the LMS's published keys. Either way only the listed users get in, and the lists, not
# the LMS's roles, decide who is an instructor: a role changed in the LMS changes nothing here.
AUTH = os.environ.get("CTXLAB_AUTH", "pam")
LTI_SETTINGS = ("ISSUER", "CLIENT_ID", "AUTHORIZE_URL", "JWKS_URL")


def _lti_settings() -> dict[str, str]:
    """The LMS's LTI 1.3 settings from ``CTXLAB_LTI_*``, after checking each is given and safe."""
    given = {name: os.environ.get(f"CTXLAB_LTI_{name}", "").strip() for name in LTI_SETTINGS}
    missing = [f"CTXLAB_LTI_{name}" for name, value in given.items() if not value]
    if missing:
        raise SystemExit(f"CTXLAB_AUTH=lti13 needs {', '.join(missing)}: the LMS shows them when the hub is "
                         "registered there as an LTI 1.3 tool (hub/README.md, \"Logging in through the LMS\")")
    for name in ("ISSUER", "AUTHORIZE_URL", "JWKS_URL"):
        parsed = urlparse(given[name])
        on_this_machine = parsed.hostname in ("127.0.0.1", "localhost", "::1")
        if parsed.scheme != "https" and not (parsed.scheme == "http" and on_this_machine):
            raise SystemExit(f"CTXLAB_LTI_{name}={given[name]} must be an https:// URL (http:// only on this "
                             "machine): the keys and launches it carries decide who logs in")
    return given


if AUTH == "lti13":
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler

    class LaunchOnlyLTI13Authenticator(LTI13Authenticator):
        """The LTI 1.3 authenticator, taking a user only from a launch whose signature it checked.

        jupyterhub-ltiauthenticator 1.6.3 also answers the hub's own login form: its
        ``authenticate`` takes the user name from whatever the form posts (``sub=NAME`` logs in
        as NAME, with no signature; ``tests/test_hub_lti.py`` tries it). Only its launch
        callback, which verifies the LMS's signature, state and nonce, may log anyone in.
        """

        async def authenticate(self, handler, data=None):
            if not isinstance(handler, LTI13CallbackHandler):
                self.log.warning("refused a login that was not a signed LTI launch (%s)", type(handler).__name__)
                return None
            return await super().authenticate(handler, data)

    LTI = _lti_settings()
    c.JupyterHub.authenticator_class = LaunchOnlyLTI13Authenticator
    c.LTI13Authenticator.issuer = LTI["ISSUER"]
    c.LTI13Authenticator.client_id = {part.strip() for part in LTI["CLIENT_ID"].split(",") if part.strip()}
    c.LTI13Authenticator.authorize_url = LTI["AUTHORIZE_URL"]
    c.LTI13Authenticator.jwks_endpoint = LTI["JWKS_URL"]
    # the launch's claim holding the person's Unix login: a custom field the LMS fills in
    c.LTI13Authenticator.username_key = os.environ.get("CTXLAB_LTI_USERNAME_KEY", "custom_unix_user")
    c.LTI13Authenticator.tool_name = "Context Window Lab"
    c.LTI13Authenticator.tool_description = "The course's JupyterLab, one per person, with nbgrader"
    # The LMS posts the signed launch back from its own site: the hub's cookies that check it
    # (state, nonce) must come with that cross-site POST, so they are SameSite=None, and so Secure.
    c.JupyterHub.tornado_settings = {"cookie_options": {"samesite": "None", "secure": True}}
elif AUTH == "pam":
    c.JupyterHub.authenticator_class = "pam"
else:
    raise SystemExit(f"CTXLAB_AUTH={AUTH}: use pam (Unix passwords, the default) or lti13 (through the LMS)")
c.Authenticator.allowed_users = INSTRUCTORS | LEARNERS
# Only the users listed now may log in: one taken off CTXLAB_LEARNERS is out at the next start,
# although the hub's database remembers them. The hub's admins are named, never implied.
c.Authenticator.allow_existing_users = False
ADMINS = _users("CTXLAB_ADMINS")
c.Authenticator.admin_users = ADMINS
c.JupyterHub.load_groups = {
    "instructors": {"users": sorted(INSTRUCTORS)},
    "learners": {"users": sorted(LEARNERS)},
}
# Instructors may see who is in the class and whether their servers run; no one may enter
# another user's server.
c.JupyterHub.load_roles = [
    {"name": "instructor", "groups": ["instructors"], "scopes": ["self", "list:users", "read:users", "read:servers"]},
]

# Servers left running hold memory and kernels all night: jupyterhub-idle-culler stops a
# server idle for CTXLAB_IDLE_TIMEOUT seconds (default an hour; 0 leaves them running). It works
# through the hub's API with only the scopes it needs; the learner's files stay.
IDLE_TIMEOUT = int(os.environ.get("CTXLAB_IDLE_TIMEOUT", "3600"))
c.JupyterHub.services = []
if IDLE_TIMEOUT > 0:
    c.JupyterHub.services.append({"name": "idle-culler", "command": [
        sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_TIMEOUT}",
        f"--cull-every={max(60, IDLE_TIMEOUT // 6)}"]})
    c.JupyterHub.load_roles.append({"name": "idle-culler", "services": ["idle-culler"],
                                    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})

# The exchange service (hub/README.md, "An exchange service"): ngshare, run by the hub from an
# environment of its own, holds the lessons, submissions and feedback; every instructor is one of
# its admins. Servers reach it on loopback with their own API token, which ngshare checks with
# the hub, and nbgrader's exchange classes are ngshare-exchange's (hub/exchange/nbgrader_config.py).
# A hub run as root runs it as a system user of its own, owning its store alone: a flaw in
# ngshare then reaches its files, not root's nor the hub's.
NGSHARE_PYTHON = os.environ.get("CTXLAB_NGSHARE_PYTHON")
NGSHARE_URL = None


def _ngshare_user(name: str) -> pwd.struct_passwd:
    """The system user ngshare runs as, after checking it exists and is nobody else's account."""
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise SystemExit(f"CTXLAB_NGSHARE_USER={name}: there is no such user; create it with `useradd --system "
                         f"--no-create-home --shell /usr/sbin/nologin {name}`") from None
    if user.pw_uid == 0 or name in INSTRUCTORS | LEARNERS:
        raise SystemExit(f"CTXLAB_NGSHARE_USER={name} is root, an instructor or a learner: ngshare must run as a "
                         "system user of its own, which owns its store (useradd --system ...)")
    return user


def _runs_as(user: pwd.struct_passwd, python: str) -> bool:
    """Whether ``user`` can run ``python`` and import ngshare from it."""
    try:
        subprocess.run([python, "-c", "import ngshare"], user=user.pw_uid, group=user.pw_gid, extra_groups=[],
                       cwd="/", check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


if NGSHARE_PYTHON:
    if not Path(NGSHARE_PYTHON).is_file():
        raise SystemExit(f"CTXLAB_NGSHARE_PYTHON={NGSHARE_PYTHON} does not exist: `hub/install.py PREFIX` makes "
                         "ngshare's environment, PREFIX/ngshare-env (hub/README.md)")
    if not INSTRUCTORS:
        raise SystemExit("CTXLAB_NGSHARE_PYTHON is set but CTXLAB_INSTRUCTORS is empty: ngshare needs an instructor "
                         "as its admin to create the course")
    port = int(os.environ.get("CTXLAB_NGSHARE_PORT", "10101"))
    store = Path(os.environ.get("CTXLAB_NGSHARE_DATA", "/srv/ngshare"))
    store.mkdir(parents=True, exist_ok=True, mode=0o700)
    service = {
        "name": "ngshare",
        "url": f"http://127.0.0.1:{port}",
        # serve.py: ngshare on the service's own address (127.0.0.1), without auto-reload
        "command": [NGSHARE_PYTHON, str(HUB / "ngshare" / "serve.py"), "--admins", ",".join(sorted(INSTRUCTORS)),
                    "--storage", str(store / "files"), "--database", f"sqlite:///{store / 'ngshare.db'}"],
        "cwd": str(store),
    }
    if os.geteuid() == 0:
        owner = _ngshare_user(os.environ.get("CTXLAB_NGSHARE_USER", "ctxlab-ngshare"))
        if not _runs_as(owner, NGSHARE_PYTHON):
            raise SystemExit(f"user {owner.pw_name} cannot run {NGSHARE_PYTHON} or import ngshare with it: install "
                             "ngshare's environment with a Python every user can run (`/usr/bin/python3 "
                             "hub/install.py PREFIX` makes PREFIX/ngshare-env)")
        for path in [store, *store.rglob("*")]:
            os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)
        store.chmod(0o700)
        service["user"] = owner.pw_name
    c.JupyterHub.services.append(service)
    NGSHARE_URL = f"http://127.0.0.1:{port}/services/ngshare"

# No learner may read a hidden test or a solution of this course on this machine: the hub looks
# as a learner would, over every folder it and the servers use, and refuses to start otherwise
# (hub/learner_view.py; hub/README.md says how to install so that it starts).
if str(HUB) not in sys.path:
    sys.path.insert(0, str(HUB))
from learner_view import folders_in_use, refuse_if_learners_can_read_secrets  # noqa: E402

if SHARED_ROOT:
    COURSE_ROOTS = [Path(SHARED_ROOT)]
else:
    COURSE_ROOTS = [Path(pwd.getpwnam(name).pw_dir) / COURSE_FOLDER for name in sorted(INSTRUCTORS) if _known(name)]
INSTRUCTOR_HOMES = [Path(pwd.getpwnam(name).pw_dir) for name in sorted(INSTRUCTORS) if _known(name)]
refuse_if_learners_can_read_secrets(LEARNERS, folders_in_use(HUB, EXCHANGE, COURSE_ROOTS, INSTRUCTOR_HOMES, DATA))

c.JupyterHub.spawner_class = "localprocess"
SINGLEUSER = [str(Path(sys.executable).parent / "jupyterhub-singleuser")]
c.Spawner.cmd = SINGLEUSER
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# One environment for everyone: in a server's terminals `python`, `nbgrader` and `jupyter` are the
# hub's, so instructors release and grade with it (`python -m autograder ...` in the course root,
# a checkout) and never build a second one.
SERVER_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH") or "/usr/bin:/bin"])
c.Spawner.environment = {"CTXLAB_COURSE_ID": COURSE_ID, "CTXLAB_EXCHANGE": str(EXCHANGE), "PATH": SERVER_PATH,
                         **({"CTXLAB_NGSHARE_URL": NGSHARE_URL} if NGSHARE_URL else {})}


# One runaway kernel must not take the machine: every process of a learner's server (the server
# and each kernel) may map at most CTXLAB_MEMORY_MB of memory (its address space, set
# with `ulimit -v` before the server starts; kernels inherit it); 0 sets no limit. It is a limit
# per process, not per learner: a learner's total, and CPU shares, need a spawner that puts each
# server in a cgroup of its own (SystemdSpawner's mem_limit and cpu_limit; hub/README.md).
LEARNER_MEMORY_MB = int(os.environ.get("CTXLAB_MEMORY_MB", "4096"))


def config_path(spawner) -> None:
    """Give each server the exchange's settings, learners the learner-only switches, and
    instructors their course root (``hub/exchange/nbgrader_config.py`` points the formgrader
    at it: nbgrader would otherwise take the server's folder, the home, for the course)."""
    folders = [HUB / "exchange"]
    extra = {}
    if spawner.user.name in INSTRUCTORS and SHARED_ROOT:
        extra = {"CTXLAB_COURSE_ROOT": SHARED_ROOT, "CTXLAB_GROUPSHARED": "1"}
        spawner.cmd = ["/bin/sh", "-c", 'umask 002 && exec "$@"', "sh", *SINGLEUSER]
        spawner.notebook_dir = SHARED_ROOT  # the formgrader works only on a course root inside the server's
    elif spawner.user.name in INSTRUCTORS:
        extra["CTXLAB_COURSE_ROOT"] = str(Path(pwd.getpwnam(spawner.user.name).pw_dir) / COURSE_FOLDER)
    else:
        folders.insert(0, HUB / "learner")
        if LEARNER_MEMORY_MB > 0:  # each process of the server (the server, every kernel) at most this
            spawner.cmd = ["/bin/sh", "-c", f'ulimit -v {LEARNER_MEMORY_MB * 1024} && exec "$@"', "sh", *SINGLEUSER]
    path = os.pathsep.join(str(folder) for folder in folders)
    spawner.environment = {**spawner.environment, **extra, "JUPYTER_CONFIG_PATH": path}  # a copy: never shared


c.Spawner.pre_spawn_hook = config_path
