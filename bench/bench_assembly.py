"""The assembler over long runs: what a lap costs as the record grows, a 1,000-lap soak, and
the early-stopping ``fit`` against the floor.

* **Per-lap cost.** A run made by repeating the research transcript's laps with fresh ids
  (:func:`ctxlab.course.transcripts.repeat_laps`) is assembled lap after lap by a
  :class:`ctxlab.Assembler` (32k window, summary capped at 2,000 tokens, the offline
  summariser). Every text of a repeated lap carries its lap number (:func:`_unique_texts`),
  so no new message can be counted from memory: the Assembler encodes each lap's new
  messages as the encoding reference does. At 200, 2,000 and 10,000 messages the next laps
  are timed (median), and set
  against two references: the same laps through ``ctxlab.build_context`` with the previous
  lap's state (what the library offered before the Assembler), and encoding that lap's new
  messages once (``encode_ordinary`` on each counted string: the least work a lap can do).
  The Assembler's lap is timed as :meth:`~ctxlab.Assembler.extend` with the new messages
  (validating and counting them) then :meth:`~ctxlab.Assembler.build`, which is what
  ``context(run[:i])`` does; the first part is reported on its own.
  A third column times the least work a lap that keeps the Assembler's promises can do
  (:func:`_promised_lap`: encode the new messages and the part of each aging result that
  cannot be counted from its pieces, then copy the lap's prompt), so the report shows how
  much of the lap is bookkeeping.
  Targets: a lap at 2,000 messages costs at most 2x a lap at 200; at 10,000 messages at most
  1.5x encoding the lap's new messages. The run with the transcript's texts repeated as they
  are (which the counter answers partly from memory) is timed at the largest size too.
* **Soak.** 1,000 laps: tokens per lap, the summary's size, time per lap.
* **Early stop.** ``ctxlab.fit`` (newest first, counting only the pins and what it keeps) on
  a 5,000-message history of ``histories.history`` against ``contenders.floor`` (every
  message encoded once).
* **Counting by pieces** (:mod:`ctxlab.pieces`) against ``encode_ordinary`` on every string of
  a repeated run, warm (in order, one memory) and cold (memory emptied before each string).
  The per-lap measurement is also run with the memory emptied before each lap.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import statistics
import time
from pathlib import Path

import contenders
import histories
import measure

import ctxlab
import ctxlab.course
from ctxlab.compression import _text_cut
from ctxlab.course.transcripts import repeat_laps
from ctxlab.pieces import PieceCounter, text_counter
from ctxlab.tokens import _line_start_after, _line_start_before

BUDGET = ctxlab.ContextBudget(window=32_000, reserve_output=4_000, scratchpad_max=1_000, summary_max=2_000)
FULL = {"sizes": (200, 2_000, 10_000), "laps_timed": 40, "rounds": 5, "soak": 1_000, "fit_size": 5_000, "cold": 3_000}
QUICK = {"sizes": (60, 200), "laps_timed": 3, "rounds": 2, "soak": 30, "fit_size": 300, "cold": 50}


def _run(messages: int, *, unique: bool = True) -> tuple[list[dict], list[int]]:
    laps = max(4, messages // 2)
    run = repeat_laps(ctxlab.course.load_transcript("research"), laps)
    while len(run) < messages + 200:
        laps *= 2
        run = repeat_laps(ctxlab.course.load_transcript("research"), laps)
    if unique:
        run = _unique_texts(run)
    return run, ctxlab.model_calls(run)


def _marked(text: str, lap: int) -> str:
    """``text`` made particular to lap ``lap``: a JSON object gets a ``"lap"`` key first (it
    stays JSON, so it is compressed as JSON), any other text ends with ``(lap N)``.

    >>> _marked('{"q": "heat pumps"}', 7), _marked("Searching again.", 7)
    ('{"lap": 7, "q": "heat pumps"}', 'Searching again. (lap 7)')
    """
    stripped = text.lstrip()
    if stripped.startswith("{") and not stripped.startswith("{}"):
        marked = text.replace("{", f'{{"lap": {lap}, ', 1)
        try:
            json.loads(marked)
            return marked
        except json.JSONDecodeError:
            pass
    return f"{text} (lap {lap})"


def _unique_texts(run: list[dict]) -> list[dict]:
    """``run`` with every text of lap 1 on (contents, tool-call arguments; the user messages,
    kept once, aside) marked with its lap, so no lap repeats another's texts."""
    out = []
    for message in run:
        lap = message.get("step", 0)
        if lap < 1 or message["role"] == "user":
            out.append(message)
            continue
        message = dict(message)
        if isinstance(message.get("content"), str):
            message["content"] = _marked(message["content"], lap)
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {**call, "function": {**call["function"], "arguments": _marked(call["function"]["arguments"], lap)}}
                for call in message["tool_calls"]
            ]
        out.append(message)
    return out


