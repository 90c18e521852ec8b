"""An OpenAI-compatible chat completions server on 127.0.0.1 for the client tests.

It answers each request with the next scripted behaviour (a reply, an HTTP error, a malformed
body, a stall), then with ``otherwise(body)`` when given, and records what it received.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CompatibleServer:
    """An OpenAI-compatible /v1/chat/completions endpoint with scripted behaviours."""

    def __init__(self, *behaviours, otherwise=None):
        self.behaviours = list(behaviours)
        self.otherwise = otherwise  # body -> reply text, once the script is done (else "late")
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, **body})
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if server.behaviours:
                    kind, *args = server.behaviours.pop(0)
                else:
                    kind, args = "reply", [server.otherwise(body) if server.otherwise else "late"]
                if kind == "stall":
                    server.release.wait(args[0])
                    status, payload = 200, server.completion(body, "too late")
                elif kind == "reply":
                    status, payload = 200, server.completion(body, args[0])
                elif kind == "status":
                    status, payload = args[0], json.dumps({"error": {"message": f"scripted {args[0]}", "type": "test"}}).encode()
                elif kind == "error":
                    status, payload = args[0], json.dumps({"error": args[1]}).encode()
                elif kind == "raw":
                    status, payload = 200, args[0]
                else:  # pragma: no cover - a typo in a test
                    raise AssertionError(kind)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (a timeout test): nothing to answer
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @staticmethod
    def completion(body, text):
        return json.dumps({
            "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
