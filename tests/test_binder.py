"""Binder: binder/ is what repo2docker reads, the learner export holds no answers, and an
environment built from binder/ alone runs every lesson and gives learners Validate only."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.pipeline import REPO, offline_env

if str(REPO) not in sys.path:  # autograder is a folder of this checkout, not an installed package
    sys.path.insert(0, str(REPO))

from autograder.__main__ import main as autograder_main  # noqa: E402
from autograder.student_repo import ExportError, binder_url, export, read_slug  # noqa: E402

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
LESSON_ONE = "course/01-budget/budget.ipynb"
LEARNER_TOP_LEVEL = {
    "course", "ctxlab", "data", "binder", "requirements.txt", "constraints.txt", "pyproject.toml",
    "LICENSE", "README.md", "nbgrader_config.py", ".gitignore", ".learner-export.json",
}
# nbgrader's lab plugins that learners on Binder do not get: the instructor panels, the assignment
# list (it needs an nbgrader exchange) and the Nbgrader menu that opens them. Validate stays.
NBGRADER_OFF = ("formgrader", "create-assignment", "course-list", "assignment-list", "menu")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOT_SOURCE = shutil.ignore_patterns(
    ".venv", ".git", ".cache", ".hypothesis", ".ruff_cache", ".pytest_cache", "__pycache__",
    "*.egg-info", "student-repo", "grading-output", "submitted", "autograded", "feedback", "gradebook.db",
)


def source_of(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def text_files(tree: Path):
    for path in sorted(tree.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(tree).parts:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            if path.suffix == ".ipynb":
                text += "\n".join(source_of(c) for c in json.loads(text)["cells"])
            yield path, text


def snapshot(tree: Path) -> dict[str, str]:
    return {
        p.relative_to(tree).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(tree.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def learner_tree(tmp_path_factory) -> Path:
    """The learner export of this checkout."""
    dest = tmp_path_factory.mktemp("learner") / "tree"
    export(REPO, dest, out=lambda _: None)
    return dest


@pytest.fixture
def source_copy(tmp_path) -> Path:
    """A copy of this checkout's sources, to export from and compare afterwards."""
    return Path(shutil.copytree(REPO, tmp_path / "source", ignore=NOT_SOURCE))


# --- binder/ ------------------------------------------------------------------------------------


def test_binder_pins_python_311():
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def _requirement_lines(path: Path, seen=()) -> list[tuple[Path, str]]:
    """Every requirement line pip reads from ``path``, following -r (relative to the file)."""
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            target = (path.parent / line[3:].strip()).resolve()
            assert target.exists(), f"{path} includes {line!r}, which does not exist"
            assert target not in seen, f"{path} includes {target} twice"
            lines += _requirement_lines(target, (*seen, target))
        else:
            lines.append((path, line))
    return lines


def test_binder_installs_pinned_packages_and_ctxlab():
    """Binder reads binder/requirements.txt alone: through it, every package is pinned (==) and
    constrained, and ctxlab itself is installed from the repository root."""
    lines = _requirement_lines(REPO / "binder" / "requirements.txt")
    constraints = [line for _, line in lines if line.startswith("-c ")]
    assert constraints, "binder/requirements.txt should apply the constraints file (-c)"
    pins = {}
    for source, line in lines:
        if line.startswith("-c "):
            target = (source.parent / line[3:].strip()).resolve()
            assert target.exists(), f"{source}: {line!r} does not exist"
            pins.update(
                (re.split(r"[=<>!~\[]", c)[0].strip().lower().replace("_", "-"), c)
                for c in target.read_text().splitlines() if c and not c.startswith("#")
            )
    editable = [line for _, line in lines if line.startswith("-e ")]
    # repo2docker runs pip from the repository root, which is what `-e .` names.
    assert editable == ["-e ."], f"ctxlab should be installed once, editable from the root; got {editable}"
    packages = [line for _, line in lines if not line.startswith("-")]
    assert packages, "no packages found"
    for line in packages:
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[0-9][^ ]*", line), f"{line!r} is not pinned with =="
        name = re.split(r"[=\[]", line)[0].lower().replace("_", "-")
        assert name in pins, f"{name} is missing from constraints.txt"
    for needed in ("jupyterlab", "nbgrader", "ipywidgets"):
        assert any(line.lower().startswith(needed + "==") for line in packages), f"{needed} is not installed"


