"""Install the hub away from any checkout: ``/usr/bin/python3 hub/install.py /opt/ctxlab-hub``, as root.

A hub installed from a checkout lets every learner read it: the checkout holds ``solutions/``
and ``tests/``, and an editable install of ``ctxlab`` points into it. This script makes two
folders under the prefix, and nothing the hub or the servers use stays in the checkout:

* ``env/``: a virtual environment with the course's pinned packages (``requirements.txt``
  without its editable line, ``constraints.txt``), JupyterHub, ngshare-exchange, and
  ``ctxlab`` installed from a wheel built from this checkout (the wheel holds the library and
  the transcripts, no notebook);
* ``ngshare-env/``: the exchange service's own environment (``hub/ngshare/requirements.txt``:
  ngshare 0.6.0 needs SQLAlchemy 1.x, the hub SQLAlchemy 2), which the hub runs as its own
  user when ``CTXLAB_NGSHARE_PYTHON`` names its Python (``hub/README.md``);
* ``hub/``: the hub's configuration (``jupyterhub_config.py``, ``learner_view.py``,
  ``exchange/``, ``learner/``, ``ngshare/``).

Both are made readable by every user, as the servers need. The instructors keep their own
checkout, closed to others, for ``make release`` and grading (``hub/README.md``). At its start
the hub checks, as a learner, that none of this course's hidden tests or solutions is readable
(``learner_view.py``). Run the script with a Python every user may run (the system's
``python3``, not one under ``/root``): the environment is made from it.

    /usr/bin/python3 hub/install.py /opt/ctxlab-hub # then: /opt/ctxlab-hub/env/bin/jupyterhub \\
                                                    #         -f /opt/ctxlab-hub/hub/jupyterhub_config.py

``--no-ngshare`` leaves ``ngshare-env/`` out, for a hub that exchanges through a shared folder.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HUB_FILES = ("jupyterhub_config.py", "learner_view.py", "exchange", "learner", "ngshare")
NGSHARE_EXCHANGE = "ngshare-exchange==0.5.3"  # without its dependencies: the Makefile says why
HUB_PACKAGES = ("jupyterhub", "jupyterhub-idle-culler", "jupyterhub-ltiauthenticator")  # pinned in requirements-dev.txt


def _pip(python: Path | str, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True)


def build_wheel(out: Path, repo: Path = REPO, python: Path | str = sys.executable) -> Path:
    """The ``ctxlab`` wheel built from ``repo`` into ``out``; its path."""
    out.mkdir(parents=True, exist_ok=True)
    _pip(python, "wheel", "--no-deps", "--wheel-dir", str(out), str(repo))
    (wheel,) = sorted(out.glob("ctxlab-*.whl"))
    return wheel


def requirements(repo: Path = REPO) -> list[str]:
    """What the hub's environment installs besides ``ctxlab``: ``requirements.txt`` without its
    editable line, and the hub's own packages with their pins from ``requirements-dev.txt``."""
    lines = [line.strip() for line in (repo / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    wanted = [line for line in lines if line and not line.startswith(("#", "-e"))]
    dev = (repo / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    for package in HUB_PACKAGES:
        (pin,) = [line.strip() for line in dev if line.strip().startswith(f"{package}==")]
        wanted.append(pin)
    return wanted


def install_wheel(python: Path, wheel: Path) -> None:
    """Install ``wheel`` into the environment of ``python``, in place of any other ``ctxlab``."""
    _pip(python, "install", "--no-deps", "--force-reinstall", "--no-index", str(wheel))


def copy_hub_files(dest: Path, repo: Path = REPO) -> Path:
    """The hub's configuration files copied into ``dest`` (made if missing); ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in HUB_FILES:
        source = repo / "hub" / name
        if source.is_dir():
            shutil.copytree(source, dest / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest / name)
    return dest


def open_to_all(folder: Path) -> None:
    """Let every user read ``folder`` and run what is runnable in it (``chmod -R a+rX``)."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o7777
        executable = path.is_dir() or mode & 0o111
        path.chmod(mode | 0o444 | (0o111 if executable else 0))


def refuse_unless_everyone_runs(python: Path) -> None:
    """``SystemExit`` saying what to do when ``nobody`` cannot run ``python`` (checked as root)."""
    if os.geteuid() != 0:
        return
    try:
        nobody = pwd.getpwnam("nobody")
        subprocess.run([str(python), "-c", "pass"], user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                       cwd="/", check=True, capture_output=True)
    except KeyError:
        return
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"other users cannot run {python} (it is {Path(python).resolve()}), so no learner's server "
                         "could start: run this script with a Python every user can run, such as "
                         "`/usr/bin/python3 hub/install.py PREFIX`, after removing the environment it made") from None


def install_ngshare(prefix: Path, python: Path | str = sys.executable, repo: Path = REPO) -> Path:
    """Make ``prefix/ngshare-env`` with ngshare's pinned packages; its Python."""
    env = prefix / "ngshare-env"
    if not (env / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(env)], check=True)
    refuse_unless_everyone_runs(env / "bin" / "python")
    _pip(env / "bin" / "python", "install", "-r", str(repo / "hub" / "ngshare" / "requirements.txt"))
    return env / "bin" / "python"


def install(prefix: Path, python: Path | str = sys.executable, ngshare: bool = True) -> Path:
    """Make ``prefix/env``, ``prefix/ngshare-env`` (unless not ``ngshare``) and ``prefix/hub``
    as the module says; the environment's ``bin``."""
    env = prefix / "env"
    if not (env / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(env)], check=True)
    prefix.chmod(0o755)
    refuse_unless_everyone_runs(env / "bin" / "python")
    with tempfile.TemporaryDirectory() as scratch:
        wheel = build_wheel(Path(scratch), python=env / "bin" / "python")  # its pip: the system's may have none
        reqs = Path(scratch) / "requirements.txt"
        reqs.write_text("\n".join(requirements()) + "\n", encoding="utf-8")
        _pip(env / "bin" / "python", "install", "-r", str(reqs), "-c", str(REPO / "constraints.txt"))
        _pip(env / "bin" / "python", "install", "--no-deps", NGSHARE_EXCHANGE)
        install_wheel(env / "bin" / "python", wheel)
    if ngshare:
        install_ngshare(prefix, python)
    copy_hub_files(prefix / "hub")
    prefix.chmod(0o755)
    open_to_all(prefix)
    return env / "bin"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", type=Path, help="where to install: PREFIX/env and PREFIX/hub (e.g. /opt/ctxlab-hub)")
    parser.add_argument("--no-ngshare", action="store_true",
                        help="leave out PREFIX/ngshare-env, the exchange service's environment")
    args = parser.parse_args(argv)
    prefix = args.prefix.resolve()
    if prefix == REPO or REPO in prefix.parents:
        parser.error(f"{prefix} is inside the checkout {REPO}: learners could read its solutions; choose another folder")
    bin_dir = install(prefix, ngshare=not args.no_ngshare)
    print(f"installed: {bin_dir.parent} and {prefix / 'hub'}\nstart the hub with:\n"
          f"  CTXLAB_INSTRUCTORS=... CTXLAB_LEARNERS=... {bin_dir / 'jupyterhub'} -f {prefix / 'hub' / 'jupyterhub_config.py'}")
    if not args.no_ngshare:
        print(f"with the exchange service (hub/README.md): CTXLAB_NGSHARE_PYTHON={prefix / 'ngshare-env' / 'bin' / 'python'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
