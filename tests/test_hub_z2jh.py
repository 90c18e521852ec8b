"""The Zero to JupyterHub files (``hub/z2jh/``), checked as far as can be without a cluster.

No test here starts Kubernetes, builds the image or installs the chart: those files are marked
NOT RUN. What is checked: every key the values set is one the chart documents, the values
parse and their Python runs (the launch-only login guard
refuses the login form and lets a launch through; learners get the learner switches and
instructors their course root); they agree with the one-machine hub's defaults; the image's
build context lets in no file holding a hidden test or a solution, and everything its COPY
lines need; the grading Job's command parses with the grader's own parser.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from traitlets.config import Config

REPO = Path(__file__).resolve().parents[1]
Z2JH = REPO / "hub" / "z2jh"
sys.path.insert(0, str(REPO / "hub"))
import install  # noqa: E402  (hub/install.py)

MARKERS = ("BEGIN HIDDEN TESTS", "BEGIN SOLUTION")

# The chart's keys these values set, as Zero to JupyterHub documents them (read 2026-12-07):
# its jupyterhub/values.yaml (hub.extraConfig, hub.services, proxy.https.*, singleuser.image,
# .memory, .cpu, .storage.capacity, .extraEnv, .defaultUrl, cull.*), and the hub's own
# jupyterhub_config.py in the chart, which reads hub.config (each traitlets class's settings),
# hub.services.<name>.apiToken and hub.loadRoles (added by its pull request #2405). "*" is a
# name of the user's choosing; what follows hub.config is JupyterHub's own configuration.
DOCUMENTED = (
    "hub.config.*", "hub.extraConfig.*", "hub.services.*.url", "hub.services.*.apiToken",
    "hub.loadRoles.*.services", "hub.loadRoles.*.scopes",
    "proxy.https.enabled", "proxy.https.hosts", "proxy.https.letsencrypt.contactEmail",
    "singleuser.image.name", "singleuser.image.tag", "singleuser.memory.limit", "singleuser.memory.guarantee",
    "singleuser.cpu.limit", "singleuser.cpu.guarantee", "singleuser.storage.capacity", "singleuser.extraEnv.*",
    "singleuser.defaultUrl", "cull.enabled", "cull.timeout", "cull.every",
)


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load((Z2JH / "config.yaml").read_text(encoding="utf-8"))


def leaves(tree: dict, prefix: str = "") -> list[str]:
    """The dotted paths of the values' settings (a mapping's keys, down to what is not one)."""
    paths = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        paths += leaves(value, path + ".") if isinstance(value, dict) and value else [path]
    return paths


def test_every_key_the_values_set_is_one_the_chart_documents(values):
    def documented(path: str) -> bool:
        parts = path.split(".")
        for pattern in DOCUMENTED:
            wanted = pattern.split(".")
            free = wanted[-1] == "*" and pattern in ("hub.config.*", "hub.extraConfig.*", "singleuser.extraEnv.*")
            if free and parts[:len(wanted) - 1] == wanted[:-1]:
                return True
            if len(parts) == len(wanted) and all(w in ("*", p) for w, p in zip(wanted, parts, strict=True)):
                return True
        return False

    unknown = [path for path in leaves(values) if not documented(path)]
    assert not unknown, f"keys the chart does not document: {unknown}"
    assert "singleuser.memory.limit" in leaves(values)  # the walk reaches the leaves


def run_extra_config(values: dict, name: str) -> tuple[Config, dict]:
    config = Config()
    namespace = {"c": config, "get_config": lambda: config}
    exec(compile(values["hub"]["extraConfig"][name], f"extraConfig/{name}", "exec"), namespace)  # noqa: S102
    return config, namespace


def test_the_login_guard_refuses_the_login_form_and_takes_a_launch(values):
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler

    config, namespace = run_extra_config(values, "ctxlab-launch-only")
    authenticator_class = namespace["LaunchOnlyLTI13Authenticator"]
    assert config.JupyterHub.authenticator_class is authenticator_class
    assert config.JupyterHub.tornado_settings["cookie_options"] == {"samesite": "None", "secure": True}
    authenticator = authenticator_class(username_key=values["hub"]["config"]["LTI13Authenticator"]["username_key"])
    claims = {"sub": "lms-1", "https://purl.imsglobal.org/spec/lti/claim/custom": {"unix_user": "ana"}}
    launch = LTI13CallbackHandler.__new__(LTI13CallbackHandler)  # the callback, after it checked the signature
    assert asyncio.run(authenticator.authenticate(launch, claims))["name"] == "ana"
    for handler in (object(), LTI13LoginInitHandler.__new__(LTI13LoginInitHandler)):
        assert asyncio.run(authenticator.authenticate(handler, {"sub": "ana"})) is None


def test_learners_get_the_learner_switches_and_instructors_their_course_root(values):
    config, _ = run_extra_config(values, "ctxlab-roles")

    def spawn(groups: list[str]) -> dict:
        user = types.SimpleNamespace(groups=[types.SimpleNamespace(name=name) for name in groups])
        spawner = types.SimpleNamespace(user=user, environment={})
        config.KubeSpawner.pre_spawn_hook(spawner)
        return spawner.environment

    learner, instructor = spawn(["learners"]), spawn(["instructors"])
    assert learner["JUPYTER_CONFIG_PATH"].split(":") == ["/opt/ctxlab/hub/learner", "/opt/ctxlab/hub/exchange"]
    assert "CTXLAB_COURSE_ROOT" not in learner
    assert instructor == {"JUPYTER_CONFIG_PATH": "/opt/ctxlab/hub/exchange", "CTXLAB_COURSE_ROOT": "/home/jovyan/course"}
    groups = values["hub"]["config"]["JupyterHub"]["load_groups"]
    allowed = set(values["hub"]["config"]["Authenticator"]["allowed_users"])
    assert allowed == set(groups["instructors"]["users"]) | set(groups["learners"]["users"])


def test_the_values_keep_the_one_machine_hubs_defaults(values):
    hub_config = (REPO / "hub" / "jupyterhub_config.py").read_text(encoding="utf-8")
    assert values["cull"]["timeout"] == int(re.search(r'"CTXLAB_IDLE_TIMEOUT", "(\d+)"', hub_config).group(1))
    memory_mb = int(re.search(r'"CTXLAB_MEMORY_MB", "(\d+)"', hub_config).group(1))
    assert values["singleuser"]["memory"]["limit"] == f"{memory_mb // 1024}G"
    lti = values["hub"]["config"]["LTI13Authenticator"]
    assert lti["username_key"] == re.search(r'"CTXLAB_LTI_USERNAME_KEY", "([^"]+)"', hub_config).group(1)
    assert values["hub"]["config"]["Authenticator"]["allow_existing_users"] is False
    assert values["proxy"]["https"]["enabled"] is True
    dockerfile = (Z2JH / "Dockerfile").read_text(encoding="utf-8")
    assert f"--no-deps {install.NGSHARE_EXCHANGE}" in dockerfile


def build_context() -> list[str]:
    """The repository's files (as git knows them, and a wheel in dist/) that the image's
    ``Dockerfile.dockerignore`` lets into its build context: the last pattern matching a path
    decides, ``!`` letting it in (``**`` and ``*`` taken to match across folders: more, not less)."""
    patterns = [line.strip() for line in (Z2JH / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    files.append("dist/ctxlab-0.0.0-py3-none-any.whl")
    kept = []
    for path in files:
        let_in = False
        for pattern in patterns:
            if fnmatch.fnmatch(path, pattern.lstrip("!")):
                let_in = pattern.startswith("!")
        if let_in:
            kept.append(path)
    return kept


def test_the_image_is_built_from_no_file_with_a_hidden_test_or_a_solution():
    context = build_context()
    assert context, "the build context lets nothing in"
    for path in context:
        assert not path.startswith(("solutions/", "tests/", "autograder/", "course/")), path
        if (REPO / path).is_file():
            text = (REPO / path).read_text(encoding="utf-8", errors="replace")
            assert not any(marker in text for marker in MARKERS), f"{path} holds a hidden test or a solution"


def test_every_file_the_image_copies_is_in_its_build_context():
    context = build_context()
    dockerfile = (Z2JH / "Dockerfile").read_text(encoding="utf-8")
    sources = [part for line in dockerfile.splitlines() if line.startswith("COPY ")
               for part in line.split()[1:-1]]
    assert sources, "the Dockerfile copies nothing"
    for source in sources:
        found = [path for path in context if path == source or path.startswith(source.rstrip("/") + "/")]
        assert found, f"COPY {source}: nothing of it is in the build context"
    assert {"hub/exchange/nbgrader_config.py", "hub/exchange/ctxlab_exchange.py", "hub/exchange/no_autograde.py",
            "hub/learner/jupyter_server_config.json"} <= set(context)


def test_the_grading_jobs_command_parses_with_the_graders_parser():
    from autograder.__main__ import build_parser

    job = yaml.safe_load((Z2JH / "grade-job.yaml").read_text(encoding="utf-8"))
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    (container,) = spec["template"]["spec"]["containers"]
    (script,) = container["args"]
    shares = spec["completions"]
    for index in range(shares):
        words = shlex.split(script.replace("$((JOB_COMPLETION_INDEX + 1))", str(index + 1)))
        assert words[:3] == [".venv/bin/python", "-m", "autograder"], words
        args = build_parser().parse_args(words[3:])
        assert args.command == "grade" and args.shard == f"{index + 1}/{shares}", args
        assert args.out == Path(f"/results/shard-{index + 1}") or str(args.out) == f"/results/shard-{index + 1}"
        assert not args.no_sandbox
    mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}
    assert mounts["/submitted"]["readOnly"] is True