def _new_strings(messages: list[dict]) -> list[str]:
    return [s for m in messages for s in contenders.counted_strings(m)]


def _newly_compressed(record: list[dict], step: int) -> list[str]:
    """The compressed texts of the tool results that change tier at ``step``: new text the lap
    must count too (the Assembler's default options: full for 2 laps, then compressed)."""
    texts = []
    for message in record:
        if message["role"] == "tool" and message.get("step") == step - 3 and not message.get("pinned"):
            text = ctxlab.compress(message["content"], 1_200)
            if text != message["content"]:
                texts.append(text)
    return texts


def _aging_texts(record: list[dict], step: int) -> list[str]:
    """What a lap must encode of the tool results that age at ``step`` (the Assembler's default
    options), at the least: a JSON result's whole compressed text; of a text result, only the
    part of its compressed text between the line starts around the cut (its head and tail are
    counted from the pieces the result was encoded in when it arrived)."""
    texts = []
    for message in record:
        if message["role"] == "tool" and message.get("step") == step - 3 and not message.get("pinned"):
            content = message["content"]
            text = ctxlab.compress(content, 1_200)
            if text == content:
                continue
            cut = _text_cut(content, 1_200)
            if cut is None:
                texts.append(text)
                continue
            head, tail = _line_start_before(content, cut[0]), _line_start_after(content, cut[2])
            texts.append(text[head:len(text) - (len(content) - tail)])
    return texts


def _promised_lap(strings: list[str], aging: list[str], kept: list[dict], count) -> list[dict]:
    """The least work a lap that keeps the Assembler's promises can do: count the new messages'
    texts and what ages (``count``, the Assembler's own way of counting a text), then copy the
    prompt's messages for the caller (each dict, its tool calls and their functions). No
    validation, grouping, allocation or log."""
    for text in strings:
        count(text)
    for text in aging:
        count(text)
    prompt = []
    for message in kept:
        copy = message.copy()
        if copy.get("tool_calls"):
            copy["tool_calls"] = [{**call, "function": call["function"].copy()} for call in copy["tool_calls"]]
        prompt.append(copy)
    return prompt


