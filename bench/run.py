"""Run the benchmarks in bench/ and write their report to bench/results/.

    python bench/run.py                  every bench/bench_*.py, in name order
    python bench/run.py --only fit       just bench/bench_fit.py (repeat --only for more)
    python bench/run.py --quick          small sizes: a check that everything runs, not a measure
    python bench/run.py --list           the benchmarks found, and stop

The convention: a file ``bench/bench_<name>.py`` is a benchmark called ``<name>``. It defines
``main(results_dir: pathlib.Path) -> str``, which runs its measurements, may write files of its
own (plots, raw JSON) into ``results_dir``, and returns a markdown section that starts with a
``## `` heading. If ``main`` also accepts a keyword ``quick``, ``--quick`` passes
``quick=True``. Modules in bench/ import each other by plain name (``import histories``).

Each section is saved as ``results/<name>.md`` under a line giving the date and the machine;
``results/report.md`` is rebuilt from every section there, so running one benchmark updates
its section and keeps the others. A benchmark that raises gets a section saying so, and the
command exits 1 after running the rest.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def discover(folder: Path = HERE) -> dict[str, Path]:
    """Benchmark name -> file, for every ``bench_<name>.py`` in ``folder``, in name order."""
    return {path.stem.removeprefix("bench_"): path for path in sorted(folder.glob("bench_*.py"))}


def _importable(folder: Path) -> None:
    """Let the modules in ``folder`` import each other by plain name, as when run from there."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def load(path: Path) -> ModuleType:
    """Import a benchmark file by its path; its siblings are importable by plain name."""
    _importable(path.parent)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "main", None)):
        raise TypeError(f"{path.name} has no main(results_dir) -> str; see bench/README.md")
    return module


def run_one(name: str, path: Path, results_dir: Path, *, quick: bool) -> tuple[str, bool]:
    """Run one benchmark; return its section (with the date and machine line) and success."""
    _importable(HERE)
    import measure

    stamp = f"_Measured {measure.today()} on {measure.machine()}{' (--quick)' if quick else ''}._"
    started = time.perf_counter()
    try:
        module = load(path)
        options = {"quick": True} if quick and "quick" in inspect.signature(module.main).parameters else {}
        section = module.main(results_dir, **options).strip()
        ok = True
    except Exception:  # report it and go on with the other benchmarks
        section = f"## {name}: failed\n\n```\n{traceback.format_exc()}```"
        ok = False
    took = time.perf_counter() - started
    heading, _, body = section.partition("\n")
    return f"{heading}\n\n{stamp} The benchmark took {took:.0f} s.\n{body}\n", ok


def write_report(results_dir: Path, order: list[str]) -> Path:
    """Rebuild ``report.md`` from the section files in ``results_dir``."""
    sections = [results_dir / f"{name}.md" for name in order]
    parts = ["# Context Window Lab benchmarks", "",
             "Written by `make bench` (`bench/run.py`); see `bench/README.md` for what is measured.", ""]
    parts += [path.read_text(encoding="utf-8") for path in sections if path.exists()]
    report = results_dir / "report.md"
    report.write_text("\n".join(parts), encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    found = discover()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(found), metavar="NAME",
                        help=f"run just this benchmark (one of: {', '.join(found)}); repeatable")
    parser.add_argument("--quick", action="store_true", help="small sizes, to check that everything runs")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write (default: bench/results)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)
    if args.list:
        for name, path in found.items():
            print(f"{name:12} {path.relative_to(HERE.parent)}")
        return 0
    args.results.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or found:
        print(f"running {name} ...", flush=True)
        section, ok = run_one(name, found[name], args.results, quick=args.quick)
        (args.results / f"{name}.md").write_text(section, encoding="utf-8")
        if not ok:
            failed.append(name)
            print(section, file=sys.stderr)
    report = write_report(args.results, list(found))
    print(f"report: {report}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
