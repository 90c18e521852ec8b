"""The check each lesson's first cell runs: is everything a lesson needs here and working?

>>> report = check_environment(quiet=True)
>>> report["tokenizer"]
'cl100k_base'
"""

from __future__ import annotations

import platform
import sys
from typing import Any

__all__ = ["check_environment"]

MIN_PYTHON = (3, 10)


def check_environment(*, quiet: bool = False) -> dict[str, Any]:
    """Check Python, the offline tokenizer and the transcripts; print one line each.

    Raises ``RuntimeError`` with the fix when something a lesson needs is missing.

    >>> check_environment(quiet=True)["ctxlab"] == __import__("ctxlab").__version__
    True
    """
    from .. import __version__
    from ..tokens import count_text, encoding
    from .transcripts import data_dir, transcript_names

    if sys.version_info < MIN_PYTHON:
        raise RuntimeError(
            f"Python {platform.python_version()} is too old; the course needs "
            f"{'.'.join(map(str, MIN_PYTHON))} or newer (run `make setup`)"
        )
    try:
        enc = encoding()
        probe = count_text("context window", enc)
    except Exception as err:  # report the cause with the fix, whatever it was
        raise RuntimeError(f"the cl100k_base tokenizer is not usable: {err}") from err
    try:
        names = transcript_names()
    except Exception as err:
        raise RuntimeError(f"the course transcripts are missing: {err}") from err

    report: dict[str, Any] = {
        "python": platform.python_version(),
        "ctxlab": __version__,
        "tokenizer": enc.name,
        "tokens_in_probe": probe,
        "transcripts": names,
        "data_dir": str(data_dir()),
    }
    try:
        from ..llm import describe_client

        report["llm"] = describe_client()
    except ImportError:
        report["llm"] = "offline summariser"
    if not quiet:
        print(f"Python {report['python']}, ctxlab {report['ctxlab']}")
        print(f"tokenizer: {report['tokenizer']} (offline, exact)")
        print(f"transcripts: {', '.join(names)}")
        print(f"summariser: {report['llm']}")
        print("Environment OK.")
    return report
