"""Runs inside the learner's kernel while it is graded: undo tampering before tests run.

nbgrader runs the hidden tests in the same Python process as the learner's code, so that code
can change what the tests see: replace ``ctxlab.count_messages`` (the oracle the tests compare
with), patch tiktoken or a builtin, register an IPython input transformer that turns later
cells into ``pass``, swallow exceptions, or return an object whose ``__eq__`` is always True.

The grader mounts this file in the sandbox as the module ``ctxlab_kernel_guard`` and calls it
between cells through ``user_expressions`` (evaluated directly, so input transformers cannot
rewrite the call):

* :func:`arm` (before any learner code) records the genuine state: builtins, every loaded
  module of ctxlab, tiktoken, json, math and operator (their functions, classes and
  function code), the cached tokenizer, and IPython's hooks (input and AST transformers,
  custom exception handlers, event callbacks, method overrides), ``sys`` hooks and threads;
* :func:`checkpoint` (after every cell, and before and after every test cell) puts back
  anything that changed and reports it; before a test cell it also makes ``assert a == b``
  compare strictly (:func:`strict_equal`), so a learner's object cannot claim equality with
  an expected int, str, list or dict.

This raises the bar; it is not a wall. Code in the same process can always defeat checks it
can read, for example by patching this module or sending forged messages from a thread. The
instructor guide (autograder/README.md) says what this does and does not stop.

Standard library only. Importing it has no side effects.

>>> strict_equal(3, 3), strict_equal([1, {"a": 2}], [1, {"a": 2}]), strict_equal(3, "3")
(True, True, False)
>>> class AlwaysEqual:
...     def __eq__(self, other):
...         return True
>>> 3 == AlwaysEqual(), strict_equal(3, AlwaysEqual(), trusted=("/nowhere",))
(True, False)
"""

from __future__ import annotations

import ast
import json
import sys
import threading
import types

__all__ = ["arm", "checkpoint", "strict_equal", "StrictAsserts"]

WATCHED_PACKAGES = ("ctxlab", "tiktoken", "tiktoken_ext")
WATCHED_MODULES = ("builtins", "json", "math", "operator")
IGNORED_BUILTINS = frozenset({"_", "__", "___"})
ALLOWED_NEW_CLASS_KEYS = frozenset({"__slotnames__"})
EQUAL_HELPER = "__ctxlab_strict_equal__"
GUARD_NAME = "__ctxlab_guard__"
MAX_REPORTED = 40

_MISSING = object()
# References taken at import, before any learner code runs, so patches cannot reach them.
_id, _type, _isinstance, _len, _getattr, _setattr, _delattr = id, type, isinstance, len, getattr, setattr, delattr
_vars, _callable, _dumps, _sorted, _str = vars, callable, json.dumps, sorted, str
_settrace, _gettrace, _setprofile, _getprofile = sys.settrace, sys.gettrace, sys.setprofile, sys.getprofile

_state: dict = {}


def _watched(name: str) -> bool:
    return name in WATCHED_MODULES or name.split(".")[0] in WATCHED_PACKAGES


def _trusted_prefixes() -> tuple[str, ...]:
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for name in WATCHED_PACKAGES:
        module = sys.modules.get(name)
        for path in _getattr(module, "__path__", None) or []:
            prefixes.add(_str(path))
    if "ctxlab.transcripts" in sys.modules:
        prefixes.add(_str(sys.modules["ctxlab.transcripts"].data_dir()))
    return tuple(p.rstrip("/") + "/" for p in prefixes if p and p != "/")


def _code_is_trusted(obj, trusted: tuple[str, ...]) -> bool:
    """True when ``obj`` (a function, method, class or instance) comes from installed code."""
    func = _getattr(obj, "__func__", obj)
    code = _getattr(func, "__code__", None)
    if code is not None:
        return code.co_filename.startswith(trusted)
    cls = obj if _isinstance(obj, type) else _type(obj)
    module = sys.modules.get(_getattr(cls, "__module__", "") or "")
    if module is None or cls.__module__ == "__main__":
        return False
    path = _getattr(module, "__file__", None)
    return path is None or _str(path).startswith(trusted)  # built-in modules have no file


# ---------------------------------------------------------------------------- strict equality

