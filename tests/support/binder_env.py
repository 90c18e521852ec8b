"""A Binder-like environment on this machine: the learner export, installed from its ``binder/`` alone.

``learner_env(cache)`` exports the learner tree to ``cache/tree`` (refreshed on every call) and
returns a virtual environment built the way repo2docker builds the image: Python 3.11, then
``pip install -r binder/requirements.txt`` from the tree's root, then ``binder/postBuild``. The
environment is kept under ``cache`` and rebuilt only when what it was built from changes (the
files of ``binder/``, the root's requirements, constraints and pyproject, the Python version),
so reruns take seconds. ctxlab is installed editable from ``cache/tree``, a path that does not
change, so a refreshed export is what the environment imports.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .pipeline import REPO, offline_env

# Bump when the way the environment is built changes, to rebuild cached ones.
RECIPE = "1"
ENV_INPUTS = ("requirements.txt", "constraints.txt", "pyproject.toml")


@dataclass
class LearnerEnv:
    tree: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str]:
        """Offline (no API key, loopback only), with this environment's scripts first on PATH."""
        env = offline_env()
        env["PATH"] = os.pathsep.join([str(self.bin), env["PATH"]])
        env["VIRTUAL_ENV"] = str(self.venv)
        env.pop("PYTHONHOME", None)
        return env

    def run(self, *args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(args), cwd=kwargs.pop("cwd", self.tree), env=kwargs.pop("env", self.env()),
            capture_output=True, text=True, timeout=timeout, check=False, **kwargs,
        )


def python_311() -> str | None:
    """A Python 3.11 interpreter (Binder's, from binder/runtime.txt), or None."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    return shutil.which("python3.11")


def env_key(root: Path, python: str) -> str:
    """What the environment is built from, hashed: a change rebuilds it."""
    digest = hashlib.sha256(RECIPE.encode())
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True, check=True)
    digest.update(version.stdout.encode())
    paths = sorted((root / "binder").iterdir()) + [root / name for name in ENV_INPUTS]
    for path in paths:
        if path.is_file() and path.name != "SLUG":
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _build(tree: Path, venv: Path, python: str) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    steps = [
        ([python, "-m", "venv", str(venv)], os.environ.copy()),
        # Binder's step, from the tree's root as repo2docker runs it; the registries are needed here.
        ([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"], None),
        # Binder's postBuild, with the environment's scripts first on PATH, offline.
        (["bash", "binder/postBuild"], "offline"),
    ]
    for command, env in steps:
        if env is None:
            env = dict(os.environ, PATH=os.pathsep.join([str(venv / "bin"), os.environ["PATH"]]))
        elif env == "offline":
            env = LearnerEnv(tree, venv).env()
        result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise RuntimeError(
                f"building the Binder environment failed at {' '.join(command)} ({result.returncode}):\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )


def learner_env(cache: Path, *, root: Path = REPO) -> LearnerEnv:
    """Export ``root``'s learner tree to ``cache/tree`` and return its Binder-like environment."""
    from autograder.student_repo import export

    python = python_311()
    if python is None:
        raise LookupError("no Python 3.11 here (binder/runtime.txt pins it)")
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time, across pytest processes
        tree = cache / "tree"
        export(root, tree, out=lambda _: None)
        key = env_key(tree, python)
        venv = cache / f"venv-{key}"
        if not (venv / "ready").exists():
            for old in cache.glob("venv-*"):
                shutil.rmtree(old, ignore_errors=True)
            _build(tree, venv, python)
            (venv / "ready").write_text(key + "\n", encoding="utf-8")
        return LearnerEnv(tree, venv)