class _TimedCount:
    """A text counter that adds up the seconds spent in it: the share of a lap that is
    counting text (by pieces for cl100k_base, :mod:`ctxlab.pieces`; a piece not seen before
    is encoded by tiktoken). Its cost, two clock reads per string, is in the lap it times
    (about 0.3 us a string)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.seconds = 0.0

    def __call__(self, text: str) -> int:
        began = time.perf_counter()
        tokens = self._inner(text)
        self.seconds += time.perf_counter() - began
        return tokens


def per_lap(size: int, laps_timed: int, *, unique: bool = True, rounds: int = 1, forget: bool = False) -> dict:
    """Median seconds of a lap at ``size`` messages: Assembler, build_context, encoding the new.

    ``rounds`` rounds of ``laps_timed`` consecutive laps: in each, the Assembler's laps, then
    encoding the same laps' new messages, each in its own pass, so neither runs in the caches
    the other has just filled; the Assembler's lap also reports the time its text counts
    took. Counting the new messages by pieces shares the Assembler's piece memory, which has
    seen the same laps. ``build_context`` with state is timed on the first round's laps only, in a pass of
    its own (at 10,000 messages it is 50 ms of other work a lap). ``unique=False`` keeps the
    transcript's texts as they are on every repeat. ``forget=True`` empties the memory of
    pieces before each of the Assembler's laps (not timed), so it counts every piece of the lap
    as new: the least the memory can help."""
    gc.collect()  # start clean: no earlier measurement's garbage is freed during this one
    run, calls = _run(size + (rounds - 1) * laps_timed * 5, unique=unique)
    tools = ctxlab.course.load_tools("research")
    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps for cold climates")
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()), tools=tools)
    start = next(k for k, i in enumerate(calls) if i >= size)
    for i in calls[:start]:
        context = assembler.context(run[:i], scratchpad=pad, step=run[i]["step"])
    state = context.state
    count = text_counter(assembler.counter.encoding)
    timed = _TimedCount(count)
    assembler.counter._count_text = timed
    encoding = ctxlab.encoding()
    ours, taking, tokenizer, floor, floor_all, ratios, promised, by_pieces = [], [], [], [], [], [], [], []
    for r in range(rounds):
        first = start + r * laps_timed
        laps = list(zip(calls[first - 1:first - 1 + laps_timed], calls[first:first + laps_timed], strict=True))
        if r == 0:
            first_laps = laps
        lap_times, lap_floor, prompts = [], [], []
        for previous, i in laps:
            new = run[previous:i]
            timed.seconds = 0.0
            if forget:
                count.forget()
            began = time.perf_counter()
            assembler.extend(new)  # what context(run[:i]) does: take the new messages, then build
            taken = time.perf_counter()
            built = assembler.build(scratchpad=pad, step=run[i]["step"])
            lap_times.append(time.perf_counter() - began)
            taking.append(taken - began)
            tokenizer.append(timed.seconds)
            prompts.append(built.messages)
        for previous, i in laps:
            strings = _new_strings(run[previous:i])
            compressed = _newly_compressed(run[:i], run[i]["step"])
            began = time.perf_counter()
            for text in strings:
                encoding.encode_ordinary(text)
            between = time.perf_counter()
            for text in compressed:
                encoding.encode_ordinary(text)
            lap_floor.append(between - began)
            floor_all.append(time.perf_counter() - began)
        for (previous, i), prompt in zip(laps, prompts, strict=True):
            strings, aging = _new_strings(run[previous:i]), _aging_texts(run[:i], run[i]["step"])
            began = time.perf_counter()
            _promised_lap(strings, aging, prompt, count)
            promised.append(time.perf_counter() - began)
        for previous, i in laps:
            strings = _new_strings(run[previous:i])
            began = time.perf_counter()
            for text in strings:
                count(text)
            by_pieces.append(time.perf_counter() - began)
        ours += lap_times
        floor += lap_floor
        ratios.append(statistics.median(lap_times) / statistics.median(lap_floor))
    counter, old = ctxlab.TokenCounter(), []
    for _previous, i in first_laps:
        began = time.perf_counter()
        context = ctxlab.build_context(run[:i], ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()),
                                       tools=tools, scratchpad=pad, state=state, count=counter.message,
                                       step=run[i]["step"])
        old.append(time.perf_counter() - began)
        state = context.state
    return {"size": size, "laps": len(ours), "assembler": statistics.median(ours),
            "build_context": statistics.median(old), "encode_new": statistics.median(floor),
            "encode_all_new": statistics.median(floor_all), "extend": statistics.median(taking),
            "tokenizer": statistics.median(tokenizer), "promised": statistics.median(promised),
            "count_new": statistics.median(by_pieces),
            "rest": statistics.median(lap - spent for lap, spent in zip(ours, tokenizer, strict=True)),
            "round_ratios": ratios}


def soak(laps: int, model: str | None = None) -> dict:
    """The 1,000-lap run; ``model`` named in the budget (its counter: o200k_base, encoded whole)."""
    gc.collect()
    run = repeat_laps(ctxlab.course.load_transcript("research"), laps)
    budget = BUDGET if model is None else dataclasses.replace(BUDGET, model=model)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                 tools=ctxlab.course.load_tools("research"))
    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps for cold climates")
    tokens, summaries, times = [], [], []
    for i in ctxlab.model_calls(run):
        began = time.perf_counter()
        context = assembler.context(run[:i], scratchpad=pad, step=run[i]["step"])
        times.append(time.perf_counter() - began)
        tokens.append(context.tokens)
        summaries.append(context.allocation.summary)
    times.sort()
    return {
        "laps": len(times), "messages": len(run), "over_budget": sum(t > BUDGET.input_limit for t in tokens),
        "tokens_min": min(tokens), "tokens_median": int(statistics.median(tokens)), "tokens_max": max(tokens),
        "summary_max": max(summaries), "summary_cap": BUDGET.summary_cap,
        "compactions": assembler.log.count("summarise"),
        "lap_median": statistics.median(times), "lap_p95": times[int(len(times) * 0.95) - 1], "lap_max": times[-1],
    }


def early_stop(size: int) -> dict:
    messages = histories.history(size)
    allowance = histories.ALLOWANCES["medium"]
    fit_times, floor_times = [], []
    for _ in range(5):
        seconds, outcome = measure.timed(lambda: contenders.ctxlab_fit(messages, allowance))
        fit_times.append(seconds)
        seconds, _ = measure.timed(lambda: contenders.floor(messages))
        floor_times.append(seconds)
    return {"size": size, "allowance": allowance, "fit": statistics.median(fit_times),
            "floor": statistics.median(floor_times), "kept": len(outcome.kept), "encoder_calls": outcome.encoder_calls}


def pieces_vs_encoding(messages: int, cold: int) -> dict:
    """Counting every string of a ``messages``-message repeated research run by pieces, one
    counter starting empty and going through them in order, against ``encode_ordinary``; and
    the first ``cold`` strings each counted with the memory emptied first. Medians of 3 runs."""
    run, _ = _run(messages)
    strings = _new_strings(run)
    encoding = ctxlab.encoding()
    counter = PieceCounter(encoding)
    times: dict[str, list[float]] = {"pieces": [], "encode": [], "pieces_cold": [], "encode_cold": []}
    for _ in range(3):
        counter.forget()
        began = time.perf_counter()
        counted = [counter(text) for text in strings]
        times["pieces"].append(time.perf_counter() - began)
        began = time.perf_counter()
        encoded = [len(encoding.encode_ordinary(text)) for text in strings]
        times["encode"].append(time.perf_counter() - began)
        assert counted == encoded, "counting by pieces disagrees with encode_ordinary"
        spent = 0.0
        for text in strings[:cold]:
            counter.forget()
            began = time.perf_counter()
            counter(text)
            spent += time.perf_counter() - began
        times["pieces_cold"].append(spent)
        began = time.perf_counter()
        for text in strings[:cold]:
            encoding.encode_ordinary(text)
        times["encode_cold"].append(time.perf_counter() - began)
    return {"strings": len(strings), "cold": min(cold, len(strings)), **{k: statistics.median(v) for k, v in times.items()}}


def main(results_dir: Path, *, quick: bool = False) -> str:
    """Run the three measurements and return the report's section."""
    options = QUICK if quick else FULL
    laps = [per_lap(size, options["laps_timed"], rounds=options["rounds"]) for size in options["sizes"]]
    repeated = per_lap(options["sizes"][-1], options["laps_timed"], unique=False, rounds=options["rounds"])
    cold = per_lap(options["sizes"][-1], options["laps_timed"], rounds=options["rounds"], forget=True)
    soaked = soak(options["soak"])
    soaked_model = soak(options["soak"], model="gpt-4o")
    stop = early_stop(options["fit_size"])
    pieces = pieces_vs_encoding(options["sizes"][1], options["cold"])
    rows = [(f"{r['size']:,}", measure.seconds(r["assembler"]), measure.seconds(r["extend"]),
             f"{measure.seconds(r['tokenizer'])} / {measure.seconds(r['rest'])}", measure.seconds(r["build_context"]), measure.seconds(r["encode_new"]),
             measure.seconds(r["encode_all_new"]), f"{r['assembler'] / r['encode_new']:.1f}x",
             f"{r['assembler'] / r['encode_all_new']:.1f}x",
             f"{min(r['round_ratios']):.1f}x to {max(r['round_ratios']):.1f}x",
             f"{measure.seconds(r['count_new'])} ({r['assembler'] / r['count_new']:.1f}x)",
             f"{measure.seconds(r['promised'])} ({r['promised'] / r['encode_new']:.1f}x)") for r in laps]
    lines = [
        "## Assembly over a long run",
        "",
        "Per-lap cost of `ctxlab.Assembler` (kept across laps) and of `ctxlab.build_context` with the previous",
        "lap's state, at a given record length, against encoding that lap's new messages once. Research laps",
        "repeated with fresh ids, each text marked with its lap; 32k window, summary capped at 2,000 tokens,",
        f"offline summariser; medians of {options['rounds']} rounds of {options['laps_timed']} consecutive laps (laps that",
        "compact included; 40 is one of each of the transcript's laps), each column timed in its own pass over a round's",
        "laps (`build_context` over the first round's only). \"counting text / rest\" splits the Assembler's lap: the",
        "time its text counts took within it (by pieces, `ctxlab.pieces`), and the rest of the lap (medians of each,",
        "lap by lap). \"count new by pieces\" counts the lap's new messages' texts as the Assembler does, by pieces",
        "(Assembler / that in brackets); \"encode new\" encodes them with tiktoken, the target's reference.",
        "\"encode new + compressed\" also encodes the compressed text of the tool results whose age tier changes at",
        "that lap, which the lap must count too. \"per round\" is the Assembler / encode new ratio of each round.",
        "\"promised work only\" is the least a lap that keeps the Assembler's promises can do, in a pass of its own:",
        "count the new messages and, of the results that age, what cannot be counted from their parts, then copy",
        "the lap's prompt for the caller; no validation, grouping, allocation or log.",
        "",
        measure.table(("messages", "Assembler", "of which taking the new messages", "counting text / rest",
                       "build_context", "encode new", "encode new + compressed", "Assembler / encode new",
                       "Assembler / encode new + compressed", "per round", "count new by pieces",
                       "promised work only (/ encode new)"),
                      rows),
        "",
    ]
    small, large = laps[0], laps[-1]
    if len(laps) >= 2:
        two = next((r for r in laps if r["size"] >= 10 * small["size"]), large)
        lines.append(f"- A lap at {two['size']:,} messages costs {two['assembler'] / small['assembler']:.2f}x a lap at "
                     f"{small['size']:,} (target: at most 2x).")
    lines.append(f"- At {large['size']:,} messages a lap costs {large['assembler'] / large['encode_new']:.1f}x encoding "
                 f"its new messages (target: at most 1.5x), {large['assembler'] / large['encode_all_new']:.1f}x encoding "
                 "them and the newly compressed results; the promised work alone costs "
                 f"{large['promised'] / large['encode_new']:.1f}x.")
    lines.append(f"- With the transcript's texts repeated unmarked (new messages partly counted from memory), at "
                 f"{repeated['size']:,} messages: Assembler {measure.seconds(repeated['assembler'])}, encoding the new "
                 f"{measure.seconds(repeated['encode_new'])}, {repeated['assembler'] / repeated['encode_new']:.1f}x "
                 f"({repeated['assembler'] / repeated['encode_all_new']:.1f}x with the newly compressed results).")
    lines.append(f"- With the memory of pieces emptied before each lap (every piece of the lap counted as new), at "
                 f"{cold['size']:,} messages: Assembler {measure.seconds(cold['assembler'])} (counting text "
                 f"{measure.seconds(cold['tokenizer'])}), encoding the new {measure.seconds(cold['encode_new'])}, "
                 f"{cold['assembler'] / cold['encode_new']:.1f}x.")
    lines += [
        "",
        f"Soak: {soaked['laps']:,} laps ({soaked['messages']:,} messages); prompts {soaked['tokens_min']:,} to "
        f"{soaked['tokens_max']:,} tokens (median {soaked['tokens_median']:,}), {soaked['over_budget']} over budget; "
        f"summary at most {soaked['summary_max']:,} tokens (cap {soaked['summary_cap']:,}), {soaked['compactions']} "
        f"compactions; a lap takes {measure.seconds(soaked['lap_median'])} (median), "
        f"{measure.seconds(soaked['lap_p95'])} (95th percentile), {measure.seconds(soaked['lap_max'])} at most.",
        f"The same soak with the budget naming gpt-4o (`ContextBudget(model=...)`: o200k_base, whose texts are "
        f"encoded whole, not in cached pieces): {soaked_model['over_budget']} over budget, "
        f"{soaked_model['compactions']} compactions; a lap takes {measure.seconds(soaked_model['lap_median'])} "
        f"(median, {soaked_model['lap_median'] / soaked['lap_median']:.1f}x), "
        f"{measure.seconds(soaked_model['lap_p95'])} (95th percentile), {measure.seconds(soaked_model['lap_max'])} at most.",
        "",
        f"Early stop: `ctxlab.fit` on {stop['size']:,} messages with a {stop['allowance']:,}-token allowance took "
        f"{measure.seconds(stop['fit'])} against the floor's {measure.seconds(stop['floor'])} "
        f"({stop['fit'] / stop['floor']:.0%} of it), keeping {stop['kept']:,} messages with "
        f"{stop['encoder_calls']:,} strings encoded.",
        "",
        f"Counting by pieces: the {pieces['strings']:,} strings of a {options['sizes'][1]:,}-message run, in order, one "
        f"counter starting empty: {measure.seconds(pieces['pieces'])} against `encode_ordinary`'s "
        f"{measure.seconds(pieces['encode'])} ({pieces['pieces'] / pieces['encode']:.2f}x); the first "
        f"{pieces['cold']:,}, each with the memory emptied first: {measure.seconds(pieces['pieces_cold'])} against "
        f"{measure.seconds(pieces['encode_cold'])} ({pieces['pieces_cold'] / pieces['encode_cold']:.2f}x). Medians of 3 runs.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - run through run.py
    raise SystemExit("run it with: python bench/run.py --only assembly")
