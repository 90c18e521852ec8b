"""nbgrader's exchange for the course on the hub: read by every learner's and instructor's server.

The hub (``hub/jupyterhub_config.py``) puts this folder on each server's ``JUPYTER_CONFIG_PATH``
and sets the variables below, so the Assignments tab, ``nbgrader release_assignment``,
``collect`` and ``release_feedback`` all use one exchange and one course id.

Instructors' servers also get ``CTXLAB_COURSE_ROOT``, their copy of this repository. The
formgrader runs in the server, whose folder is the home, so without it nbgrader would take the
home for the course root and find neither lessons nor grades there. With it, the formgrader
reads the course's own settings (``<root>/nbgrader_config.py``: ``solutions/``, ``course/``)
and shows what ``python -m autograder grade submitted --out grading-output`` wrote in the
course root: the merged gradebook and the executed notebooks, for review and manual grading.

With ``CTXLAB_NGSHARE_URL`` (set by the hub when it runs ngshare) the exchange is that service,
through ngshare-exchange's classes, instead of the folder. The folder's collect and submit are
``ctxlab_exchange.py``'s, beside this file: a submission counts only for the learner who made
it, at the time the file system gives it, without links, up to 20 MB.

nbgrader commands run inside the course root read ``<root>/nbgrader_config.py`` last, so there
``make release`` still keeps the lessons' definitions in ``<root>/gradebook.db``.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (nbgrader provides get_config)

HERE = str(Path(__file__).resolve().parent)  # traitlets gives a configuration file its path
if HERE not in sys.path:  # this folder's modules: ctxlab_exchange, no_autograde
    sys.path.insert(0, HERE)

c.CourseDirectory.course_id = os.environ.get("CTXLAB_COURSE_ID", "context-window-lab")
c.Exchange.root = os.environ.get("CTXLAB_EXCHANGE", "/srv/nbgrader/exchange")

if os.environ.get("CTXLAB_NGSHARE_URL"):  # the hub runs the exchange service (hub/README.md)
    from ngshare_exchange import configureExchange

    configureExchange(c, os.environ["CTXLAB_NGSHARE_URL"])
else:  # the folder: collect only what its learner made and when, submit a folder only they may change
    c.ExchangeFactory.collect = "ctxlab_exchange.Collect"
    c.ExchangeFactory.submit = "ctxlab_exchange.Submit"

# A submission is a notebook or two: 20 MB is generous, and the collect refuses a larger one
# rather than filling the course root (ctxlab_exchange.py); nbgrader's default is 100 MB.
c.CourseDirectory.max_dir_size = 20_000  # kilobytes

if os.environ.get("CTXLAB_GROUPSHARED") == "1":  # instructors sharing one course root
    c.CourseDirectory.groupshared = True

GRADING = "grading-output"  # the grader's default --out, relative to the course root

if os.environ.get("CTXLAB_COURSE_ROOT"):
    root = Path(os.environ["CTXLAB_COURSE_ROOT"])
    if (root / "nbgrader_config.py").is_file():
        load_subconfig(str(root / "nbgrader_config.py"))  # noqa: F821  (traitlets provides it)
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.db_url = f"sqlite:///{root / GRADING / 'gradebook.db'}"
    c.CourseDirectory.autograded_directory = f"{GRADING}/autograded"
    if root.is_dir():  # nbgrader opens the gradebook before any grading: made here, with the
        # umask's permissions (SQLite would make it 0o644, closed to the other instructors)
        (root / GRADING).mkdir(exist_ok=True)
        (root / GRADING / "gradebook.db").touch(mode=0o666)

# nbgrader's autograde would run the learners' code with an instructor's rights, outside the
# grading sandbox: the formgrader's Autograde button and `nbgrader autograde` stop before any
# cell runs (no_autograde.py). Set last, so that no configuration read before it undoes it.
from no_autograde import refuse_the_autograde_command, switch_off_the_formgraders_button  # noqa: E402

refuse_the_autograde_command()
switch_off_the_formgraders_button()
c.Autograde.sanitize_preprocessors = ["no_autograde.RefuseAutograde"]
c.Autograde.autograde_preprocessors = ["no_autograde.RefuseAutograde"]
