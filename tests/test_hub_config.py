"""``hub/jupyterhub_config.py`` read as JupyterHub reads it, without starting a hub: what it
refuses, and what it gives each kind of user's server (``tests/test_hub.py`` runs the hub)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest
from traitlets.config import Config

CONFIG = Path(__file__).resolve().parents[1] / "hub" / "jupyterhub_config.py"
sys.path.insert(0, str(CONFIG.parent))
import learner_view  # noqa: E402  (hub/learner_view.py, as the configuration imports it)

ME = pwd.getpwuid(os.getuid())
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "01-budget" / "budget.ipynb"


def load(tmp_path: Path, monkeypatch, **variables: str) -> dict:
    """Run the hub's configuration file with ``CTXLAB_*`` ``variables``; its globals.

    The start-up check of what learners can read is recorded, not run: run from this checkout,
    whose editable install points at ``solutions/``, it would refuse every time. Its folders
    are in the globals as ``looked_at``; the check itself is tested below and in test_hub.py.
    """
    looked: dict = {}
    monkeypatch.setattr(learner_view, "refuse_if_learners_can_read_secrets",
                        lambda learners, roots: looked.update(learners=set(learners), roots=list(roots)))
    monkeypatch.setenv("CTXLAB_EXCHANGE", str(tmp_path / "exchange"))
    monkeypatch.setenv("CTXLAB_HUB_DATA", str(tmp_path / "hub-data"))
    for name, value in variables.items():
        monkeypatch.setenv(f"CTXLAB_{name}", value)
    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(CONFIG), "__name__": "jupyterhub_config"}
    exec(compile(CONFIG.read_text(encoding="utf-8"), str(CONFIG), "exec"), namespace)  # noqa: S102
    namespace["looked_at"] = looked
    return namespace


def spawned(namespace: dict, user: str) -> types.SimpleNamespace:
    """A stand-in spawner for ``user`` after the hub's ``pre_spawn_hook``."""
    spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=user), environment={}, cmd=None, notebook_dir=None)
    namespace["config_path"](spawner)
    return spawner


