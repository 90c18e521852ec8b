"""One judge serving notebook after notebook: a reset forgets the last notebook entirely, and
the grading kernels' token memo gives exactly what tiktoken gives (each in a fresh Python, since both
change the process they run in)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            cwd=REPO, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_a_reset_forgets_every_name_of_the_last_notebook_and_keeps_the_judge():
    out = run("""
        import json
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        import autograder.judging.judge as judge
        shell.user_ns["__ctxlab_judge__"] = judge
        shell.run_cell("import ctxlab\\nsecret = 42\\ndef _helper():\\n    return secret\\ncount_chat = len")
        judge._state["bound"] = ["count_chat"]
        report = json.loads(judge.reset("n1"))
        ns = shell.user_ns
        print(report["ok"], report["nonce"], "secret" in ns, "_helper" in ns, "count_chat" in ns, "ctxlab" in ns,
              ns["__ctxlab_judge__"] is judge, judge._state["bound"], shell.execution_count)
    """)
    assert out == "True n1 False False False False True [] 1"


def test_the_token_memo_agrees_with_tiktoken_and_hands_out_fresh_lists():
    out = run("""
        import tiktoken, ctxlab
        enc = ctxlab.encoding()
        texts = ["", "context window", "<|endoftext|> is plain text here", "x" * 5000, "naïve café 日本語"]
        want = [enc.encode_ordinary(t) for t in texts]
        import autograder.judging.memo as memo
        memo.MEMO_TOKENS = 7  # forgets everything when full: still right
        memo.memoize_tokens(); memo.memoize_tokens()
        for _ in range(3):
            got = [enc.encode_ordinary(t) for t in texts]
            assert got == want, (got, want)
        first = enc.encode_ordinary("context window"); first.append(-1)
        assert enc.encode_ordinary("context window") == want[1]
        assert ctxlab.count_text("context window") == len(want[1])
        print("ok", tiktoken.Encoding.encode_ordinary._ctxlab_memo)
    """)
    assert out == "ok True"


def test_the_learners_memo_lives_only_while_it_answers_the_judge():
    out = run("""
        import tiktoken, ctxlab
        from autograder.judging.memo import tokens_remembered
        enc = ctxlab.encoding()
        original = tiktoken.Encoding.encode_ordinary
        want = enc.encode_ordinary("context window")
        with tokens_remembered(cap=3):  # forgets everything when full: still right
            inside = tiktoken.Encoding.encode_ordinary
            got = [enc.encode_ordinary(t) for t in ("context window", "x" * 50, "context window")]
        assert got[0] == got[2] == want and got[1] == original(enc, "x" * 50), got
        memo = inside.__closure__ and [c.cell_contents for c in inside.__closure__ if isinstance(c.cell_contents, dict)]
        print(getattr(inside, "_ctxlab_memo", False), tiktoken.Encoding.encode_ordinary is original, memo)

        def learners_own(self, text):  # a learner's code that replaces the method while tested
            return [0]
        with tokens_remembered():
            tiktoken.Encoding.encode_ordinary = learners_own
        print(tiktoken.Encoding.encode_ordinary is learners_own)
        with tokens_remembered():  # replaced before the test: never memoized, it need not be pure
            print(tiktoken.Encoding.encode_ordinary is learners_own)
    """)
    assert out == "True True [{}]\nTrue\nTrue"


def test_a_session_binds_the_names_again_before_each_test_and_forgets_the_last_tests_objects():
    out = run("""
        import json, os, tempfile, threading
        from IPython.core.interactiveshell import InteractiveShell
        import autograder.judging.agent as agent
        import autograder.judging.judge as judge
        from autograder.judging.wire import ChannelError
        shell = InteractiveShell.instance()
        learner = {}
        exec("value = 1\\ndef bump():\\n    global value\\n    value += 1\\n    return value", learner)
        agent._namespace = lambda: learner  # the learner's kernel, played by a thread
        path = os.path.join(tempfile.mkdtemp(), "judge.sock")
        assert json.loads(judge.start("n0", path, 10.0))["ok"]
        ended = []
        thread = threading.Thread(target=lambda: ended.append(agent.serve(path, "tok", 10.0)))
        thread.start()
        lines = []  # not printed yet: the serving thread sends this process's output to a sink
        first = json.loads(judge.begin("n1", "tok", ["value", "bump", "missing"], {}))
        ns = shell.user_ns
        old_bump = ns["bump"]
        lines.append(f"{first['bound']} {ns['value']} {old_bump()}")
        again = json.loads(judge.rebind("n2", ["value", "bump", "missing"]))
        lines.append(f"{again['ok']} {again['bound']} {ns['value']} {'missing' in ns}")
        lines.append(f"{ns['bump']()} {learner['value']}")
        try:  # an object of the last test names nothing now: the connection ends, as it did then
            old_bump()
        except ChannelError:
            lines.append("stale: ChannelError")
        lines.append(f"{json.loads(judge.rebind('n3', ['value']))['ok']} {'value' in ns}")
        lines.append(f"{json.loads(judge.end('n4'))['broken'] is not None}")
        thread.join(10)
        lines.append(f"{[e.split(':')[0] for e in ended]} {learner['value']}")
        print("\\n".join(lines))
    """)
    assert out.splitlines() == ["['value', 'bump'] 1 2", "True ['value', 'bump'] 2 False", "3 3",
                                "stale: ChannelError", "False False", "True", "['channel closed'] 3"]


def test_a_session_ends_cleanly_after_its_last_test():
    out = run("""
        import json, os, tempfile, threading
        from IPython.core.interactiveshell import InteractiveShell
        import autograder.judging.agent as agent
        import autograder.judging.judge as judge
        shell = InteractiveShell.instance()
        learner = {"answer": 42}
        agent._namespace = lambda: learner
        path = os.path.join(tempfile.mkdtemp(), "judge.sock")
        judge.start("n0", path, 10.0)
        ended = []
        thread = threading.Thread(target=lambda: ended.append(agent.serve(path, "tok", 10.0)))
        thread.start()
        reports = [json.loads(judge.begin("n1", "tok", ["answer"], {}))["ok"]]
        for n in range(5):
            learner["answer"] = n
            reports.append(json.loads(judge.rebind(f"r{n}", ["answer"]))["ok"] and shell.user_ns["answer"] == n)
        reports.append(json.loads(judge.end("n2"))["broken"])
        thread.join(10)
        print(reports, ended)
    """)
    assert out == "[True, True, True, True, True, True, None] ['ended']"


LEARNER_WAYS_AROUND = '''
import types
import ctxlab

class ContextBudget(ctxlab.ContextBudget):  # inherits the reference's methods
    pass

class Shell:  # a plain class whose method builds the reference inside
    def allowance(self, fixed, pad):
        return ctxlab.ContextBudget().history_allowance(fixed, pad)

def make_checker():  # hands out a closure that calls the reference
    return lambda messages: ctxlab.pairs_ok(messages)

_f = ctxlab.fit
_copy = types.FunctionType(_f.__code__, _f.__globals__, "fit", _f.__defaults__, _f.__closure__)
_copy.__kwdefaults__ = dict(_f.__kwdefaults__ or {})

def fit(messages, allowance):  # a copy of the reference built from its code object
    return _copy(messages, allowance)

_saved = ctxlab.turn_groups.__code__

def turn_groups(messages):  # puts the reference's code back while it runs
    function = ctxlab.turn_groups
    off, function.__code__ = function.__code__, _saved
    try:
        return function(messages)
    finally:
        function.__code__ = off

def own_pairs_ok(messages):  # an answer of its own: other references still work
    return bool(ctxlab.turn_groups(messages)) and True
'''


def test_the_reference_stays_off_for_subclasses_methods_closures_and_copies():
    """Each way of reaching ctxlab's own answer while it is switched off fails with
    ReferenceDisabled; an answer written by the learner still runs."""
    out = run(f"""
        import json, os, tempfile, threading
        from IPython.core.interactiveshell import InteractiveShell
        import autograder.judging.agent as agent
        import autograder.judging.judge as judge
        from autograder.judging.errors import ReferenceDisabled
        from autograder.references import forbid_map
        agent.install()
        shell = InteractiveShell.instance()
        learner = {{}}
        exec({LEARNER_WAYS_AROUND!r}, learner)
        agent._namespace = lambda: learner
        path = os.path.join(tempfile.mkdtemp(), "judge.sock")
        judge.start("n0", path, 10.0)
        thread = threading.Thread(target=lambda: agent.serve(path, "tok", 10.0))
        thread.start()
        forbid = forbid_map({{"ContextBudget": ["ctxlab.ContextBudget"], "Shell": ["ctxlab.ContextBudget"],
                              "make_checker": ["ctxlab.pairs_ok"], "fit": ["ctxlab.fit"],
                              "turn_groups": ["ctxlab.turn_groups"], "own_pairs_ok": ["ctxlab.pairs_ok"]}})
        names = ["ContextBudget", "Shell", "make_checker", "fit", "turn_groups", "own_pairs_ok"]
        judge.begin("n1", "tok", names, forbid)
        ns = shell.user_ns
        messages = [{{"role": "user", "content": "hi"}}]
        cases = {{"subclass": lambda: ns["ContextBudget"]().history_allowance(100, 100),
                 "method": lambda: ns["Shell"]().allowance(100, 100),
                 "closure": lambda: ns["make_checker"]()(messages),
                 "copy": lambda: ns["fit"](messages, 1000),
                 "saved code": lambda: ns["turn_groups"](messages),
                 "own answer": lambda: ns["own_pairs_ok"](messages)}}
        verdicts = {{}}  # printed at the end: the serving thread sends this process's output to a sink
        for label, case in cases.items():
            try:
                verdicts[label] = f"ran {{case()}}"
            except ReferenceDisabled as err:
                verdicts[label] = f"off: {{err}}"
        judge.end("n2")
        thread.join(10)
        import ctxlab
        verdicts["after"] = f"ran {{len(ctxlab.fit(messages, 1000)[0])}} {{len(ctxlab.turn_groups(messages))}}"
        print(json.dumps(verdicts))
    """)
    import json

    verdicts = json.loads(out.splitlines()[-1])
    for way in ("subclass", "method", "closure", "copy", "saved code"):
        assert verdicts[way].startswith("off: "), (way, verdicts[way])
    assert "keeps the code object of ctxlab.turn_groups" in verdicts["saved code"], verdicts
    assert verdicts["own answer"] == "ran True", verdicts
    assert verdicts["after"] == "ran 1 1", verdicts  # everything is switched on again


LEARNER_CALLS_BACK = '''
MESSAGES = [{"role": "user", "content": "hello there"}]

def total_of(counter):  # the test's own object: its method is the reference, and runs in the judge
    return counter.messages(MESSAGES)

def text_of(counter):  # an answer of its own using another of the object's methods: still works
    return counter.text("hello there")

def other_total(counter):  # another exercise's answer: that reference is not this one's
    return counter.messages(MESSAGES)
'''


def test_a_method_of_the_tests_own_object_is_off_while_the_answer_runs():
    """The learner's kernel is another process here, as in grading. The test builds a
    ``TokenCounter`` in the judge (it crosses as a handle) and hands it to the answer, whose
    code calls back its method, ctxlab's own answer: that runs in the judge, so the judge
    switches it off there too while the answer runs. The test's own calls of it still work."""
    out = run(f"""
        import json, os, tempfile
        from IPython.core.interactiveshell import InteractiveShell
        import autograder.judging.agent as agent
        import autograder.judging.judge as judge
        from autograder.judging.errors import ReferenceDisabled
        from autograder.references import forbid_map
        shell = InteractiveShell.instance()
        path = os.path.join(tempfile.mkdtemp(), "judge.sock")
        judge.start("n0", path, 10.0)
        child = os.fork()
        if child == 0:  # the learner's kernel
            learner = {{}}
            exec({LEARNER_CALLS_BACK!r}, learner)
            agent._namespace = lambda: learner
            agent.install()
            agent.serve(path, "tok", 10.0)
            os._exit(0)
        import ctxlab
        forbid = forbid_map({{"total_of": ["ctxlab.TokenCounter.messages"],
                              "text_of": ["ctxlab.TokenCounter.messages"]}})
        judge.begin("n1", "tok", ["total_of", "text_of", "other_total"], forbid)
        ns = shell.user_ns
        counter = ctxlab.TokenCounter()
        messages = [{{"role": "user", "content": "hello there"}}]
        verdicts = {{"before": f"ran {{counter.messages(messages)}}", "text": f"ran {{counter.text('hello there')}}"}}
        cases = {{"callback": lambda: ns["total_of"](counter), "own answer": lambda: ns["text_of"](counter),
                 "other exercise": lambda: ns["other_total"](counter)}}
        for label, case in cases.items():
            try:
                verdicts[label] = f"ran {{case()}}"
            except ReferenceDisabled as err:
                verdicts[label] = f"off: {{err}}"
        verdicts["after"] = f"ran {{counter.messages(messages)}}"
        judge.end("n2")
        os.waitpid(child, 0)
        print(json.dumps(verdicts))
    """)
    import json

    verdicts = json.loads(out.splitlines()[-1])
    assert verdicts["callback"].startswith("off: "), verdicts
    assert "ctxlab.TokenCounter.messages is ctxlab's own answer" in verdicts["callback"], verdicts
    assert verdicts["own answer"] == verdicts["text"], verdicts
    assert verdicts["other exercise"] == verdicts["before"], verdicts
    assert verdicts["after"] == verdicts["before"], verdicts
