"""One writer at a time for a grading output (``autograder/locking.py``): a second ``grade`` into
an output another run holds is refused at once, naming the holder, and changes nothing there;
the lock goes with the process that held it, however it ended."""

from __future__ import annotations

import subprocess
import sys

from support.pipeline import REPO, offline_env

from autograder.locking import output_lock


def grade(submissions, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
                           "--course", str(REPO), "--quiet"], cwd=REPO, env=offline_env(), capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_second_grading_into_the_same_output_is_refused_with_who_holds_it(tmp_path):
    submissions, out = tmp_path / "submitted", tmp_path / "grading-output"
    (submissions / "ana").mkdir(parents=True)
    out.mkdir()
    (out / "grades.csv").write_text("kept\n", encoding="utf-8")
    with output_lock(out):
        refused = grade(submissions, out)
    assert refused.returncode == 2, refused.stderr
    assert "is being written by another run (pid" in refused.stderr and "another folder" in refused.stderr
    assert sorted(p.name for p in out.iterdir()) == [".lock", "grades.csv"]
    assert (out / "grades.csv").read_text(encoding="utf-8") == "kept\n"


def test_the_lock_is_freed_when_its_holder_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom autograder.locking import output_lock\n"
                               f"with output_lock({str(tmp_path)!r}):\n    print('held', flush=True)\n    time.sleep(60)"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.kill()
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        holder.stdout.close()
    with output_lock(tmp_path):  # taken at once: the killed holder's lock went with it
        pass