def test_an_instructor_gets_a_course_root_in_their_home_and_a_learner_gets_none(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody")
    teacher, learner = spawned(namespace, ME.pw_name), spawned(namespace, "nobody")
    assert teacher.environment["CTXLAB_COURSE_ROOT"] == str(Path(ME.pw_dir) / "course")
    assert "CTXLAB_COURSE_ROOT" not in learner.environment
    assert learner.environment["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0].endswith("hub/learner")
    assert (tmp_path / "exchange").stat().st_mode & 0o7777 == 0o1777
    first = namespace["c"].Spawner.environment["PATH"].split(os.pathsep)[0]
    assert first == str(Path(sys.executable).parent)  # the hub's environment: one for everyone


def test_a_shared_root_needs_the_instructors_group(tmp_path, monkeypatch):
    root = tmp_path / "course"
    root.mkdir()
    with pytest.raises(SystemExit, match="CTXLAB_INSTRUCTOR_GROUP must name"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, SHARED_ROOT=str(root))
    with pytest.raises(SystemExit, match="groupadd no-such-group-cwl"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, SHARED_ROOT=str(root), INSTRUCTOR_GROUP="no-such-group-cwl")


def test_a_shared_root_is_refused_until_it_belongs_to_the_group_and_is_closed(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the hub runs as root and gives the course's exchange folder to root; so does this test")
    group = grp.getgrgid(ME.pw_gid)  # the caller's own group holds the caller
    outsider = next((u.pw_name for u in pwd.getpwall()
                     if u.pw_gid != group.gr_gid and u.pw_name not in group.gr_mem), None)
    root = tmp_path / "course"
    root.mkdir()
    root.chmod(0o755)
    settings = {"INSTRUCTORS": ME.pw_name, "SHARED_ROOT": str(root), "INSTRUCTOR_GROUP": group.gr_name}
    with pytest.raises(SystemExit, match=r"set-group-id and closed to others \(now: 0o755\).*chmod -R g\+rwX,o-rwx"):
        load(tmp_path, monkeypatch, **settings)
    root.chmod(0o2770)
    if outsider:
        with pytest.raises(SystemExit, match=f"instructors not in group {group.gr_name}: \\['{outsider}'\\]"):
            load(tmp_path, monkeypatch, **{**settings, "INSTRUCTORS": f"{ME.pw_name},{outsider}"})
    namespace = load(tmp_path, monkeypatch, **settings, LEARNERS=outsider or "")
    teacher = spawned(namespace, ME.pw_name)
    assert teacher.environment["CTXLAB_COURSE_ROOT"] == str(root) and teacher.environment["CTXLAB_GROUPSHARED"] == "1"
    assert teacher.notebook_dir == str(root) and teacher.cmd[:3] == ["/bin/sh", "-c", 'umask 002 && exec "$@"']
    course_exchange = tmp_path / "exchange" / "context-window-lab"
    assert course_exchange.stat().st_gid == group.gr_gid and course_exchange.stat().st_mode & 0o7777 == 0o2775
    if outsider:
        learner = spawned(namespace, outsider)
        assert "CTXLAB_COURSE_ROOT" not in learner.environment and "umask" not in learner.cmd[2]  # the memory limit only


def test_a_learner_in_the_instructors_group_is_refused(tmp_path, monkeypatch):
    group = grp.getgrgid(ME.pw_gid)
    staff = grp.struct_group((group.gr_name, "x", group.gr_gid, [ME.pw_name, "ana"]))
    real = grp.getgrnam
    monkeypatch.setattr(grp, "getgrnam", lambda name: staff if name == group.gr_name else real(name))
    root = tmp_path / "course"
    root.mkdir()
    root.chmod(0o2770)
    with pytest.raises(SystemExit, match=r"learners in the instructors' group .*\['ana'\].*gpasswd -d USER"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="ana", SHARED_ROOT=str(root),
             INSTRUCTOR_GROUP=group.gr_name)


@pytest.fixture
def runnable_python():
    """A stand-in for ngshare's Python that any user can run: a script that exits 0, in a folder
    every user can reach (pytest's own folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ctxlab-ngshare-python-", dir="/tmp"))
    folder.chmod(0o755)
    python = folder / "python"
    python.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    python.chmod(0o755)
    yield python
    shutil.rmtree(folder, ignore_errors=True)


def system_user() -> str:
    """A system user that is neither root nor one the tests log in as."""
    for name in ("daemon", "bin", "sys"):
        try:
            if pwd.getpwnam(name).pw_uid != 0:
                return name
        except KeyError:
            continue
    pytest.skip("this machine has no daemon, bin or sys user to run ngshare as")


def test_with_ngshares_python_the_hub_runs_it_and_every_server_exchanges_through_it(tmp_path, monkeypatch,
                                                                                     runnable_python):
    owner = system_user()
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=f"{ME.pw_name},teacher2", LEARNERS="nobody",
                     NGSHARE_PYTHON=str(runnable_python), NGSHARE_PORT="10555", NGSHARE_USER=owner,
                     NGSHARE_DATA=str(tmp_path / "ngshare"))
    (service,) = [s for s in namespace["c"].JupyterHub.services if s["name"] == "ngshare"]
    assert service["name"] == "ngshare" and service["url"] == "http://127.0.0.1:10555"
    command = service["command"]
    assert command[:2] == [str(runnable_python), str(CONFIG.parent / "ngshare" / "serve.py")]  # loopback, no reload
    assert command[command.index("--admins") + 1] == ",".join(sorted({ME.pw_name, "teacher2"}))
    assert command[command.index("--database") + 1] == f"sqlite:///{tmp_path / 'ngshare' / 'ngshare.db'}"
    assert namespace["c"].Spawner.environment["CTXLAB_NGSHARE_URL"] == "http://127.0.0.1:10555/services/ngshare"
    store = (tmp_path / "ngshare").stat()
    assert store.st_mode & 0o777 == 0o700
    if os.geteuid() == 0:  # the hub as root runs ngshare as its own user, who alone owns the store
        assert service["user"] == owner and store.st_uid == pwd.getpwnam(owner).pw_uid
    else:  # nobody to switch to: ngshare runs as the hub's user
        assert "user" not in service
    without = load(tmp_path / "plain", monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody", NGSHARE_PYTHON="")
    assert "CTXLAB_NGSHARE_URL" not in without["c"].Spawner.environment and [s["name"] for s in without["c"].JupyterHub.services] == ["idle-culler"]


def test_ngshare_needs_its_python_and_an_instructor(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match=r"hub/install.py PREFIX. makes ngshare's environment"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, NGSHARE_PYTHON=str(tmp_path / "missing" / "python"))
    python = tmp_path / "python"
    python.touch()
    monkeypatch.delenv("CTXLAB_INSTRUCTORS", raising=False)
    with pytest.raises(SystemExit, match="CTXLAB_INSTRUCTORS is empty"):
        load(tmp_path, monkeypatch, LEARNERS="nobody", NGSHARE_PYTHON=str(python))


@pytest.mark.skipif(os.geteuid() != 0, reason="only a hub run as root switches ngshare to a user of its own")
def test_ngshare_runs_only_as_a_system_user_of_its_own_that_can_run_it(tmp_path, monkeypatch, runnable_python):
    common = {"INSTRUCTORS": ME.pw_name, "LEARNERS": "nobody", "NGSHARE_DATA": str(tmp_path / "ngshare")}
    with pytest.raises(SystemExit, match=r"CTXLAB_NGSHARE_USER=ctxlab-no-such-user: there is no such user; create it "
                                         r"with `useradd --system"):
        load(tmp_path, monkeypatch, NGSHARE_PYTHON=str(runnable_python), NGSHARE_USER="ctxlab-no-such-user", **common)
    for who in ("root", "nobody"):  # root, and a learner
        with pytest.raises(SystemExit, match=f"CTXLAB_NGSHARE_USER={who} is root, an instructor or a learner"):
            load(tmp_path, monkeypatch, NGSHARE_PYTHON=str(runnable_python), NGSHARE_USER=who, **common)
    unrunnable = tmp_path / "python"  # under pytest's folder, which only root can reach
    unrunnable.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    unrunnable.chmod(0o755)
    owner = system_user()
    with pytest.raises(SystemExit, match=f"user {owner} cannot run {unrunnable} or import ngshare with it"):
        load(tmp_path, monkeypatch, NGSHARE_PYTHON=str(unrunnable), NGSHARE_USER=owner, **common)


def test_the_exchange_config_uses_ngshare_when_the_hub_runs_it(monkeypatch):
    """hub/exchange/nbgrader_config.py, as nbgrader reads it in a server given CTXLAB_NGSHARE_URL."""
    monkeypatch.setenv("JUPYTERHUB_USER", "nobody")  # as in a server: ngshare-exchange reads it on import
    import ngshare_exchange

    exchange_config = CONFIG.parent / "exchange" / "nbgrader_config.py"
    monkeypatch.delenv("CTXLAB_COURSE_ROOT", raising=False)
    for url in ("http://127.0.0.1:10555/services/ngshare", None):
        if url:
            monkeypatch.setenv("CTXLAB_NGSHARE_URL", url)
        else:
            monkeypatch.delenv("CTXLAB_NGSHARE_URL", raising=False)
        config = Config()
        exec(compile(exchange_config.read_text(encoding="utf-8"), str(exchange_config), "exec"),  # noqa: S102
             {"get_config": lambda config=config: config, "__file__": str(exchange_config)})
        if url:
            assert config.ExchangeFactory.submit is ngshare_exchange.ExchangeSubmit
            assert config.ExchangeFactory.exchange._ngshare_url == url
        else:  # the folder, with the course's own collect and submit
            assert dict(config.ExchangeFactory) == {"collect": "ctxlab_exchange.Collect", "submit": "ctxlab_exchange.Submit"}


def test_the_hub_looks_as_a_learner_at_every_folder_it_uses(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody")
    looked = namespace["looked_at"]
    assert looked["learners"] == {"nobody"}
    roots = set(looked["roots"])
    import ctxlab
    for folder in (CONFIG.parent, CONFIG.parent.parent, Path(sys.prefix), tmp_path / "exchange",
                   tmp_path / "hub-data", Path(ME.pw_dir), Path(ctxlab.__file__).resolve().parents[1]):
        assert str(folder) in roots, f"the start-up check does not look in {folder}: {sorted(roots)}"


def test_a_solution_a_learner_can_read_stops_the_hub_with_what_to_do(request):
    """The check, run as ``nobody`` when root (as the hub runs), else as the caller: a solution
    notebook readable by others is named; closed to others, it is not (root only). The folder is
    made in /tmp itself: pytest's own temporary folders are closed to others."""
    shared = Path(tempfile.mkdtemp(prefix="ctxlab-learner-view-", dir="/tmp"))
    shared.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    leak = shared / "budget.ipynb"
    shutil.copy(SOLUTION, leak)
    leak.chmod(0o644)
    (shared / "learner.ipynb").write_text('{"cells": [], "note": "import ctxlab"}', encoding="utf-8")
    (shared / "guide.rst").write_text("    ### BEGIN SOLUTION\n(nbgrader's own guide)\n", encoding="utf-8")
    found = learner_view.readable_secrets(["nobody"], [str(shared)])
    assert [paths for paths in found.values()] == [[str(leak)]], found
    with pytest.raises(SystemExit, match=r"(?s)hidden tests or solutions.*budget\.ipynb.*hub/install\.py.*chmod -R o-rwx"):
        learner_view.refuse_if_learners_can_read_secrets(["nobody"], [str(shared)])
    if os.geteuid() == 0:
        leak.chmod(0o600)
        assert learner_view.readable_secrets(["nobody"], [str(shared)]) == {}
        learner_view.refuse_if_learners_can_read_secrets(["nobody"], [str(shared)])  # starts


def test_the_checkouts_own_solutions_are_found_by_the_check(tmp_path):
    """From a checkout, what the editable install points at holds the solutions: the folders the
    check looks at include them, which is why the hub is installed from a wheel."""
    roots = learner_view.folders_in_use(CONFIG.parent, tmp_path, [], [], tmp_path)
    assert str(SOLUTION) in learner_view.scan(roots)


def test_install_puts_no_checkout_file_where_the_hub_reads(tmp_path):
    """hub/install.py: the environment's list has no editable line and pins the hub's packages as
    the checkout does; the hub's files copied out hold no marker the start-up check would find
    (its own module included); a prefix inside the checkout is refused."""
    import install

    wanted = install.requirements()
    assert not any(line.startswith("-e") for line in wanted)
    assert "nbgrader==0.9.6" in wanted and any(line.startswith("jupyterhub==") for line in wanted)
    makefile = (CONFIG.parents[1] / "Makefile").read_text(encoding="utf-8")
    assert f"--no-deps {install.NGSHARE_EXCHANGE}" in makefile, "the Makefile and hub/install.py pin other ngshare-exchanges"
    copied = install.copy_hub_files(tmp_path / "hub")
    assert sorted(p.name for p in copied.iterdir()) == sorted(install.HUB_FILES)
    assert learner_view.scan([str(copied)]) == []
    with pytest.raises(SystemExit):
        install.main([str(CONFIG.parents[1] / "hub-here")])


def test_the_folder_exchange_collects_only_what_a_learner_made_for_themselves(tmp_path):
    """hub/exchange/ctxlab_exchange.py's checks: a folder of another owner, one holding a link, one
    over the size limit are refused, each saying why; a learner's own plain folder is not."""
    sys.path.insert(0, str(CONFIG.parent / "exchange"))
    try:
        from ctxlab_exchange import problem_with
    finally:
        sys.path.remove(str(CONFIG.parent / "exchange"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "budget.ipynb").write_text("{}", encoding="utf-8")
    assert problem_with(str(mine), ME.pw_name, 1000) is None
    assert "over the limit of 1" in problem_with(str(mine), ME.pw_name, 1)
    (mine / "answer.ipynb").symlink_to(SOLUTION)
    assert "symbolic link" in problem_with(str(mine), ME.pw_name, 10**9) and "answer.ipynb" in problem_with(
        str(mine), ME.pw_name, 10**9)
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
        assert "belongs to nobody: a submission in another's name" in problem_with(str(theirs), ME.pw_name, 1000)


def test_nbgrader_autograde_is_switched_off_where_the_hubs_configuration_is_read(tmp_path):
    """``nbgrader autograde``, run with the hub's exchange configuration (as in an instructor's
    terminal), stops as it starts, saying what to use; other nbgrader commands still run."""
    import subprocess

    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(CONFIG.parent / "exchange"), "CTXLAB_EXCHANGE": str(tmp_path / "x")}
    env.pop("CTXLAB_COURSE_ROOT", None)
    nbgrader = Path(sys.executable).parent / "nbgrader"
    typed = subprocess.run([str(nbgrader), "autograde", "01-budget", "--force"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    assert typed.returncode != 0 and "autograde is switched off" in typed.stderr + typed.stdout, typed.stderr[-2000:]
    assert "python -m autograder grade" in typed.stderr + typed.stdout
    listed = subprocess.run([str(nbgrader), "list"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                            check=False)
    assert "switched off" not in listed.stderr + listed.stdout, listed.stderr[-2000:]


def test_the_hub_listens_on_loopback_unless_it_has_tls_or_is_told_plain_http(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name)
    assert namespace["c"].JupyterHub.bind_url == "http://127.0.0.1:8000"
    for url in ("http://:8000", "http://0.0.0.0:8000", "http://hub.example.edu:8000"):
        with pytest.raises(SystemExit, match="without TLS, and the hub takes Unix passwords.*CTXLAB_SSL_CERT"):
            load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, HUB_URL=url)
    assert load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, HUB_URL="http://:8000",
                PLAIN_HTTP="1")["c"].JupyterHub.bind_url == "http://:8000"
    monkeypatch.delenv("CTXLAB_PLAIN_HTTP")
    with pytest.raises(SystemExit, match="asks for https"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, HUB_URL="https://:443")
    with pytest.raises(SystemExit, match="both CTXLAB_SSL_CERT and CTXLAB_SSL_KEY"):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, HUB_URL="https://:443", SSL_CERT="/etc/cert.pem")
    hub = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, HUB_URL="https://:443", SSL_CERT="/etc/cert.pem",
               SSL_KEY="/etc/key.pem")["c"].JupyterHub
    assert (hub.bind_url, hub.ssl_cert, hub.ssl_key) == ("https://:443", "/etc/cert.pem", "/etc/key.pem")


def test_only_the_listed_users_log_in_and_the_admins_are_named(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody")
    authenticator = namespace["c"].Authenticator
    assert authenticator.allow_existing_users is False
    assert authenticator.allowed_users == {ME.pw_name, "nobody"} and authenticator.admin_users == set()
    named = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, ADMINS="it-admin")["c"].Authenticator
    assert named.admin_users == {"it-admin"}



def test_idle_servers_are_stopped_by_the_culler_with_only_the_scopes_it_needs(tmp_path, monkeypatch):
    hub = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name)["c"].JupyterHub
    (culler,) = [s for s in hub.services if s["name"] == "idle-culler"]
    assert culler["command"][1:] == ["-m", "jupyterhub_idle_culler", "--timeout=3600", "--cull-every=600"]
    (role,) = [r for r in hub.load_roles if r["name"] == "idle-culler"]
    assert sorted(role["scopes"]) == ["delete:servers", "list:users", "read:servers", "read:users:activity"]
    assert role["services"] == ["idle-culler"]
    never = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, IDLE_TIMEOUT="0")["c"].JupyterHub
    assert not [s for s in never.services if s["name"] == "idle-culler"]


