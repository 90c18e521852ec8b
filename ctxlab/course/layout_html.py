"""Draw a :class:`ctxlab.course.layout.WindowLayout` as self-contained HTML: the picture the widget shows.

The HTML uses inline styles only (no script, no style sheet, no web fonts), so the same
picture works inside the live widget, in a saved notebook, in ``jupyter nbconvert --to html``
output and in nbgrader feedback. Hovering a block shows its message (the ``title``
attribute); the root element carries ``data-*`` attributes that tests and tools can read.

>>> import ctxlab
>>> view = ctxlab.course.layout.layout_window([{"role": "user", "content": "Hello!"}],
...                             ctxlab.ContextBudget(window=100, reserve_output=20))
>>> html = render_layout_html(view)
>>> html.startswith('<div class="ctxlab-window"'), 'data-over-budget="false"' in html
(True, True)
"""

from __future__ import annotations

import html
import math

from .layout import Block, WindowLayout

__all__ = ["SEGMENT_COLOURS", "ROLE_COLOURS", "render_layout_html"]

SEGMENT_COLOURS = {
    "system": "#4c72b0",
    "tool schemas": "#8fb3e0",
    "scratchpad": "#dd8452",
    "summary": "#8e5ea2",
    "history": "#55a868",
    "free": "#f4f5f7",
    "reserved output": "#c9c2e6",
}
"""Fill colour of each window segment in the layout bar."""

ROLE_COLOURS = {
    "system": "#4c72b0",
    "developer": "#4c72b0",
    "user": "#2a9d8f",
    "assistant": "#e9b640",
    "tool": "#9aa7b5",
    "summary": "#8e5ea2",
    "scratchpad": "#dd8452",
    "inserted": "#6c757d",
}
"""Fill colour of each message block in the history strip, by role (or by what a policy added)."""

OVER = "#d62728"
INK = "#1f2328"
MUTED = "#59636e"
DARK_TEXT = {"tool schemas", "free", "reserved output"}
SHORT_NAMES = {
    "system": "system",
    "tool schemas": "tools",
    "scratchpad": "pad",
    "summary": "summary",
    "history": "history",
    "free": "free",
    "reserved output": "output",
}
"""What a segment too narrow for its name is labelled (the legend gives the whole name)."""
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif"
STRIP_ROWS = 8  # the strip grows to this many rows of one window each, then rescales


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(tokens: int) -> str:
    return f"{tokens:,}"


def _swatch(colour: str, *, style: str = "") -> str:
    return (
        f'<span style="display:inline-block;width:11px;height:11px;border-radius:2px;'
        f'background:{colour};vertical-align:-1px;margin-right:4px;{style}"></span>'
    )


def _segment_fill(name: str) -> str:
    colour = SEGMENT_COLOURS[name]
    if name == "reserved output":
        return f"repeating-linear-gradient(135deg,{colour} 0 6px,#b3a9db 6px 12px)"
    return colour


def _header(layout: WindowLayout) -> str:
    parts = [f'<b style="font-size:14px">Context window</b> <span style="color:{MUTED}">{_n(layout.window)} tokens</span>']
    if layout.title:
        parts.append(_e(layout.title))
    if layout.lap is not None:
        parts.append(f"lap <b>{layout.lap}</b> of {layout.laps}")
    parts.append(f"policy <b>{_e(layout.policy)}</b>")
    settings = [f"reserved output {_n(layout.reserved_output)}"]
    if layout.scratchpad_max is not None:
        settings.append(f"scratchpad cap {_n(layout.scratchpad_max)}")
    if layout.keep_recent is not None:
        settings.append(f"keep recent {layout.keep_recent}")
    sep = ' <span style="color:#aab">·</span> '
    return (
        f'<div style="margin:0 0 6px 0">{sep.join(parts)}'
        f'<span style="color:{MUTED};margin-left:10px;font-size:11px">({", ".join(settings)})</span></div>'
    )


def _banner(layout: WindowLayout) -> str:
    if not layout.over_budget:
        return ""
    need = layout.used
    return (
        f'<div class="ctxlab-over-budget" style="background:{OVER};color:#fff;font-weight:700;'
        f'padding:5px 10px;border-radius:4px 4px 0 0;font-size:13px;letter-spacing:.2px">'
        f"OVER BUDGET by {_n(-layout.free)} tokens: the prompt and the reserved reply need "
        f"{_n(need)}, the window holds {_n(layout.window)}</div>"
    )