_PLAIN_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _eq_is_trusted(cls: type, trusted: tuple[str, ...]) -> bool:
    for klass in cls.__mro__:
        eq = _vars(klass).get("__eq__")
        if eq is None:
            continue
        if not _isinstance(eq, types.FunctionType):
            return True  # implemented in C: object, int, str, numpy scalars...
        module = sys.modules.get(klass.__module__)
        path = _str(_getattr(module, "__file__", "") or "")
        if klass.__module__ == "__main__" or not path.startswith(trusted):
            return False
        return eq.__code__.co_filename.startswith(trusted) or eq.__code__.co_filename == "<string>"
    return True


def strict_equal(a, b, *, trusted: tuple[str, ...] | None = None, _depth: int = 0) -> bool:
    """``a == b``, except that an object whose ``__eq__`` the learner wrote cannot equal a
    value of a built-in type (or of installed code); lists, tuples and dicts are compared
    element by element under the same rule."""
    if trusted is None:
        trusted = _state.get("trusted") or _trusted_prefixes()
    ta, tb = _type(a), _type(b)
    if _depth > 100:
        return False
    if ta is tb and ta in _PLAIN_SCALARS:
        return a == b
    if ta is tb and ta in (list, tuple):
        return _len(a) == _len(b) and all(
            strict_equal(x, y, trusted=trusted, _depth=_depth + 1) for x, y in zip(a, b, strict=True)
        )
    if ta is tb and ta is dict:
        return set(a) == set(b) and all(
            strict_equal(a[k], b[k], trusted=trusted, _depth=_depth + 1) for k in a
        )
    a_ok, b_ok = _eq_is_trusted(ta, trusted), _eq_is_trusted(tb, trusted)
    if a_ok and b_ok:
        return bool(a == b)
    if not a_ok and not b_ok:
        return bool(a == b)  # two learner objects: their own business
    genuine, other = (a, b) if a_ok else (b, a)
    result = _type(genuine).__eq__(genuine, other)
    verdict = result is not NotImplemented and bool(result)
    if not verdict and _depth == 0:
        try:
            claimed = bool(a == b)
        except Exception:
            claimed = False
        refused = _state.setdefault("refused", [])
        if claimed and _len(refused) < MAX_REPORTED:
            refused.append(f"{_type(other).__qualname__}.__eq__ claimed equality with a value of type "
                           f"{_type(genuine).__name__}")
    return verdict


class StrictAsserts(ast.NodeTransformer):
    """Rewrites ``assert x == y, msg`` into ``assert __ctxlab_strict_equal__(x, y), msg``."""

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        test = node.test
        if _isinstance(test, ast.Compare) and _len(test.ops) == 1 and _isinstance(test.ops[0], ast.Eq):
            call = ast.Call(
                func=ast.Name(id=EQUAL_HELPER, ctx=ast.Load()),
                args=[test.left, test.comparators[0]],
                keywords=[],
            )
            node.test = ast.copy_location(call, test)
            ast.fix_missing_locations(node)
        return node


# ---------------------------------------------------------------------------- the snapshot


def _function_state(func) -> tuple:
    return (func, func.__code__, func.__defaults__, func.__kwdefaults__)


def _functions_in(namespace: dict, module_name: str) -> list:
    found = []
    for value in list(namespace.values()):
        for candidate in (value, _getattr(value, "__func__", None), _getattr(value, "__wrapped__", None),
                          _getattr(value, "fget", None), _getattr(value, "fset", None)):
            if _isinstance(candidate, types.FunctionType) and candidate.__module__ == module_name:
                found.append(_function_state(candidate))
    return found


def _snapshot_module(module: types.ModuleType) -> dict:
    namespace = dict(_vars(module))
    classes = {}
    functions = _functions_in(namespace, module.__name__)
    for key, value in namespace.items():
        if _isinstance(value, type) and _getattr(value, "__module__", None) == module.__name__:
            try:
                classes[key] = (value, dict(_vars(value)))
            except TypeError:
                continue
            functions += _functions_in(dict(_vars(value)), module.__name__)
    return {"module": module, "namespace": namespace, "classes": classes, "functions": functions}