def test_slug_names_one_github_repository():
    slug = read_slug(REPO)
    assert re.fullmatch(r"[\w-]+/[\w.-]+", slug)
    assert binder_url(slug).endswith("?urlpath=lab/tree/" + LESSON_ONE)


def test_readme_binder_links_use_binder_slug():
    """The README's launch badge opens lesson 01 in JupyterLab, on the repository binder/SLUG names."""
    slug = read_slug(REPO)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"https://mybinder\.org/v2/gh/[^)\s]+", readme)
    assert links, f"README.md has no Binder badge; add:\n[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder_url(slug)})"
    for link in links:
        assert link.startswith(f"https://mybinder.org/v2/gh/{slug}/"), (
            f"README.md links to {link}, but binder/SLUG names {slug}: a fork changes binder/SLUG and "
            "the README's links together"
        )
    assert binder_url(slug) in links, f"README.md should launch lesson 01 with {binder_url(slug)}"


def test_lesson_one_tells_learners_how_to_keep_their_work():
    """A Binder session forgets its files: lesson 01 says how to download the notebook and how to
    bring it back."""
    cells = json.loads((REPO / LESSON_ONE).read_text(encoding="utf-8"))["cells"]
    text = "\n".join(source_of(c) for c in cells if c["cell_type"] == "markdown")
    assert "File → Download" in text and "Upload" in text, "lesson 01 should say how to keep your work"