def _bar(layout: WindowLayout) -> str:
    scale = max(layout.window, layout.used)
    cells = []
    for segment in layout.segments:
        tokens = segment.tokens
        if tokens <= 0:
            continue
        share = 100 * tokens / scale
        colour = INK if segment.name in DARK_TEXT else "#fff"
        if share >= 11:
            label = f"{_e(segment.name)}<br><b>{_n(tokens)}</b>"
        elif share >= 4.5:  # too narrow for the whole name: its short name, then the number
            label = f"{_e(SHORT_NAMES[segment.name])}<br><b>{_n(tokens)}</b>"
        elif share >= 2.2:
            label = _e(SHORT_NAMES[segment.name])
        else:  # the legend under the bar names it
            label = ""
        border = "border:1px dashed #b9bec6;" if segment.name == "free" else ""
        cells.append(
            f'<div class="ctxlab-segment" data-segment="{_e(segment.name)}" data-tokens="{tokens}" '
            f'title="{_e(segment.name)}: {_n(tokens)} tokens" '
            f"style=\"flex-grow:0;flex-shrink:0;flex-basis:{share:.3f}%;min-width:0;box-sizing:border-box;{border}"
            f"background:{_segment_fill(segment.name)};color:{colour};font-size:11px;line-height:1.2;"
            f'padding:3px 0 3px {3 if share >= 1 else 0}px;overflow:hidden;white-space:nowrap">{label}</div>'
        )
    overlay = ""
    if layout.over_budget:
        # Past the edge the segments go on at their own widths (the bar is to scale); a light
        # hatch over them, not a cover, marks the tokens that do not fit.
        edge = 100 * layout.window / scale
        overlay = (
            f'<div class="ctxlab-overflow" title="past the window\'s edge: {_n(-layout.free)} tokens that do not fit" '
            f'style="position:absolute;left:{edge:.3f}%;right:0;top:0;bottom:0;pointer-events:none;'
            f'background:repeating-linear-gradient(45deg,rgba(214,39,40,.5) 0 3px,rgba(214,39,40,0) 3px 10px)"></div>'
            f'<div class="ctxlab-window-edge" style="position:absolute;left:calc({edge:.3f}% - 2px);top:-3px;'
            f'bottom:-3px;width:4px;background:#7a0c0d"></div>'
        )
    frame = f"3px solid {OVER}" if layout.over_budget else "1px solid #c5cad3"
    radius = "0 0 4px 4px" if layout.over_budget else "4px"
    bar = (
        f'<div class="ctxlab-bar" style="position:relative;display:flex;height:38px;border:{frame};'
        f'border-radius:{radius};background:#fff">{"".join(cells)}{overlay}</div>'
    )
    ticks = (
        f'<div style="position:relative;height:15px;font-size:10px;color:{MUTED}">'
        f'<span style="position:absolute;left:0">0</span>'
    )
    if layout.over_budget:
        edge = 100 * layout.window / scale
        past = 100 - edge
        over = f"+{_n(-layout.free)} tokens past the window" if past >= 22 else f"+{_n(-layout.free)}"
        ticks += (
            f'<span style="position:absolute;right:{100 - edge:.3f}%;color:{OVER};font-weight:700;'
            f'padding-right:4px;white-space:nowrap">window ends: {_n(layout.window)}</span>'
            f'<span class="ctxlab-overflow-label" style="position:absolute;left:{edge:.3f}%;color:{OVER};'
            f'font-weight:700;padding-left:6px;white-space:nowrap">{over}</span>'
            + (f'<span style="position:absolute;right:0">{_n(scale)}</span>' if past >= 14 else "")
        )
    else:
        ticks += f'<span style="position:absolute;right:0">{_n(layout.window)}</span>'
    ticks += "</div>"
    return bar + ticks


def _legend(layout: WindowLayout) -> str:
    items = []
    for segment in layout.segments:
        if segment.name == "free":
            text = f"free <b>{_n(max(segment.tokens, 0))}</b>"
            swatch = _swatch(SEGMENT_COLOURS["free"], style="border:1px dashed #9aa1ab;box-sizing:border-box")
        else:
            text = f"{_e(segment.name)} <b>{_n(segment.tokens)}</b>"
            swatch = _swatch(_segment_fill(segment.name))
        faded = "" if segment.tokens else f";color:{MUTED};opacity:.65"
        items.append(f'<span style="white-space:nowrap;margin-right:12px{faded}">{swatch}{text}</span>')
    if layout.allowance is not None:
        items.append(
            f'<span style="white-space:nowrap;color:{MUTED}">history allowance '
            f"<b>{_n(layout.allowance)}</b></span>"
        )
    return f'<div style="margin:2px 0 10px 0;font-size:12px;line-height:1.7">{"".join(items)}</div>'


