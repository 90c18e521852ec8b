"""Every error the library raises on purpose is a ``ctxlab.CtxlabError``, so one ``except``
clause in an agent loop catches them all, and each keeps the built-in class it replaces
(``ValueError``, ``TypeError``, ``RuntimeError``) so that older ``except`` clauses still do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ctxlab
import ctxlab.errors

LIBRARY = Path(ctxlab.__file__).parent
# what the library may still raise as a built-in, and why
PROTOCOL = {"IndexError": "a sequence's own protocol (ctxlab.history.MessageRuns)",
            "AttributeError": "a module's own protocol (a retired name, ctxlab._retired)",
            "NotImplementedError": "an abstract method",
            "ImportError": "the openai package missing while a real model is asked for"}


def raised_builtins(path: Path) -> list[str]:
    """``raise Name(...)`` lines of ``path`` whose ``Name`` is a built-in exception."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and isinstance(node.exc.func, ast.Name):
            name = node.exc.func.id
            if isinstance(getattr(__builtins__, name, None) if not isinstance(__builtins__, dict)
                          else __builtins__.get(name), type) and name not in PROTOCOL:
                found.append(f"{path.name}:{node.lineno} raise {name}(...)")
    return found


def test_the_library_raises_no_bare_builtin_error():
    found = [line for path in sorted(LIBRARY.glob("*.py")) for line in raised_builtins(path)]
    assert not found, "raise a ctxlab.errors class instead (ConfigError for a ValueError, ...):\n" + "\n".join(found)


def test_every_error_class_is_a_ctxlab_error_and_keeps_its_builtin():
    classes = [getattr(ctxlab.errors, name) for name in ctxlab.errors.__all__]
    assert all(issubclass(cls, ctxlab.CtxlabError) for cls in classes)
    assert issubclass(ctxlab.errors.ConfigError, ValueError)
    assert issubclass(ctxlab.errors.ConfigTypeError, TypeError)
    assert issubclass(ctxlab.errors.UsageError, RuntimeError)


@pytest.mark.parametrize("call", [
    lambda: ctxlab.MemoryPolicy(1000, low_water=1.5),  # an option out of its range
    lambda: ctxlab.MemoryPolicy(1000).replace(window=5),  # an option it does not have
    lambda: ctxlab.count_request({"model": "gpt-4o"}),  # no messages
    lambda: ctxlab.count_request({"model": "not-a-model", "messages": [{"role": "user", "content": "hi"}]}),
    lambda: ctxlab.images.image_cost("gpt-4o", 0, 10),
    lambda: ctxlab.count_request(["not", "a", "dict"]),
], ids=["policy option", "policy replace", "request without messages", "unknown model", "image size", "request type"])
def test_an_agent_loop_catches_each_refusal_with_one_clause(call):
    with pytest.raises(ctxlab.CtxlabError) as caught:
        call()
    assert str(caught.value), "a refusal says what is wrong"


def test_a_policy_refuses_a_client_it_could_not_call_when_it_is_made():
    """Not at the first summary, laps into a run: a client without the openai interface when the
    policy is made; an async one at the first synchronous call, before any lap runs (it is for
    Assembler.acontext, tests/test_async.py)."""
    import openai

    budget = ctxlab.ContextBudget(window=8_000)
    with pytest.raises(TypeError, match=r"must have the openai interface, client.chat.completions.create"):
        ctxlab.MemoryPolicy(budget, client=object())
    assert ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()).client is not None
    asynchronous = openai.AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1")
    policy = ctxlab.MemoryPolicy(budget, client=asynchronous)
    history = [{"role": "user", "content": "Find the failing export."}]
    for call in (lambda: ctxlab.build_context(history, policy), lambda: ctxlab.Assembler(policy).context(history)):
        with pytest.raises(ctxlab.CtxlabError, match=r"client is async .* await Assembler\(policy"):
            call()


def test_keys_the_sdk_set_to_none_never_reach_the_prompt():
    """A reply kept as ``message.model_dump()`` holds ``tool_calls: None``, ``audio: None``...;
    the assembled prompt leaves them out (and counts the same)."""
    dumped = {"role": "assistant", "content": "Looking.", "refusal": None, "audio": None, "function_call": None,
              "tool_calls": None, "annotations": None}
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find it."}, dumped,
               {"role": "user", "content": "And?"}]
    policy = ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=4_000, reserve_output=500))
    context = ctxlab.build_context(history, policy=policy)
    sent = [m for m in context.messages if m.get("role") == "assistant"]
    assert sent == [{"role": "assistant", "content": "Looking."}], sent
    assert ctxlab.count_messages(context.messages) == ctxlab.count_messages(history)


@pytest.mark.parametrize("window", [-5, 0])
def test_a_window_of_no_tokens_gets_one_message_whatever_its_sign(window):
    with pytest.raises(ctxlab.BudgetError, match=rf"window must be a whole number of tokens >= 1, got {window}$"):
        ctxlab.ContextBudget(window=window)


@pytest.mark.parametrize("count", [
    lambda tools: ctxlab.count_tools(tools),
    lambda tools: ctxlab.count_request({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                                        "tools": tools}),
], ids=["count_tools", "count_request"])
def test_tools_given_as_a_dict_are_refused_as_such(count):
    tools = {"search": {"type": "function", "function": {"name": "search"}}}
    with pytest.raises(ctxlab.CtxlabError, match=r"tools must be a list of tool schemas, got a dict with keys "
                                                 r"\['search'\]: pass list\(tools.values\(\)\)"):
        count(tools)


def test_a_reply_straight_from_the_sdk_is_accepted_where_a_message_is():
    """The openai SDK's ChatCompletionMessage, appended to the history as it comes back: read as
    its dump (without the fields it sets to None), by counting, checking and assembling."""
    from openai.types.chat import ChatCompletionMessage

    reply = ChatCompletionMessage(role="assistant", content="It is 4 C in Oslo.")
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}, reply]
    as_dicts = [*history[:2], {"role": "assistant", "content": "It is 4 C in Oslo."}]
    ctxlab.validate_messages(history)
    assert ctxlab.count_messages(history) == ctxlab.count_messages(as_dicts)
    assert ctxlab.count_request({"model": "gpt-4o", "messages": history}) == (
        ctxlab.count_request({"model": "gpt-4o", "messages": as_dicts}))
    policy = ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=4_000, reserve_output=500))
    assert ctxlab.build_context(history, policy=policy).messages == ctxlab.build_context(as_dicts, policy=policy).messages
    assembler = ctxlab.Assembler(policy)
    assembler.context(history)
    assembler.context([*history, {"role": "user", "content": "And tomorrow?"}])  # the same reply object continues it