@pytest.mark.parametrize("tree", ["repository", "learner export"])
def test_repo2docker_reads_binder_folder(tree, learner_tree):
    """repo2docker --no-build prints the Binder Dockerfile without Docker: Python 3.11, then
    binder/requirements.txt installed from the root once the whole repository is in the image,
    then binder/postBuild; the root's requirements.txt is not read on its own."""
    path = REPO if tree == "repository" else learner_tree
    repo2docker = Path(sys.executable).parent / "repo2docker"
    assert repo2docker.exists(), "install jupyter-repo2docker (requirements-dev.txt): `make setup`"
    result = subprocess.run(
        [str(repo2docker), "--no-build", "--user-id", "1000", "--user-name", "jovyan", str(path)],
        env=offline_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    dockerfile, log = result.stdout, result.stderr
    assert "Building conda environment for python=3.11" in log, log
    assert "environment-2epy-2d3-2e11-2dlinux-2d64-2elock" in dockerfile  # the Python 3.11 lock file
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    assert installs == ['RUN ${KERNEL_PYTHON_PREFIX}/bin/pip install --no-cache-dir -r "binder/requirements.txt"'], installs
    copy_all = dockerfile.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/")
    assert copy_all < dockerfile.index(installs[0]) < dockerfile.index("RUN ./binder/postBuild")
    assert "WORKDIR ${REPO_DIR}" in dockerfile  # pip runs from the root, so `-e .` is ctxlab


# --- the learner export -------------------------------------------------------------------------


def test_export_holds_what_learners_need(learner_tree):
    assert {p.name for p in learner_tree.iterdir()} == LEARNER_TOP_LEVEL
    for notebook in sorted((REPO / "course").glob("*/*.ipynb")):
        copy = learner_tree / notebook.relative_to(REPO)
        assert copy.read_bytes() == notebook.read_bytes(), f"{copy} differs from {notebook}"
    for name in ("requirements.txt", "constraints.txt", "pyproject.toml", "LICENSE"):
        assert (learner_tree / name).read_bytes() == (REPO / name).read_bytes()
    for name in ("requirements.txt", "runtime.txt", "postBuild", "SLUG"):
        assert (learner_tree / "binder" / name).read_bytes() == (REPO / "binder" / name).read_bytes()
    assert (learner_tree / "binder" / "postBuild").stat().st_mode & 0o111, "postBuild lost its execute bit"
    assert (learner_tree / "data" / "transcripts.json").exists()
    assert (learner_tree / "ctxlab" / "__init__.py").exists()


def _solution_only_lines() -> set[str]:
    """Lines of solution and hidden-test regions found nowhere a learner may see them."""
    inside, outside = set(), []
    for notebook in sorted((REPO / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            source = source_of(cell)
            for _, region in REGION.findall(source):
                inside |= {line.strip() for line in region.splitlines() if len(line.strip()) >= 25}
            outside.append(REGION.sub("", source))
    for folder in ("ctxlab", "data"):
        outside += [p.read_text(encoding="utf-8") for p in sorted((REPO / folder).rglob("*.py"))]
        outside += [p.read_text(encoding="utf-8") for p in sorted((REPO / folder).rglob("*.json*"))]
    seen = "\n".join(outside)
    return {line for line in inside if line not in seen}


def test_export_has_no_solution_hidden_test_or_gradebook(learner_tree):
    forbidden = {"solutions", "autograder", "tests", "gradebook.db", "submitted", "autograded", "feedback",
                 "release", "source", "requirements-dev.txt", "Makefile", ".ci"}
    assert not forbidden & {p.name for p in learner_tree.rglob("*")}
    databases = [p for p in learner_tree.rglob("*") if re.search(r"\.(db|sqlite3?)(-\w+)?$", p.name)]
    assert not databases, f"databases in the export: {databases}"

    lines = _solution_only_lines()
    assert lines, "found no solution lines to search for"
    solutions_text = "\n".join(text for _, text in text_files(REPO / "solutions"))
    assert all(line in solutions_text for line in lines)  # the search finds them where they are
    for path, text in text_files(learner_tree):
        for marker in MARKERS:
            assert marker not in text, f"{path} holds {marker!r}"
        leaked = sorted(line for line in lines if line in text)
        assert not leaked, f"{path} holds solution or hidden-test lines: {leaked[:5]}"


def test_export_readme_launches_each_lesson_on_binder(learner_tree):
    slug = read_slug(REPO)
    readme = (learner_tree / "README.md").read_text(encoding="utf-8")
    assert f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder_url(slug)})" in readme
    for notebook in sorted((REPO / "course").glob("*/*.ipynb")):
        relative = notebook.relative_to(REPO).as_posix()
        assert f"]({relative})" in readme and binder_url(slug, relative) in readme, f"README misses {relative}"
    assert "File → Download" in readme, "learners must be told how to keep their work"


def test_learner_nbgrader_config_keeps_only_what_validate_uses(learner_tree):
    from traitlets.config.loader import PyFileConfigLoader

    learner = (learner_tree / "nbgrader_config.py").read_text(encoding="utf-8")
    for instructor_only in ("solutions", "CourseDirectory", "ClearSolutions", "OverwriteCells", "gradebook"):
        assert instructor_only not in learner
    ours = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    theirs = PyFileConfigLoader("nbgrader_config.py", path=str(learner_tree)).load_config()
    assert theirs.Execute.timeout == ours.Execute.timeout


def test_export_leaves_the_source_untouched(source_copy, tmp_path):
    before = snapshot(source_copy)
    export(source_copy, tmp_path / "outside", out=lambda _: None)
    export(source_copy, source_copy / "student-repo", out=lambda _: None)  # the Makefile's default
    after = snapshot(source_copy)
    added = {k for k in after if k.startswith("student-repo/")}
    assert {k: v for k, v in after.items() if k not in added} == before


def test_export_refuses_a_folder_it_did_not_write(tmp_path, capsys):
    dest = tmp_path / "someone-elses"
    dest.mkdir()
    (dest / "notes.txt").write_text("keep me")
    assert autograder_main(["student-repo", str(dest), "--root", str(REPO)]) == 1
    assert "not a previous learner export" in capsys.readouterr().err
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]


def test_export_accepts_a_fresh_clone_of_an_empty_repository(tmp_path):
    dest = tmp_path / "learner-repo"
    (dest / ".git").mkdir(parents=True)
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    export(REPO, dest, out=lambda _: None)
    assert (dest / "README.md").exists() and (dest / ".git" / "HEAD").exists()