def test_a_learners_server_and_kernels_have_a_memory_limit(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody")
    learner, teacher = spawned(namespace, "nobody"), spawned(namespace, ME.pw_name)
    assert learner.cmd[:3] == ["/bin/sh", "-c", 'ulimit -v 4194304 && exec "$@"'] and learner.cmd[4].endswith(
        "jupyterhub-singleuser")
    assert teacher.cmd is None  # staff run the grader and make release in their servers
    unlimited = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody", MEMORY_MB="0")
    assert spawned(unlimited, "nobody").cmd is None


LTI_SETTINGS = {"AUTH": "lti13", "LTI_ISSUER": "https://canvas.instructure.com", "LTI_CLIENT_ID": "10000000001, 2",
                "LTI_AUTHORIZE_URL": "https://canvas.example.edu/api/lti/authorize_redirect",
                "LTI_JWKS_URL": "https://sso.canvaslms.com/api/lti/security/jwks"}


def test_logging_in_through_the_lms_is_configured_from_the_environment(tmp_path, monkeypatch):
    namespace = load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, LEARNERS="nobody", **LTI_SETTINGS)
    config = namespace["c"]
    assert config.JupyterHub.authenticator_class.__name__ == "LaunchOnlyLTI13Authenticator"
    assert config.LTI13Authenticator.client_id == {"10000000001", "2"}
    assert config.LTI13Authenticator.jwks_endpoint == LTI_SETTINGS["LTI_JWKS_URL"]
    assert config.LTI13Authenticator.username_key == "custom_unix_user"
    assert config.Authenticator.allowed_users == {ME.pw_name, "nobody"}  # the lists still decide
    assert config.JupyterHub.tornado_settings["cookie_options"] == {"samesite": "None", "secure": True}
    assert load(tmp_path / "pam", monkeypatch, INSTRUCTORS=ME.pw_name, AUTH="pam")["c"].JupyterHub.authenticator_class == "pam"


@pytest.mark.parametrize("change, refusal", [
    ({"LTI_JWKS_URL": ""}, r"CTXLAB_AUTH=lti13 needs CTXLAB_LTI_JWKS_URL: the LMS shows them"),
    ({"LTI_ISSUER": "", "LTI_CLIENT_ID": ""}, r"needs CTXLAB_LTI_ISSUER, CTXLAB_LTI_CLIENT_ID"),
    ({"LTI_JWKS_URL": "http://lms.example/jwks"}, r"CTXLAB_LTI_JWKS_URL=http://lms.example/jwks must be an https:// URL"),
    ({"AUTH": "ldap"}, r"CTXLAB_AUTH=ldap: use pam .* or lti13"),
])
def test_an_lms_login_that_cannot_be_trusted_is_refused(tmp_path, monkeypatch, change, refusal):
    with pytest.raises(SystemExit, match=refusal):
        load(tmp_path, monkeypatch, INSTRUCTORS=ME.pw_name, **{**LTI_SETTINGS, **change})
