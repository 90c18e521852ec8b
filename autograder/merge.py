"""``python -m autograder merge OUT1 OUT2 ... --out OUT``: join graded shards into one result.

A class too big for one machine is graded as N shards, each on its own machine with
``python -m autograder grade SUBMISSIONS --shard K/N --out OUT_K`` (a Kubernetes Indexed Job,
or a CI matrix, runs the N commands; see ``autograder/README.md``). Each shard writes its
students' results and a ``run.json`` saying which shard it was, with which options and lesson
sources, out of which class. ``merge`` checks that the folders are the N shards of one class
graded the same way, copies every student's kept result, gradebook and graded notebooks, and
writes ``grades.csv``, ``summary.md``, ``feedback/`` and ``gradebook.db`` with
the same code and the same inputs as a single run, so they come out as that run's would (the
gradebook's rows hold the same scores; nbgrader's own row ids and timestamps are new on every
grading, and each shard's gradebooks are moved onto one template by lesson, notebook and cell
names). The merged folder is also a valid ``--out`` for a later run of ``grade``, which then
keeps every result.

>>> check_shards([(1, 2), (2, 2)])
2
>>> check_shards([(1, 3), (3, 3)])
Traceback (most recent call last):
...
autograder.merge.MergeError: shard 2/3 is missing: merge every shard's folder (got 1/3, 3/3)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .grade import RUN_FILE, _write_json, write_outputs
from .gradebooks import GradebookError, rebase_gradebook
from .locking import OutputBusy, output_lock
from .sandbox import Limits
from .template import load_template

__all__ = ["MergeError", "check_shards", "merge_outputs", "register"]

TEMPLATE_DB = Path("template") / "root" / "gradebook.db"


class MergeError(RuntimeError):
    """The folders cannot be merged as they are; the message says which and why."""


def check_shards(shards: list[tuple[int, int]]) -> int:
    """N, when ``shards`` are exactly the shards 1/N ... N/N, each once; else :class:`MergeError`."""
    if not shards:
        raise MergeError("nothing to merge: pass the output folder of every shard")
    sizes = sorted({n for _, n in shards})
    if len(sizes) > 1:
        raise MergeError(f"the folders are shards of different splits (N = {', '.join(map(str, sizes))}): "
                         "merge the shards of one split only")
    (n,) = sizes
    got = ", ".join(f"{k}/{n}" for k, _ in sorted(shards))
    seen = [k for k, _ in shards]
    twice = sorted({k for k in seen if seen.count(k) > 1})
    if twice:
        raise MergeError(f"shard {twice[0]}/{n} was given more than once (got {got})")
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"shard {missing[0]}/{n} is missing: merge every shard's folder (got {got})")
    return n


def _manifest(folder: Path) -> dict:
    path = folder / RUN_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MergeError(f"{folder} has no {RUN_FILE}: it is not the output of `grade --shard`, or that shard "
                         "did not finish; run its command again") from None
    except (OSError, ValueError) as err:
        raise MergeError(f"{path} cannot be read ({err}); run that shard's command again") from None
    if not manifest.get("shard"):
        raise MergeError(f"{folder} was graded without --shard: it holds the whole class already")
    return manifest


def _same(manifests: list[dict], folders: list[Path], field: str, what: str) -> None:
    first = manifests[0][field]
    for manifest, folder in zip(manifests[1:], folders[1:], strict=True):
        if manifest[field] != first:
            raise MergeError(f"{folders[0]} and {folder} differ in {what}: grade every shard with the same "
                             "command and submissions, changing only --shard and --out")


def _copy_student(source: Path, dest: Path, student: str, record: dict) -> dict:
    """Bring one student's result from a shard's folder into ``dest``, gradebook moved onto its template.

    Each shard released the lessons itself, so its gradebook ids differ from the merged
    template's: the student's gradebook is rebased (matched by lesson, notebook and cell names).
    """
    record = dict(record)
    (dest / "students").mkdir(parents=True, exist_ok=True)
    kept = source / "students" / f"{student}.json"
    if kept.exists():
        shutil.copy(kept, dest / "students" / kept.name)
    gradebook = source / "students" / f"{student}.db"
    if record.get("gradebook") and gradebook.exists():
        try:
            rebase_gradebook(gradebook, source / TEMPLATE_DB, dest / TEMPLATE_DB, dest / "students" / gradebook.name,
                             student)
        except GradebookError as err:
            raise MergeError(f"{student}'s gradebook in {source} cannot be merged: {err}") from None
        record["gradebook"] = str(dest / "students" / gradebook.name)
    graded = source / "autograded" / student
    if graded.is_dir():
        shutil.copytree(graded, dest / "autograded" / student, dirs_exist_ok=True)
    return record


def merge_outputs(folders: list[Path], dest: Path, *, log=print) -> int:
    """Merge the shard output ``folders`` into ``dest``; the exit status ``grade`` would give."""
    folders = [f.resolve() for f in folders]
    dest = dest.resolve()
    if dest in folders:
        raise MergeError(f"--out {dest} is one of the shards: choose a new folder")
    manifests = [_manifest(folder) for folder in folders]
    n = check_shards([tuple(m["shard"]) for m in manifests])
    _same(manifests, folders, "key", "grading options or lesson sources")
    _same(manifests, folders, "class", "the class they were cut from (the submissions)")
    _same(manifests, folders, "intake_notes", "what they noted about the submissions folder")
    dest.mkdir(parents=True, exist_ok=True)
    with output_lock(dest):  # no grading or other merge writes into it meanwhile
        return _merge_into(folders, manifests, n, dest, log)


def _merge_into(folders: list[Path], manifests: list[dict], n: int, dest: Path, log) -> int:
    """:func:`merge_outputs` once the shards agree, with ``dest``'s lock held."""
    results: dict[str, dict] = {}
    for name in ("students", "autograded", "template", "feedback"):
        shutil.rmtree(dest / name, ignore_errors=True)
    shutil.copytree(folders[0] / "template", dest / "template")
    for folder, manifest in zip(folders, manifests, strict=True):
        for student, record in sorted(manifest["results"].items()):
            if student in results:
                raise MergeError(f"{student} was graded by two shards; grade every shard again from one class")
            results[student] = _copy_student(folder, dest, student, record)
    missing = sorted(set(manifests[0]["class"]) - set(results))
    if missing:
        raise MergeError(f"no shard holds a result for {', '.join(missing[:5])}: run their shard again")
    lessons = load_template(dest / "template")
    first = manifests[0]
    write_outputs(dest, results, lessons, dest / "template", first["intake_notes"], Limits(**first["limits"]),
                  first["sandbox"])
    _write_json(dest / RUN_FILE, {**first, "shard": None, "results": results, "merged_from": [str(f) for f in folders]})
    failed = sorted(s for s, r in results.items() if any(x["status"] == "error" for x in r["lessons"].values()))
    log(f"merged {n} shards, {len(results)} students: {dest / 'grades.csv'}, {dest / 'summary.md'}, "
        f"{dest / 'feedback'}")
    if failed:
        log(f"grading failed for {len(failed)} student(s): {', '.join(failed)}; run their shards again, then "
            "merge again", file=sys.stderr)
        return 1
    return 0


def register(commands) -> None:
    """Add ``merge OUT... --out DIR`` to the command line."""
    parser = commands.add_parser(
        "merge", help="join the output folders of `grade --shard K/N` into one result",
        description="Join the output folders of every shard of `grade --shard K/N` into one result, as one run "
                    "of `grade` would have written it. See autograder/README.md.",
    )
    parser.add_argument("shards", type=Path, nargs="+", metavar="SHARD_OUT", help="each shard's --out folder")
    parser.add_argument("--out", type=Path, required=True, help="the merged output folder (a new one)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    try:
        return merge_outputs(args.shards, args.out)
    except (MergeError, OutputBusy) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