def _block_title(block: Block) -> str:
    if block.index is None:
        head = f"{block.kind} · {block.role} · {_n(block.tokens)} tokens (added by the policy)"
    else:
        lap = f" · lap {block.step}" if block.step is not None else ""
        size = (
            f"{_n(block.original_tokens)} → {_n(block.tokens)} tokens"
            if block.compressed
            else f"{_n(block.original_tokens)} tokens"
        )
        head = f"#{block.index} · {block.role}{lap} · {size}"
        state = block.state
        marks = [m for m in block.marks if m != state]
        head += f" · {state}" + "".join(f", {m}" for m in marks)
        if block.pinned and block.dropped:
            head += " (a pin was dropped!)"
    return _e(f"{head}\n\n{block.preview}" if block.preview else head)


def _block(block: Block, row_tokens: int) -> str:
    colour = ROLE_COLOURS.get(block.kind if block.index is None else block.role, "#6c757d")
    size = block.original_tokens if block.dropped else block.tokens
    shadows = []
    style = ""
    if block.pinned:
        shadows.append("inset 0 5px 0 #1f2328")
    if block.summarised:
        shadows.append(f"inset 0 -5px 0 {SEGMENT_COLOURS['summary']}")
    if block.dropped:
        style += "opacity:.45;" if block.summarised else "opacity:.28;"
    if block.compressed:
        style += "outline:2px dashed #1f2328;outline-offset:-2px;"
    if block.pinned and block.dropped:
        style += f"outline:3px solid {OVER};outline-offset:-3px;opacity:.6;"
    if shadows:
        style += f"box-shadow:{','.join(shadows)};"
    label = ""
    if size / row_tokens >= 0.06 and not block.dropped:
        text_colour = INK if block.role in ("assistant", "tool") and block.index is not None else "#fff"
        label = (
            f'<span style="font-size:10px;color:{text_colour};padding:7px 0 0 3px;display:block;'
            f'overflow:hidden;white-space:nowrap">{_n(size)}</span>'
        )
    index = "" if block.index is None else f' data-index="{block.index}"'
    return (
        f'<div class="ctxlab-block" data-state="{block.state}" data-role="{_e(block.role)}"{index} '
        f'title="{_block_title(block)}" style="flex-grow:{max(size, 1)};flex-shrink:1;flex-basis:0;'
        f'min-width:{7 if block.pinned else 3}px;height:26px;background:{colour};border-radius:2px;{style}">'
        f"{label}</div>"
    )


def _strip(layout: WindowLayout) -> str:
    blocks = layout.blocks
    total = sum(b.original_tokens if b.dropped else b.tokens for b in blocks)
    row_tokens = layout.window
    if total > STRIP_ROWS * layout.window:
        row_tokens = max(1_000, math.ceil(total / STRIP_ROWS / 1_000) * 1_000)
    groups: list[list[Block]] = []
    for block in blocks:
        if groups and block.group is not None and groups[-1][0].group == block.group:
            groups[-1].append(block)
        else:
            groups.append([block])
    pills = []
    for group in groups:
        tokens = sum(b.original_tokens if b.dropped else b.tokens for b in group)
        share = min(100.0, 100 * tokens / row_tokens)
        lap = group[0].step
        title = f"turn group: {len(group)} message{'s' if len(group) > 1 else ''}"
        if lap is not None:
            title += f", lap {lap}"
        pills.append(
            f'<div class="ctxlab-group" title="{_e(title)}" style="display:flex;gap:1px;box-sizing:border-box;'
            f"flex-grow:0;flex-shrink:0;flex-basis:{share:.3f}%;min-width:{4 * len(group) + 6}px;"
            f'padding:2px;margin:0 3px 4px 0;background:#e3e7ed;border-radius:3px">'
            f'{"".join(_block(b, row_tokens) for b in group)}</div>'
        )
    own = [b for b in blocks if b.index is not None]
    dropped = [b for b in own if b.dropped]
    added = len(blocks) - len(own)
    where = f" at lap {layout.lap}" if layout.lap is not None else ""
    heading = f"<b>The prompt{where}, message by message</b>: {len(own)} messages"
    if dropped:
        heading += f", <b>{len(dropped)} dropped</b> ({_n(sum(b.original_tokens for b in dropped))} tokens)"
    else:
        heading += ", none dropped"
    if added:
        heading += f"; {added} added by the policy"
    scale = f"one row = {_n(row_tokens)} tokens" + (", the window" if row_tokens == layout.window else "")
    return (
        f'<div style="margin:0 0 1px 0;font-size:13px">{heading}</div>'
        f'<div style="margin:0 0 5px 0;color:{MUTED};font-size:11px">Block width is tokens ({scale}). '
        f"Grey pills are turn groups. Hover a block to read it.</div>"
        f'<div class="ctxlab-strip" style="display:flex;flex-wrap:wrap;align-items:flex-start">'
        f'{"".join(pills)}</div>'
    )


