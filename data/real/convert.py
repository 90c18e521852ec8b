#!/usr/bin/env python3
"""Convert recorded OpenAI Chat Completions requests (VCR cassettes) into trajectories.

    python data/real/convert.py PATH/TO/pydantic-ai   write data/real/*.jsonl and sources.json

The pydantic-ai project (MIT licence) records its tests' real HTTP exchanges with the OpenAI
API as VCR cassettes (YAML). For each cassette listed in ``CASSETTES`` this script takes the
exchange with ``/v1/chat/completions`` whose request holds the longest message list, and writes
those messages followed by the assistant message the API returned (exactly as the API returned
it, with the keys the SDK's ``model_dump()`` shows: ``refusal``, ``annotations``...) as one
JSONL trajectory, one message per line (a streamed reply is put together from its chunks; a
reply that calls tools is left out, as nothing answers those calls). Nothing in a message is
edited. ``sources.json`` gives
each file's cassette, the model, and the ``prompt_tokens`` the API billed for that request.

Needs PyYAML (installed with JupyterLab) and a checkout of pydantic-ai at ``COMMIT``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

REPOSITORY = "https://github.com/pydantic/pydantic-ai"
COMMIT = "4fda38988f2939fa6ea9cdefcf120693e10ef491"
LICENCE = "MIT"

# (name of the trajectory here, cassette path in pydantic-ai)
CASSETTES = [
    ("weather-three-tools", "tests/cassettes/test_prefect/test_complex_agent_run_in_flow.yaml"),
    ("weather-three-tools-2", "tests/cassettes/test_temporal/test_complex_agent_run.yaml"),
    ("capitals-two-questions", "tests/models/cassettes/test_openai/test_multiple_agent_tool_calls.yaml"),
    ("model-retry", "tests/cassettes/test_temporal/test_temporal_agent_with_model_retry.yaml"),
    ("human-in-the-loop", "tests/cassettes/test_prefect/test_prefect_agent_with_hitl_tool.yaml"),
    ("roundtrip-ag-ui", "tests/cassettes/test_cache_prefix_stability/test_openai_tool_call_roundtrip_wire_stable[ag_ui].yaml"),
    ("mcp-toolset", "tests/cassettes/test_temporal/test_mcptoolset_in_temporal_workflow.yaml"),
    ("mcp-dynamic-toolset", "tests/cassettes/test_temporal/test_mcptoolset_dynamic_toolset_in_workflow.yaml"),
    ("instructions-tool-calls", "tests/models/cassettes/test_openai/test_openai_instructions_with_tool_calls_keep_instructions.yaml"),
    ("image-url-tool-return", "tests/models/cassettes/test_openai/test_image_url_tool_response.yaml"),
    ("image-url-tool-return-matrix",
     "tests/models/cassettes/test_multimodal_tool_returns/test_multimodal_tool_return_matrix[direct-url-image-openai_chat].yaml"),
    ("audio-input", "tests/models/cassettes/test_openai/test_audio_as_binary_content_input.yaml"),
    ("tool-output", "tests/models/cassettes/test_openai/test_openai_tool_output.yaml"),
    ("native-output", "tests/models/cassettes/test_openai/test_openai_native_output.yaml"),
]

HERE = Path(__file__).resolve().parent


def _chat_exchanges(cassette: dict) -> list[dict]:
    out = []
    for exchange in cassette.get("interactions") or []:
        request = exchange.get("request") or {}
        body = request.get("parsed_body")
        status = (exchange.get("response") or {}).get("status") or {}
        accepted = status.get("code") == 200  # what the API refused is no evidence of what it accepts
        if accepted and "api.openai.com/v1/chat/completions" in str(request.get("uri")) and isinstance(body, dict) and body.get("messages"):
            out.append(exchange)
    return out


def _streamed(text: str) -> dict:
    """The completion a stream of ``data:`` chunks adds up to (message and usage)."""
    message: dict = {"role": "assistant", "content": None}
    calls: dict[int, dict] = {}
    usage, model = None, None
    for line in text.splitlines():
        if not line.startswith("data: {"):
            continue
        chunk = json.loads(line[len("data: "):])
        model = chunk.get("model", model)
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            if "refusal" in delta:
                message.setdefault("refusal", None)
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"id": None, "type": "function",
                                                        "function": {"name": "", "arguments": ""}})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"message": message}], "usage": usage, "model": model}


def _reply(exchange: dict) -> dict:
    response = exchange["response"]
    body = response.get("parsed_body")
    if isinstance(body, dict) and body.get("choices"):
        return body
    text = (response.get("body") or {}).get("string") or ""
    if "data: {" in text:
        return _streamed(text)
    return json.loads(text)


def convert(checkout: Path) -> None:
    sources = {}
    for name, path in CASSETTES:
        cassette = yaml.safe_load((checkout / path).read_text(encoding="utf-8"))
        exchanges = _chat_exchanges(cassette)
        if not exchanges:
            raise SystemExit(f"{path}: no chat completions exchange")
        exchange = max(exchanges, key=lambda e: len(e["request"]["parsed_body"]["messages"]))
        body = exchange["request"]["parsed_body"]
        reply = _reply(exchange)
        answer = reply["choices"][0]["message"]
        # The reply ends the trajectory when it answers in text; a reply that calls tools (an
        # output tool the framework never answers) is left out: the request alone is complete.
        messages = list(body["messages"]) + ([] if answer.get("tool_calls") else [answer])
        lines = [json.dumps(m, ensure_ascii=False) for m in messages]
        (HERE / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if body.get("tools"):
            (HERE / f"{name}.tools.json").write_text(json.dumps(body["tools"], indent=1) + "\n", encoding="utf-8")
        sources[name] = {
            "repository": REPOSITORY, "commit": COMMIT, "path": path, "licence": LICENCE,
            "model": body.get("model"), "reply_model": reply.get("model"),
            "messages": len(messages), "tools": len(body.get("tools") or []),
            "prompt_tokens": (reply.get("usage") or {}).get("prompt_tokens"),
        }
    (HERE / "sources.json").write_text(json.dumps(sources, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    convert(Path(sys.argv[1]))