@pytest.mark.parametrize("inside", ["", "course/01-budget/out", "data/out"])
def test_export_refuses_to_write_into_what_it_exports(inside, source_copy):
    before = snapshot(source_copy)
    with pytest.raises(ExportError):
        export(source_copy, source_copy / inside, out=lambda _: None)
    assert snapshot(source_copy) == before


def test_reexport_updates_a_previous_export_and_keeps_the_rest(source_copy, tmp_path):
    dest = tmp_path / "learner-repo"
    assert autograder_main(["student-repo", str(dest), "--root", str(source_copy)]) == 0
    (dest / ".git").mkdir()
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (dest / "CODE_OF_CONDUCT.md").write_text("be kind\n")
    (source_copy / "data" / "refund.jsonl").unlink()
    (source_copy / "binder" / "SLUG").write_text("a-teacher/ctx-2027\n")
    export(source_copy, dest, out=lambda _: None)
    assert not (dest / "data" / "refund.jsonl").exists(), "a file the source no longer has stays"
    assert (dest / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (dest / "CODE_OF_CONDUCT.md").exists()
    assert "https://mybinder.org/v2/gh/a-teacher/ctx-2027/HEAD" in (dest / "README.md").read_text()


def test_export_refuses_a_leaked_solution(source_copy, tmp_path):
    (lesson,) = [p for p in sorted((source_copy / "solutions").iterdir()) if p.name == "01-budget"]
    (notebook,) = lesson.glob("*.ipynb")
    shutil.copy(notebook, source_copy / "course" / "01-budget" / notebook.name)
    with pytest.raises(ExportError, match="leak"):
        export(source_copy, tmp_path / "leaky", out=lambda _: None)
    assert not (tmp_path / "leaky").exists()


# --- an environment built from binder/ alone -----------------------------------------------------


@pytest.fixture(scope="session")
def binder_env():
    """The learner export installed as Binder installs it (cached under .cache/, keyed by what it
    is built from; the first build takes about a minute and a half)."""
    from support.binder_env import learner_env

    try:
        return learner_env(REPO / ".cache" / "binder-env")
    except LookupError as err:
        pytest.skip(str(err))


COURSE = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "course").glob("[0-9][0-9]-*/*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", COURSE)
def test_lesson_runs_to_the_end_in_a_fresh_binder_env(notebook, binder_env):
    """Each lesson starts on its own in a fresh kernel and, blank, runs to its last cell as Run All
    does: only the exercises' own cells (visible tests, concept checks) show errors, each saying
    the exercise is not done yet; every demonstration falls back to ctxlab's reference."""
    runner = REPO / "tests" / "support" / "run_to_first_exercise.py"
    result = binder_env.run(str(binder_env.bin / "python"), str(runner), str(binder_env.tree / notebook))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert Path(report["kernel"]["prefix"]) == binder_env.venv, report["kernel"]
    assert Path(report["kernel"]["ctxlab"]).is_relative_to(binder_env.tree / "ctxlab"), report["kernel"]
    assert "Environment OK." in report["setup_output"], report["setup_output"]
    stopped = report["stopped"]
    assert stopped is None, (
        f"{notebook}: Run All stopped at cell {stopped['cell']} ({stopped['ename']}: {stopped['evalue']}); "
        f"only cells tagged raises-exception may fail:\n{stopped['source']}"
    )
    assert report["last_ran"], f"{notebook}: the last cell did not run"
    assert report["errors"], f"{notebook}: a blank lesson's exercises should fail their visible tests"
    for error in report["errors"]:
        meta = error["nbgrader"]
        assert meta.get("grade") or meta.get("solution"), (
            f"{notebook}: cell {error['cell']} is not an exercise; a demonstration should fall back to "
            f"ctxlab's reference (ctxlab.course.yours_or_reference):\n{error['source']}"
        )
        text = f"{error['ename']}: {error['evalue']}"
        assert "NotImplementedError" in text or "not done yet" in text or error["ename"] == "NameError", (
            f"{notebook}: cell {error['cell']} failed with {text}\n{error['source']}"
        )