def _strip_legend(layout: WindowLayout) -> str:
    roles = ["system", "user", "assistant", "tool"]
    kinds = {b.kind for b in layout.blocks}
    roles += [k for k in ("summary", "scratchpad", "inserted") if k in kinds]
    items = [
        f'<span style="white-space:nowrap;margin-right:10px">{_swatch(ROLE_COLOURS[r])}{r}</span>'
        for r in roles
    ]
    sample = "display:inline-block;width:22px;height:13px;border-radius:2px;vertical-align:-2px;margin-right:4px;"
    marks = [
        (f"background:{ROLE_COLOURS['tool']};box-shadow:inset 0 4px 0 #1f2328", "pinned (never dropped)"),
        (f"background:{ROLE_COLOURS['tool']};opacity:.28", "dropped"),
        (
            f"background:{ROLE_COLOURS['tool']};opacity:.45;box-shadow:inset 0 -4px 0 {SEGMENT_COLOURS['summary']}",
            "summarised (dropped, kept in the summary)",
        ),
        (f"background:{ROLE_COLOURS['tool']};outline:2px dashed #1f2328;outline-offset:-2px", "compressed"),
    ]
    items += [
        f'<span style="white-space:nowrap;margin-right:10px"><span style="{sample}{css}"></span>{text}</span>'
        for css, text in marks
    ]
    return f'<div style="margin:4px 0 6px 0;font-size:11px;color:{INK};line-height:1.8">{"".join(items)}</div>'


def _problems(layout: WindowLayout) -> str:
    """What is wrong, in red, right under the header (over budget has its own banner)."""
    return "".join(
        f'<div class="ctxlab-problem" style="color:{OVER};font-weight:600;margin:0 0 6px 0">'
        f"Problem: {_e(problem)}</div>"
        for problem in layout.problems
        if not problem.startswith("over budget")
    )


def _notes(layout: WindowLayout) -> str:
    out = [f'<div class="ctxlab-note" style="color:{MUTED};margin:2px 0">Note: {_e(note)}</div>' for note in layout.notes]
    if layout.log:
        shown = layout.log[-12:]
        items = "".join(f"<li>{_e(line)}</li>" for line in shown)
        more = f" (last {len(shown)} of {len(layout.log)})" if len(layout.log) > len(shown) else ""
        out.append(
            f'<details style="margin:4px 0"><summary style="cursor:pointer">Decision log{more}</summary>'
            f'<ol style="margin:4px 0 0 18px;padding:0">{items}</ol></details>'
        )
    return "".join(out)


def render_layout_html(layout: WindowLayout) -> str:
    """The whole picture as one HTML fragment: header, layout bar, legend, history strip, notes.

    >>> import ctxlab
    >>> prompt = [{"role": "user", "content": "Find the bug."}] + [
    ...     {"role": "assistant", "content": "looking " * 200, "step": k} for k in (1, 2)]
    >>> view = ctxlab.course.layout.layout_window(prompt, ctxlab.ContextBudget(window=300, reserve_output=50))
    >>> html = render_layout_html(view)
    >>> "OVER BUDGET" in html, html.count('class="ctxlab-block"')
    (True, 3)
    """
    kept = layout.kept_messages
    attributes = (
        f'data-window="{layout.window}" data-lap="{"" if layout.lap is None else layout.lap}" '
        f'data-policy="{_e(layout.policy)}" data-over-budget="{str(layout.over_budget).lower()}" '
        f'data-kept="{kept}" data-dropped="{layout.dropped_messages}" '
        f'data-history="{layout.tokens("history")}"'
    )
    return (
        f'<div class="ctxlab-window" {attributes} style="{FONT};font-size:12px;color:{INK};'
        f'line-height:1.4;max-width:100%;padding:8px 10px;box-sizing:border-box;background:#fff;'
        f'border:1px solid #e1e4e8;border-radius:6px">'
        f"{_header(layout)}{_problems(layout)}{_banner(layout)}{_bar(layout)}{_legend(layout)}"
        f"{_strip(layout)}{_strip_legend(layout)}{_notes(layout)}</div>"
    )
