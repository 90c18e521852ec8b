"""Starts a grading kernel: ipykernel's own launcher (``python -m ipykernel_launcher``), without
its debugger.

ipykernel imports ``debugpy`` at start to offer a debugger, about 0.14 s of every kernel's start,
and grading never debugs. With ``debugpy`` unimportable, ipykernel simply offers no debugger;
everything else is ipykernel's launcher, line for line (the working folder leaves ``sys.path``
while ipykernel loads, and IPython puts it back for the notebook's code).
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    if sys.path[0] == "" or Path(sys.path[0]) == Path.cwd():
        del sys.path[0]
    sys.modules["debugpy"] = None  # type: ignore[assignment]  # `import debugpy` raises ImportError

    from ipykernel import kernelapp as app

    app.launch_new_instance()