@pytest.mark.slow
def test_fresh_binder_env_lists_nbgrader_with_only_validate_enabled(binder_env):
    labextensions = binder_env.run(str(binder_env.bin / "jupyter"), "labextension", "list")
    assert labextensions.returncode == 0, labextensions.stderr
    listing = ANSI.sub("", labextensions.stdout + labextensions.stderr)
    assert re.search(r"@jupyter/nbgrader v0\.9\.6 enabled\s+OK", listing), listing
    assert re.search(r"@jupyter-widgets/jupyterlab-manager v\S+ enabled\s+OK", listing), listing
    disabled = listing.split("Disabled extensions:")[-1] if "Disabled extensions:" in listing else ""
    for panel in NBGRADER_OFF:
        assert f"@jupyter/nbgrader:{panel}" in disabled, f"{panel} should be disabled:\n{listing}"
    assert "@jupyter/nbgrader:validate-assignment" not in disabled, listing
    # The server side (Validate answers, the instructor endpoints are gone) is checked on a
    # running JupyterLab below.


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _request(url: str, token: str, data: dict | None = None) -> tuple[int, str]:
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


@pytest.mark.slow
def test_validate_button_works_in_binder_jupyterlab(binder_env, tmp_path):
    """JupyterLab as Binder starts it: the lab page disables the instructor panels, the
    instructor endpoints are gone, and Validate runs a blank lesson's visible tests."""
    port, token = _free_port(), "binder-test"
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        [str(binder_env.bin / "jupyter"), "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={binder_env.tree}"],
        cwd=binder_env.tree, env=binder_env.env(), stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(f"{base}/api/status", token)[0] == 200:
                    break
            except OSError:
                pass
            assert lab.poll() is None and time.monotonic() < deadline, (tmp_path / "lab.log").read_text()[-3000:]
            time.sleep(0.5)

        status, page = _request(f"{base}/lab/tree/{LESSON_ONE}", token)
        assert status == 200
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S).group(1))
        for panel in NBGRADER_OFF:
            assert f"@jupyter/nbgrader:{panel}" in config["disabledExtensions"]
            assert f"@jupyter/nbgrader:{panel}" in config["lockedExtensions"]
        for endpoint in ("formgrader", "formgraders", "assignments", "courses"):
            assert _request(f"{base}/{endpoint}", token)[0] == 404, f"/{endpoint} should be off"

        status, body = _request(f"{base}/assignments/validate", token, {"path": LESSON_ONE})
        assert status == 200
        answer = json.loads(body)
        assert answer["success"], answer["value"]
        failed = answer["value"]["failed"]  # a blank lesson: its visible tests fail, the first on a stub
        assert failed and "NotImplementedError" in failed[0]["error"], failed
        assert failed[0]["source"].startswith('"""Visible'), failed[0]["source"]
    finally:
        lab.terminate()
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
        log.close()


def test_every_pin_installs_on_the_pythons_the_course_is_set_up_with():
    """The pins must install wherever the README sends people: Binder's Python 3.11 and the
    ``python3`` of Debian 12 (3.11.2), with which ``hub/README.md`` builds a class's environment.
    soupsieve 4.1.3 asked for 3.11.5 and, forced onto 3.11.2, broke the formgrader's grading page."""
    from importlib import metadata

    from packaging.specifiers import SpecifierSet

    pins = dict(line.split("==", 1) for line in (REPO / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    refused = []
    for name, version in pins.items():
        try:
            wanted = metadata.metadata(name).get("Requires-Python")
        except metadata.PackageNotFoundError:
            continue  # pinned for an extra this environment did not install
        assert metadata.version(name) == version.strip(), (
            f"{name} {metadata.version(name)} is installed, constraints.txt pins {version}: run `make setup`")
        if wanted and not SpecifierSet(wanted).contains("3.11.2"):
            refused.append(f"{name} {metadata.version(name)} (Requires-Python {wanted})")
    assert not refused, f"pins Debian 12's Python 3.11.2 cannot install: {refused}; pin an older release"