_HOOK_LISTS = (
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
)
_MANAGER_LISTS = ("cleanup_transforms", "line_transforms", "token_transformers")
_SHELL_OBJECTS = ("displayhook", "display_pub", "display_formatter", "InteractiveTB", "SyntaxTB",
                  "compile", "input_transformer_manager", "events", "kernel")
_SYS_HOOKS = ("excepthook", "displayhook", "stdout", "stderr", "stdin")


def _overridable(shell) -> list:
    objects = [shell, _getattr(shell, "kernel", None), _getattr(_getattr(shell, "kernel", None), "session", None)]
    objects += [_getattr(shell, name, None) for name in _SHELL_OBJECTS]
    return [o for o in objects if o is not None]


def _snapshot_ipython(shell) -> dict:
    manager = shell.input_transformer_manager
    return {
        "shell": shell,
        "lists": {name: (_getattr(shell, name), list(_getattr(shell, name))) for name in _HOOK_LISTS},
        "manager": manager,
        "manager_lists": {name: (_getattr(manager, name), list(_getattr(manager, name))) for name in _MANAGER_LISTS},
        "objects": {name: _getattr(shell, name, None) for name in _SHELL_OBJECTS},
        "custom_exceptions": shell.custom_exceptions,
        "custom_tb": shell.CustomTB,
        "events": {event: list(callbacks) for event, callbacks in shell.events.callbacks.items()},
        "instance_keys": {_id(o): set(_vars(o)) for o in _overridable(shell) if _hasdict(o)},
        "handlers": dict(_getattr(shell.kernel, "shell_handlers", {}) or {}),
        "user_ns": shell.user_ns,
    }


def _hasdict(obj) -> bool:
    try:
        _vars(obj)
    except TypeError:
        return False
    return True


def _snapshot() -> dict:
    modules = {name: _snapshot_module(m) for name, m in list(sys.modules.items())
               if _watched(name) and _isinstance(m, types.ModuleType)}
    encodings = []
    if "ctxlab" in sys.modules:
        encoding = sys.modules["ctxlab"].encoding()
        encodings.append((encoding, dict(_vars(encoding))))
    registry = sys.modules.get("tiktoken.registry")
    return {
        "modules": modules,
        "encodings": encodings,
        "registry": dict(_getattr(registry, "ENCODINGS", {}) or {}),
        "sys": {name: _getattr(sys, name, None) for name in _SYS_HOOKS},
        "trace": _gettrace(),
        "profile": _getprofile(),
        "meta_path": (sys.meta_path, list(sys.meta_path)),
        "path_hooks": (sys.path_hooks, list(sys.path_hooks)),
        "threads": {t.ident for t in threading.enumerate()},
        "ipython": _snapshot_ipython(_shell()),
    }


def _shell():
    from IPython import get_ipython

    return get_ipython()


# ---------------------------------------------------------------------------- restoring


def _restore_builtins(saved: dict, changes: list) -> None:
    """Put builtins back first, using nothing a learner could have replaced."""
    entry = saved["modules"].get("builtins")
    if entry is None:
        return
    namespace = _vars(entry["module"])
    for key, value in entry["namespace"].items():
        if key not in IGNORED_BUILTINS and namespace.get(key, _MISSING) is not value:
            namespace[key] = value
            changes.append(f"builtins.{key} was replaced")


def _restore_modules(saved: dict, changes: list) -> None:
    for name, entry in saved["modules"].items():
        module = entry["module"]
        if sys.modules.get(name) is not module:
            sys.modules[name] = module
            changes.append(f"sys.modules[{name!r}] was replaced")
        namespace = _vars(module)
        for key, value in entry["namespace"].items():
            if name == "builtins" and key in IGNORED_BUILTINS:
                continue
            current = namespace.get(key, _MISSING)
            if current is not value:
                namespace[key] = value
                verb = "deleted" if current is _MISSING else "replaced"
                changes.append(f"{name}.{key} was {verb}")
        for key, (cls, attributes) in entry["classes"].items():
            current = _vars(cls)
            for attr, value in attributes.items():
                if current.get(attr, _MISSING) is not value:
                    try:
                        _setattr(cls, attr, value)
                        changes.append(f"{name}.{key}.{attr} was replaced")
                    except (TypeError, AttributeError):
                        pass
            for attr in [a for a in current if a not in attributes and a not in ALLOWED_NEW_CLASS_KEYS]:
                try:
                    _delattr(cls, attr)
                    changes.append(f"{name}.{key}.{attr} was added")
                except (TypeError, AttributeError):
                    pass
        for func, code, defaults, kwdefaults in entry["functions"]:
            if func.__code__ is not code or func.__defaults__ is not defaults or func.__kwdefaults__ is not kwdefaults:
                func.__code__, func.__defaults__, func.__kwdefaults__ = code, defaults, kwdefaults
                changes.append(f"the code of {func.__module__}.{func.__qualname__} was replaced")


