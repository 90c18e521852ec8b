"""An OpenAI-compatible server on your machine, to run an agent loop with no key and no network.

``python -m ctxlab.stub_server`` serves ``POST /v1/chat/completions`` (and ``GET /v1/models``)
on 127.0.0.1 and prints the ``OPENAI_BASE_URL`` to use. It is a stand-in for trying a loop, not
a model:

* a request that offers ``tools`` is an agent's: the reply calls the tools it offers, one lap
  after another (the pin tool, :data:`ctxlab.pins.PIN_TOOL`, once, on the second lap; the
  ``recall`` tool, :data:`ctxlab.compression.RECALL_TOOL`, on every third, for the latest
  reference the prompt shows, if any; two calls at once on every fourth), with arguments made
  from each tool's schema, and after ``laps`` such requests it answers in text, without calls;
* any other request is a summary's: the reply is what :class:`ctxlab.OfflineSummariser`
  answers the same prompt;
* ``usage.prompt_tokens`` is :func:`ctxlab.count_request` of the request, what the API would
  bill for it, so a loop can print its own count beside the bill.

The replies depend only on the order of the agent's requests, never on chance.

>>> import json, urllib.request
>>> with StubServer(laps=2) as server:
...     body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Go."}],
...             "tools": [{"type": "function", "function": {"name": "ping", "parameters": {
...                 "type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}}}]}
...     request = urllib.request.Request(server.base_url + "/chat/completions", json.dumps(body).encode(),
...                                      {"content-type": "application/json"})
...     reply = json.load(urllib.request.urlopen(request))
>>> reply["choices"][0]["message"]["tool_calls"][0]["function"]
{'name': 'ping', 'arguments': '{"host": "lap 1"}'}
>>> reply["usage"]["prompt_tokens"] == __import__("ctxlab").count_request(body)
True
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .billing import count_request
from .compression import RECALL_TOOL
from .errors import MessageError
from .llm import OfflineSummariser
from .pins import PIN_TOOL

__all__ = ["StubServer", "main"]

RECALL_NAME = RECALL_TOOL["function"]["name"]
_REF = re.compile(r"kept as ref (\S+#\d+)")  # what a reference stub names (ctxlab.compression.reference_stub)


def _value(schema: Any, lap: int) -> Any:
    """A value that fits ``schema``, made from the lap's number."""
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(schema, Mapping) and schema.get("enum"):
        return schema["enum"][0]
    if kind == "integer":
        return lap
    if kind == "number":
        return float(lap)
    if kind == "boolean":
        return True
    if kind == "array":
        return [_value(schema.get("items"), lap)]
    if kind == "object":
        return _arguments(schema, lap)
    return f"lap {lap}"


def _arguments(parameters: Any, lap: int) -> dict[str, Any]:
    """Arguments for the required properties of ``parameters``."""
    if not isinstance(parameters, Mapping):
        return {}
    properties = parameters.get("properties") or {}
    return {name: _value(properties.get(name), lap) for name in parameters.get("required") or []}


class StubServer:
    """The server; a context manager that serves from a thread (``base_url``, ``requests``).

    ``laps`` is how many of the agent's requests get tool calls before it answers in text.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, laps: int = 12) -> None:
        self.laps = laps
        self.requests: list[dict[str, Any]] = []
        self._agent_requests = 0
        self._lock = threading.Lock()
        self._summariser = OfflineSummariser()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the loop prints what matters
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "ctxlab-stub", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no such path {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no such path {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                    self._send(200, server.reply(body))
                except Exception as err:  # a bad request gets the API's error shape, not a dropped line
                    self._send(400, {"error": {"message": f"{type(err).__name__}: {err}", "type": "invalid_request_error"}})

            def _send(self, status: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` (or ``openai.OpenAI(base_url=...)``) should be."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The chat completion this server answers ``body`` with."""
        messages, tools = body.get("messages"), body.get("tools")
        if not isinstance(messages, list) or not messages:
            raise MessageError("'messages' must be a non-empty list of message dicts")
        with self._lock:
            self.requests.append(dict(body))
            lap = 0
            if tools:
                self._agent_requests += 1
                lap = self._agent_requests
        if tools and lap <= self.laps:
            message = {"role": "assistant", "content": None, "tool_calls": self._calls(tools, lap, messages)}
        elif tools:
            message = {"role": "assistant", "content": f"Done after {lap - 1} laps: the stub has no more calls to make."}
        else:
            text = self._summariser.chat.completions.create(model=body.get("model", ""), messages=messages)
            message = {"role": "assistant", "content": text.choices[0].message.content}
        return {
            "id": f"chatcmpl-stub-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body.get("model", "ctxlab-stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tools and lap <= self.laps else "stop"}],
            "usage": self._usage(body),
        }

    def _calls(self, tools: Sequence[Mapping[str, Any]], lap: int, messages: Sequence[Any]) -> list[dict[str, Any]]:
        functions = [t["function"] for t in tools if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)]
        pin = next((f for f in functions if f.get("name") == PIN_TOOL), None)
        recall = next((f for f in functions if f.get("name") == RECALL_NAME), None)
        others = [f for f in functions if f is not pin and f is not recall] or functions
        refs = [ref for m in messages if isinstance(m, Mapping) and isinstance(m.get("content"), str)
                for ref in _REF.findall(m["content"])]
        if lap == 2 and pin is not None:
            chosen = [(pin, {"text": "Keep every answer under 200 words.", "kind": "constraint"})]
        elif recall is not None and refs and lap % 3 == 0:
            chosen = [(recall, {"ref": refs[-1]})]  # read back a result the prompt shows as a reference
        else:
            count = 2 if lap % 4 == 0 else 1
            chosen = [(f, _arguments(f.get("parameters"), lap)) for f in (others * 2)[lap % len(others):][:count]]
        return [{"id": f"call_{lap}_{n}", "type": "function",
                 "function": {"name": function["name"], "arguments": json.dumps(arguments)}}
                for n, (function, arguments) in enumerate(chosen)]

    @staticmethod
    def _usage(body: Mapping[str, Any]) -> dict[str, int]:
        request = {key: value for key, value in body.items() if key in ("messages", "tools")}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prompt = count_request({"model": body.get("model") or "gpt-4o", **request})
        except Exception:  # a model tiktoken does not know, say: the stub still answers
            prompt = 0
        return {"prompt_tokens": prompt, "completion_tokens": 0, "total_tokens": prompt}

    def serve_forever(self) -> None:
        """Serve until interrupted."""
        self._httpd.serve_forever(poll_interval=0.1)

    def __enter__(self) -> StubServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m ctxlab.stub_server [--port 8000] [--laps 12]``."""
    parser = argparse.ArgumentParser(prog="python -m ctxlab.stub_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default 8000; 0: any free one)")
    parser.add_argument("--laps", type=int, default=12, help="agent requests answered with tool calls (default 12)")
    options = parser.parse_args(argv)
    server = StubServer(port=options.port, laps=options.laps)
    print(f"export OPENAI_BASE_URL={server.base_url}   # then run your loop; Ctrl-C stops this server", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
