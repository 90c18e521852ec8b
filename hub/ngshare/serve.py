"""ngshare as the hub's service, on the address the hub gives it and without auto-reload.

ngshare 0.6.0 (its last release) listens on every interface (``0.0.0.0``, "for proxy") at the
port of ``JUPYTERHUB_SERVICE_URL``, and runs Tornado with auto-reload on, which restarts it
whenever one of its files changes. Behind JupyterHub's proxy neither is needed: the proxy
reaches it on loopback, and a service is restarted by the hub. This launcher runs ngshare's own
``main`` with its arguments, listening only on the service URL's host (``127.0.0.1`` from
``hub/jupyterhub_config.py``) and with auto-reload off. Run it with ngshare's Python:

    /opt/ctxlab-hub/ngshare-env/bin/python hub/ngshare/serve.py --admins teacher --storage ... --database ...
"""

from __future__ import annotations

import os
import sys
from urllib.parse import urlparse

from ngshare import ngshare
from tornado.httpserver import HTTPServer

_init = ngshare.MyApplication.__init__
_listen = HTTPServer.listen


def _no_autoreload(self, *args, **kwargs):
    kwargs["autoreload"] = False
    _init(self, *args, **kwargs)


def _on_the_service_host(self, port, address="", **kwargs):
    host = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "")).hostname or "127.0.0.1"
    _listen(self, port, host, **kwargs)


if __name__ == "__main__":
    ngshare.MyApplication.__init__ = _no_autoreload
    HTTPServer.listen = _on_the_service_host
    ngshare.main(sys.argv[1:])