def _restore_encodings(saved: dict, changes: list) -> None:
    registry = sys.modules.get("tiktoken.registry")
    if registry is not None:
        current = _getattr(registry, "ENCODINGS", None)
        if current is not None and any(current.get(k, _MISSING) is not v for k, v in saved["registry"].items()):
            current.update(saved["registry"])
            changes.append("tiktoken's encoding registry was changed")
    for encoding, attributes in saved["encodings"]:
        current = _vars(encoding)
        if any(current.get(k, _MISSING) is not v for k, v in attributes.items()) or set(current) - set(attributes):
            current.clear()
            current.update(attributes)
            changes.append("the attributes of the cached tokenizer were changed")
        ctxlab = sys.modules.get("ctxlab")
        if ctxlab is not None and ctxlab.encoding() is not encoding:
            ctxlab.encoding.cache_clear()
            changes.append("ctxlab.encoding()'s cache held another tokenizer")


def _restore_list(owner, name: str, original, contents: list, trusted, changes: list, label: str) -> None:
    """Put ``owner.name`` back to the list object ``original`` holding ``contents``, keeping
    entries added since only when they come from installed code (IPython's own, for example)."""
    current = _getattr(owner, name, None)
    if current is not original:
        _setattr(owner, name, original)
        changes.append(f"{label} was replaced")
        extra = list(current) if _isinstance(current, list) else []
    else:
        extra = []
    items = list(original) + extra
    added = [x for x in items if not any(x is y for y in contents)]
    foreign = [x for x in added if not _code_is_trusted(x, trusted)]
    wanted = contents + [x for x in added if not any(x is f for f in foreign)]
    if _len(wanted) != _len(original) or any(x is not y for x, y in zip(wanted, original, strict=True)):
        original[:] = wanted
        changes += [f"{label}: removed {_describe(x)}" for x in foreign]


def _describe(obj) -> str:
    name = _getattr(obj, "__qualname__", None) or _type(obj).__qualname__
    return f"{_getattr(obj, '__module__', '?')}.{name}"


def _restore_ipython(saved: dict, trusted, changes: list) -> None:
    shell = saved["shell"]
    for name, (original, contents) in saved["lists"].items():
        _restore_list(shell, name, original, contents, trusted, changes, f"IPython {name}")
    manager = saved["manager"]
    if shell.input_transformer_manager is not manager:
        shell.input_transformer_manager = manager
        changes.append("IPython input_transformer_manager was replaced")
    for name, (original, contents) in saved["manager_lists"].items():
        _restore_list(manager, name, original, contents, trusted, changes, f"IPython input {name}")
    for name, original in saved["objects"].items():
        if _getattr(shell, name, None) is not original:
            _setattr(shell, name, original)
            changes.append(f"IPython shell.{name} was replaced")
    if shell.custom_exceptions != saved["custom_exceptions"] or shell.CustomTB != saved["custom_tb"]:
        shell.custom_exceptions, shell.CustomTB = saved["custom_exceptions"], saved["custom_tb"]
        changes.append("a custom exception handler was installed (set_custom_exc)")
    for event, callbacks in shell.events.callbacks.items():
        before = saved["events"].get(event, [])
        added = [c for c in callbacks if not any(c is b for b in before)]
        foreign = [c for c in added if not _code_is_trusted(c, trusted)]
        if foreign or _len(callbacks) < _len(before):
            callbacks[:] = before + [c for c in added if c not in foreign]
            changes += [f"IPython {event} callback removed: {_describe(c)}" for c in foreign]
    for obj in _overridable(shell):
        keys = saved["instance_keys"].get(_id(obj))
        if keys is None or not _hasdict(obj):
            continue
        for key in [k for k in _vars(obj) if k not in keys]:
            if _callable(_getattr(_type(obj), key, None)):
                _delattr(obj, key)
                changes.append(f"{_type(obj).__name__}.{key} was overridden on the running kernel")
    handlers = _getattr(shell.kernel, "shell_handlers", None)
    if handlers is not None and any(handlers.get(k) is not v for k, v in saved["handlers"].items()):
        handlers.update(saved["handlers"])
        changes.append("the kernel's message handlers were replaced")


