"""nbgrader's exchange for the course on the hub: read by every learner's and instructor's server.

The hub (``hub/jupyterhub_config.py``) puts this folder on each server's ``JUPYTER_CONFIG_PATH``
and sets the two variables below, so the Assignments tab, ``nbgrader release_assignment``,
``collect`` and ``release_feedback`` all use one exchange and one course id.
"""

import os

c = get_config()  # noqa: F821  (nbgrader provides get_config)

c.CourseDirectory.course_id = os.environ.get("CTXLAB_COURSE_ID", "context-window-lab")
c.Exchange.root = os.environ.get("CTXLAB_EXCHANGE", "/srv/nbgrader/exchange")
