"""On the hub, nbgrader's autograde never runs a learner's code: ``RefuseAutograde``.

nbgrader's autograde executes each submission, the learners' code, with the rights of whoever
starts it: pressed in the formgrader (``/formgrader/api/submission/<lesson>/<learner>/autograde``)
or typed as ``nbgrader autograde`` in an instructor's terminal, that is an instructor, with
write access to the course root, the solutions and every gradebook. The course grades with
``python -m autograder grade`` instead, which runs each submission in a bubblewrap sandbox
(``autograder/README.md``). So ``nbgrader_config.py`` here switches both off:

* :func:`switch_off_the_formgraders_button`: in a server, the formgrader reads that file when
  it starts, and from then on its Autograde route answers 403 with what to do, before
  nbgrader touches a file (its autograde would first remove the learner's graded copy);
* :func:`refuse_the_autograde_command`: ``nbgrader autograde`` reads that file as it starts,
  and stops there, before it removes or writes anything;
* :class:`RefuseAutograde` in place of both of autograde's preprocessor lists: whatever else
  starts nbgrader's autograde stops before any cell runs, with the same message.

The course's grader sets its own preprocessors and never reads this file.

>>> RefuseAutograde().preprocess({"cells": []}, {})
Traceback (most recent call last):
...
RuntimeError: nbgrader's autograde is switched off on this hub: it would run the learners' code with your rights, outside the grading sandbox. Grade with `python -m autograder grade submitted --lessons LESSON --out grading-output` in the course root (hub/README.md).
"""

from __future__ import annotations

import json

from nbconvert.preprocessors import Preprocessor

__all__ = ["RefuseAutograde", "switch_off_the_formgraders_button", "refuse_the_autograde_command", "MESSAGE"]

MESSAGE = ("nbgrader's autograde is switched off on this hub: it would run the learners' code with your rights, "
           "outside the grading sandbox. Grade with `python -m autograder grade submitted --lessons LESSON "
           "--out grading-output` in the course root (hub/README.md).")


class RefuseAutograde(Preprocessor):
    """A preprocessor that refuses every notebook, before anything in it runs."""

    def preprocess(self, nb, resources):
        raise RuntimeError(MESSAGE)


def switch_off_the_formgraders_button() -> None:
    """Make the formgrader's Autograde route (``AutogradeHandler.post``) refuse with a 403."""
    try:
        from nbgrader.server_extensions.formgrader import apihandlers
        from tornado import web
    except ImportError:  # no formgrader here: nothing to switch off
        return
    if getattr(apihandlers.AutogradeHandler.post, "refuses", False):
        return

    @web.authenticated
    def post(self, assignment_id, student_id):
        self.log.warning("refused to autograde %s for %s: %s", assignment_id, student_id, MESSAGE)
        self.set_status(403)
        self.finish(json.dumps({"success": False, "error": MESSAGE, "log": ""}))

    post.refuses = True
    apihandlers.AutogradeHandler.post = post


def refuse_the_autograde_command() -> None:
    """``SystemExit`` with :data:`MESSAGE` when the application reading the configuration is
    ``nbgrader autograde`` (nbgrader's ``AutogradeApp``, on its own or as ``nbgrader``'s
    subcommand); nothing otherwise."""
    from traitlets.config import Application

    if not Application.initialized():
        return
    app = Application.instance()
    if "AutogradeApp" in (type(app).__name__, type(getattr(app, "subapp", None)).__name__):
        raise SystemExit(MESSAGE)
