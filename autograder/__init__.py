"""Course tooling around nbgrader: regenerating the learner notebooks and grading a class.

``python -m autograder release`` regenerates ``course/`` from ``solutions/``.
"""

from __future__ import annotations

__all__ = ["release"]

from .release import release