def _restore_sys(saved: dict, changes: list) -> None:
    for name, original in saved["sys"].items():
        if _getattr(sys, name, None) is not original:
            _setattr(sys, name, original)
            changes.append(f"sys.{name} was replaced")
    if _gettrace() is not saved["trace"]:
        _settrace(saved["trace"])
        changes.append("a trace function was installed (sys.settrace)")
    if _getprofile() is not saved["profile"]:
        _setprofile(saved["profile"])
        changes.append("a profile function was installed (sys.setprofile)")
    for name in ("meta_path", "path_hooks"):
        original, contents = saved[name]
        if _getattr(sys, name) is not original:
            _setattr(sys, name, original)
            changes.append(f"sys.{name} was replaced")
        if _len(original) != _len(contents) or any(x is not y for x, y in zip(original, contents, strict=True)):
            original[:] = contents
            changes.append(f"sys.{name} was changed")


# ---------------------------------------------------------------------------- the entry points


def arm(nonce: str) -> str:
    """Record the genuine state (call once, before any learner code). Returns a JSON report."""
    problems = []
    try:
        import ctxlab  # noqa: F401  (loads ctxlab and tiktoken so that they are watched)

        sys.modules["ctxlab"].encoding()
    except Exception as err:  # the environment check in the notebook will say more
        problems.append(f"ctxlab could not be loaded: {type(err).__name__}: {err}")
    _state.clear()
    _state["trusted"] = _trusted_prefixes()
    _state["saved"] = _snapshot()
    _state["reported_threads"] = set()
    shell = _state["saved"]["ipython"]["shell"]
    shell.user_ns[GUARD_NAME] = sys.modules[__name__]
    _state["strict"] = StrictAsserts()
    return _dumps({"nonce": nonce, "armed": True, "problems": problems})


def checkpoint(nonce: str, stage: str = "after_cell", strict: bool = True) -> str:
    """Put back whatever changed since :func:`arm`, and say what it was (a JSON report).

    ``stage`` is ``"after_cell"``, ``"before_test"`` (also arms strict ``assert a == b``
    unless ``strict`` is False) or ``"after_test"``.
    """
    saved = _state.get("saved")
    if saved is None:
        return _dumps({"nonce": nonce, "error": "the guard was not armed"})
    changes: list = []
    _restore_builtins(saved, changes)
    shell = saved["ipython"]["shell"]
    strict_transformer = _state["strict"]
    transformers = shell.ast_transformers
    transformers[:] = [t for t in transformers if t is not strict_transformer]
    shell.user_ns.pop(EQUAL_HELPER, None)

    trusted = _state["trusted"]
    _restore_modules(saved, changes)
    _restore_encodings(saved, changes)
    _restore_sys(saved, changes)
    _restore_ipython(saved["ipython"], trusted, changes)
    if shell.user_ns is not saved["ipython"]["user_ns"]:
        changes.append("the user namespace was replaced")
    shell.user_ns[GUARD_NAME] = sys.modules[__name__]

    threads = [t for t in threading.enumerate()
               if t.ident not in saved["threads"] and t.ident not in _state["reported_threads"]
               and not _code_is_trusted(_getattr(t, "_target", None) or _type(t).run, trusted)]
    _state["reported_threads"].update(t.ident for t in threads)
    if stage == "before_test" and strict:
        shell.user_ns[EQUAL_HELPER] = strict_equal
        transformers.append(strict_transformer)
    refused, _state["refused"] = _state.get("refused", []), []
    return _dumps({
        "nonce": nonce,
        "refused": refused,
        "changes": changes[:MAX_REPORTED],
        "threads": [t.name for t in threads if t.is_alive()][:MAX_REPORTED],
    })
