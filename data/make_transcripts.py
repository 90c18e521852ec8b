#!/usr/bin/env python3
"""Generate the agent transcripts that the Context Window Lab lessons replay.

    python data/make_transcripts.py           write every file in data/ (from any folder)
    python data/make_transcripts.py --check   exit 1 if a file on disk differs from what
                                              this script would write

Five transcripts are made, each a ``<name>.jsonl`` of Chat Completions messages (one per line,
with the course key ``step``) and a ``<name>.tools.json`` of the tool schemas the agent had.
``transcripts.json`` (the manifest, with probes) and ``README.md`` are written too.

How the content is made:

* The story of each run (the user's request, the agent's reasoning, the decisive results and
  the final answer) is written by hand in the ``build_*`` function of that transcript.
* The bulk around it (log lines, metric tables, search hits, page text, source files, test
  output) comes from templates filled in by ``random.Random(seed)``, one seed per transcript.

Only the standard library is used, nothing reads the clock or the network, and every JSON
object is written with a fixed key order, so every run writes the same bytes.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------------
# Shared helpers: message construction
# ---------------------------------------------------------------------------------------------

_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@dataclass
class Call:
    """One tool call the agent makes in a lap, and the result its tool returned."""

    name: str
    arguments: dict[str, Any]
    result: Any  # a str is sent as it is; anything else is JSON-encoded (see Transcript.indent)


@dataclass
class Transcript:
    """Builds one transcript message by message, following the course's ``step`` rules.

    ``step`` is the lap number: 0 for the system prompt and the first user message; lap k is
    one assistant message plus the tool results answering it; a user message that arrives
    before lap k's assistant message belongs to lap k.
    """

    name: str
    seed: int
    system_prompt: str
    tools: list[dict[str, Any]]
    indent: int | None = None  # how structured tool results are JSON-encoded
    messages: list[dict[str, Any]] = field(default_factory=list)
    lap: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._id_rng = random.Random(self.seed * 7919 + 17)  # call ids: a stream of their own
        self._used_ids: set[str] = set()
        self.messages.append({"role": "system", "content": self.system_prompt, "step": 0})

    # -- messages ---------------------------------------------------------------------------
    def user(self, text: str) -> None:
        """A user message: step 0 before the first lap, otherwise the lap it precedes."""
        step = 0 if self.lap == 0 else self.lap + 1
        self.messages.append({"role": "user", "content": text, "step": step})

    def turn(self, text: str | None, *calls: Call) -> None:
        """One lap: an assistant message (text, tool calls or both) and the tool results."""
        known = {tool["function"]["name"] for tool in self.tools}
        self.lap += 1
        message: dict[str, Any] = {"role": "assistant", "content": text}
        ids = []
        if calls:
            message["tool_calls"] = []
            for call in calls:
                if call.name not in known:
                    raise ValueError(f"{self.name}: lap {self.lap} calls unknown tool {call.name}")
                call_id = self._new_id()
                ids.append(call_id)
                message["tool_calls"].append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.arguments, ensure_ascii=False),
                        },
                    }
                )
        message["step"] = self.lap
        self.messages.append(message)
        for call_id, call in zip(ids, calls, strict=True):
            content = call.result
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False, indent=self.indent)
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": content, "step": self.lap}
            )

    def answer(self, text: str) -> None:
        """The final lap: a text answer with no tool calls."""
        self.turn(text)

    def _new_id(self) -> str:
        while True:
            call_id = "call_" + "".join(self._id_rng.choice(_ID_ALPHABET) for _ in range(24))
            if call_id not in self._used_ids:
                self._used_ids.add(call_id)
                return call_id


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    """An OpenAI tool schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_LINE_STARTS_ITEM = re.compile(r"^\s*(- |\* |\d+\. |\| |#)")


def prose(text: str) -> str:
    """Hand-written text, wrapped in the source for readability, unwrapped for the transcript.

    Paragraphs (blank-line separated) become single lines; list items, table rows and
    headings start new lines and absorb their indented continuation lines; anything between
    ``` fences is kept exactly as written.
    """
    out: list[str] = []
    fenced = False
    joinable = False  # whether the next plain line continues the previous output line
    for line in textwrap.dedent(text).strip().split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            out.append(line.strip())
            joinable = False
        elif fenced:
            out.append(line.rstrip())
        elif not line.strip():
            out.append("")
            joinable = False
        elif _LINE_STARTS_ITEM.match(line) or not joinable:
            out.append(line.strip() if not line.lstrip().startswith("|") else line.rstrip())
            joinable = not line.lstrip().startswith(("|", "#"))
        else:
            out[-1] += " " + line.strip()
    return "\n".join(out)


def block(text: str) -> str:
    """Verbatim text (source code, fixed-width output): dedented, exact line breaks."""
    return textwrap.dedent(text).strip("\n") + "\n"


def indented(text: str) -> str:
    """Verbatim code from inside a function body: dedented, then indented one level."""
    return textwrap.indent(block(text), "    ")


# ---------------------------------------------------------------------------------------------
# Shared helpers: realistic bulk
# ---------------------------------------------------------------------------------------------

UTC = timezone.utc


def at(base: datetime, seconds: float) -> datetime:
    return base + timedelta(seconds=seconds)


def iso_ms(moment: datetime) -> str:
    """2024-06-11T02:14:09.882Z"""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def py_log_time(moment: datetime) -> str:
    """Python logging's asctime: 2024-06-11 02:14:09,882"""
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"


def hex_id(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def uuid4(rng: random.Random) -> str:
    h = hex_id(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def thousands(n: int) -> str:
    return f"{n:,}"


class Timeline:
    """Log lines collected out of order and rendered in time order (stable for equal times)."""

    def __init__(self) -> None:
        self._events: list[tuple[datetime, int, str]] = []

    def add(self, moment: datetime, line: str) -> None:
        self._events.append((moment, len(self._events), line))

    def lines(self) -> list[str]:
        return [line for _, _, line in sorted(self._events)]

    def __len__(self) -> int:
        return len(self._events)


# =============================================================================================
# incident: why did the nightly export fail?
#
# Fourteen laps of log and metric searches. The one fact that matters is a single line in the
# lap-3 worker log: the export's database step gave up waiting for a lock held by a database
# maintenance job (SQLSTATE 55P03, pid 39150). Every other result is routine noise, and the
# final answer depends on that line.
# =============================================================================================

INCIDENT_NIGHT = datetime(2024, 6, 11, 0, 0, tzinfo=UTC)
EXPORT_JOB = "nightly_customer_export"
EXPORT_RUN = "nce-20240611-020000"
WORKER = "etl-worker-07"
DB_HOST = "pg-orders-primary"
MAINT_JOB = "vacuum_full_order_lines"
MAINT_PID = 39150
MAINT_CHANGE = "MNT-4471"
LOCK_TIMEOUT_AT = at(INCIDENT_NIGHT, 2 * 3600 + 14 * 60 + 9.882)  # 02:14:09.882

INCIDENT_FINDING = (
    f"{py_log_time(LOCK_TIMEOUT_AT)} ERROR [export.steps.extract_orders] run={EXPORT_RUN} "
    "attempt=1/1 sqlstate=55P03 canceling statement due to lock timeout after 600.1s waiting "
    f"for AccessShareLock on relation public.order_lines; lock held by pid {MAINT_PID} "
    f"(application_name=maintd:{MAINT_JOB}, query=\"VACUUM (FULL, ANALYZE) public.order_lines\", "
    "lock=AccessExclusiveLock, granted_at=02:03:51)"
)

INCIDENT_SYSTEM = prose(
    """
    You are the incident investigator for the data platform team. You have read-only access to
    the job orchestrator (Conductor), the central log store, Prometheus metrics, the change log
    and the database maintenance scheduler (maintd). You cannot change or re-run anything.

    For a failed export, work through runbook RB-EXPORT-03 in order and do not stop at the
    first error you see: failed exports often have more than one contributing cause, and the
    review board expects every runbook step to be covered.
    1. Run history and the failing step (Conductor).
    2. Health of the worker that ran it: CPU, memory, disk, network.
    3. Worker logs for the whole run window.
    4. Health of the source database.
    5. Downstream: the uploader and the export bucket.
    6. Upstream: the jobs the export depends on.
    7. Credentials: Vault leases for the export's database role.
    8. Host-level events on the worker (kernel, systemd).
    9. Connection pooling (pgbouncer) in front of the database.
    10. Recent changes to the export, the worker fleet and their configuration.
    11. Database maintenance that overlapped the run (maintd).

    Cite evidence exactly: UTC timestamps, host names, run ids, process ids, error codes.
    Your answer gives the root cause; the evidence, one line per item; contributing factors;
    what you ruled out; whether a re-run is safe now; and follow-up actions with owners.
    Keep it under 400 words.
    """
)

INCIDENT_TOOLS = [
    tool(
        "get_job_runs",
        "Return the most recent runs of a job scheduled in Conductor, newest first: run id, "
        "schedule time, start and finish, state, worker, and the outcome and duration of every "
        "step. Use it to see when a job last succeeded and which step failed.",
        {
            "job": {"type": "string", "description": "Job name, e.g. 'nightly_customer_export'."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                      "description": "How many runs to return (default 10)."},
        },
        ["job"],
    ),
    tool(
        "search_logs",
        "Search the central log store (every service ships its logs there; 30-day retention). "
        "Returns matching lines in time order, exactly as the service wrote them, at most "
        "`limit` lines (default 200, maximum 500), plus a count of all matches. `query` is "
        "Lucene syntax over the message text; leave it out to get every line in the window.",
        {
            "service": {"type": "string",
                        "description": "Service name: etl-worker, export-uploader, vault, "
                                       "journald, pgbouncer, postgres, conductor, ..."},
            "host": {"type": "string", "description": "Restrict to one host (optional)."},
            "start": {"type": "string", "format": "date-time", "description": "UTC, inclusive."},
            "end": {"type": "string", "format": "date-time", "description": "UTC, exclusive."},
            "query": {"type": "string", "description": "Lucene query over the message (optional)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500},
        },
        ["service", "start", "end"],
    ),
    tool(
        "query_metrics",
        "Fetch Prometheus time series for one host over a time range and render them as a "
        "table, one row per step, with the alert rules that fired in the range. Known metric "
        "sets: 'node' (CPU, memory, load, disk and network) and 'postgres' (connections, "
        "transactions, writes, WAL, replication lag, cache hit ratio).",
        {
            "host": {"type": "string"},
            "metric_set": {"type": "string", "enum": ["node", "postgres"]},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "step": {"type": "string", "description": "Resolution, e.g. '1m' or '5m'.",
                     "default": "5m"},
        },
        ["host", "metric_set", "start", "end"],
    ),
    tool(
        "get_change_log",
        "List entries from the change-management system for a scope since a date: deploys, "
        "configuration changes and schedule edits, with id, time, author and summary. Scopes "
        "include a job name, a host group such as 'etl-workers', or a service.",
        {
            "scope": {"type": "string"},
            "since": {"type": "string", "format": "date", "description": "UTC date, inclusive."},
        },
        ["scope", "since"],
    ),
    tool(
        "list_maintenance_jobs",
        "List the database maintenance jobs maintd ran on a database host in a time window: "
        "job name, SQL statement, backend pid, lock mode taken, schedule, start and finish, "
        "and the change record that last modified the job.",
        {
            "host": {"type": "string"},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
        },
        ["host", "start", "end"],
    ),
    tool(
        "get_change_record",
        "Fetch one change record by id (CHG-... or MNT-...): description, reason, risk "
        "assessment, systems affected, approver and timeline.",
        {"id": {"type": "string"}},
        ["id"],
    ),
]


def _export_run_history(rng: random.Random) -> tuple[dict, list[int]]:
    """Conductor's view of the last ten nightly runs: nine ordinary ones, then last night's."""
    steps = [("prepare_staging", 75, 95), ("extract_customers", 160, 185),
             ("extract_orders", 1020, 1260), ("transform", 310, 380),
             ("write_parquet", 240, 300), ("upload", 80, 130), ("notify", 1, 3)]
    runs, durations = [], []
    for days_back in range(9, 0, -1):
        day = INCIDENT_NIGHT - timedelta(days=days_back)
        start = at(day, 2 * 3600 + rng.uniform(0.4, 2.5))
        clock, step_rows = start, []
        for name, low, high in steps:
            seconds = round(rng.uniform(low, high), 1)
            step_rows.append({"name": name, "state": "success", "duration_s": seconds})
            clock = at(clock, seconds + rng.uniform(0.2, 1.5))
        durations.append(round((clock - start).total_seconds()))
        runs.append({
            "run_id": f"nce-{day:%Y%m%d}-020000",
            "scheduled_for": f"{day:%Y-%m-%d}T02:00:00Z",
            "started_at": iso_ms(start),
            "finished_at": iso_ms(clock),
            "state": "success",
            "duration_s": durations[-1],
            "worker": rng.choice(["etl-worker-03", "etl-worker-05", "etl-worker-07",
                                  "etl-worker-07", "etl-worker-11"]),
            "rows_exported": rng.randint(2_310_000, 2_690_000),
            "steps": step_rows,
        })
    failed_start = at(INCIDENT_NIGHT, 2 * 3600 + 0.912)
    failed_steps = [
        {"name": "prepare_staging", "state": "success", "duration_s": 81.4},
        {"name": "extract_customers", "state": "success", "duration_s": 166.0},
        {"name": "extract_orders", "state": "failed", "duration_s": 600.1, "exit_code": 1,
         "message": "Task exited with return code 1"},
    ] + [{"name": name, "state": "upstream_failed", "duration_s": 0.0}
         for name in ("transform", "write_parquet", "upload", "notify")]
    runs.append({
        "run_id": EXPORT_RUN,
        "scheduled_for": "2024-06-11T02:00:00Z",
        "started_at": iso_ms(failed_start),
        "finished_at": "2024-06-11T02:14:11.408Z",
        "state": "failed",
        "duration_s": 610,
        "worker": WORKER,
        "rows_exported": 0,
        "steps": failed_steps,
    })
    runs.reverse()
    result = {
        "job": EXPORT_JOB,
        "schedule": "0 2 * * *",
        "owner": "data-platform",
        "retries": {"default": 2, "extract_orders": 0,
                    "note": "COPY steps are not idempotent"},
        "runs": runs,
    }
    return result, durations


def _node_metrics(rng: random.Random, host: str) -> str:
    start = at(INCIDENT_NIGHT, 3600 + 30 * 60)
    lines = [
        f'query_range host="{host}" metric_set=node 2024-06-11T01:30:00Z .. '
        "2024-06-11T03:00:00Z step=5m",
        "time                  cpu_util_pct  mem_used_gib  mem_avail_gib  load1  "
        "disk_read_mbps  disk_write_mbps  net_rx_mbps  net_tx_mbps",
    ]
    for i in range(19):
        moment = at(start, i * 300)
        busy = 1.0 + (0.6 if 2 * 3600 <= (moment - INCIDENT_NIGHT).seconds < 2 * 3600 + 900 else 0)
        cpu = rng.uniform(18, 31) * busy
        mem = rng.uniform(11.2, 14.8) + (1.1 if busy > 1 else 0)
        lines.append(
            f"{moment:%Y-%m-%dT%H:%M:%SZ}  {cpu:12.1f}  {mem:12.2f}  {31.3 - mem:13.2f}  "
            f"{rng.uniform(1.4, 3.9) * busy:5.2f}  {rng.uniform(2, 40):14.1f}  "
            f"{rng.uniform(6, 55):15.1f}  {rng.uniform(8, 60):11.1f}  {rng.uniform(3, 38):11.1f}"
        )
    lines += [
        "",
        "alert rules evaluated: node_cpu_high (>85% for 10m), node_mem_pressure (avail <2 GiB), "
        "node_disk_full (>90%), node_net_errors (>0.1%/s), node_clock_skew (>50ms)",
        "alerts firing in range: none",
        "filesystem /var/lib/conductor: 41.7% used at 03:00; /tmp: 12.2% used",
    ]
    return "\n".join(lines)


def _worker_log_lines(rng: random.Random, start_s: int, end_s: int, with_export: bool) -> str:
    """etl-worker-07's log between two offsets (seconds after midnight)."""
    timeline = Timeline()
    window_start, window_end = at(INCIDENT_NIGHT, start_s), at(INCIDENT_NIGHT, end_s)

    def add(seconds: float, level: str, logger: str, text: str) -> None:
        moment = at(INCIDENT_NIGHT, seconds)
        if window_start <= moment < window_end:
            timeline.add(moment, f"{py_log_time(moment)} {level:<5} [{logger}] {text}")

    # heartbeats, every two and a half minutes
    for t in range(start_s + rng.randint(3, 40), end_s, 150):
        add(t + rng.random(), "INFO", "conductor.worker",
            f"heartbeat worker={WORKER} slots_busy={rng.randint(2, 4)}/8 "
            f"rss_mb={rng.randint(1650, 2480)} load1={rng.uniform(1.2, 3.8):.2f} queue_depth=0")
    # hourly sessions rollup at 02:00
    t = 2 * 3600 + 2.3
    add(t, "INFO", "conductor.runner",
        "run=hsr-20240611-020000 job=hourly_sessions_rollup state=RUNNING attempt=1 "
        f"worker={WORKER} trigger=schedule")
    for shard in range(4):
        t += rng.uniform(14, 32)
        rows_in = rng.randint(120_000, 190_000)
        add(t, "INFO", "jobs.sessions_rollup",
            f"run=hsr-20240611-020000 partition=hour=01/shard={shard:02d} "
            f"rows_in={thousands(rows_in)} rows_out={thousands(rows_in // rng.randint(38, 52))} "
            f"dur={rng.uniform(11, 29):.1f}s")
    add(t + 3.1, "INFO", "conductor.runner",
        f"run=hsr-20240611-020000 state=SUCCESS duration={t + 3.1 - 2 * 3600:.1f}s")
    # CRM contact sync every 30 minutes, in batches
    for run_start in range(2 * 3600, 3 * 3600, 1800):
        run_id = f"crm-20240611-{run_start // 3600:02d}{run_start % 3600 // 60:02d}00"
        t = run_start + rng.uniform(1, 4)
        add(t, "INFO", "conductor.runner",
            f"run={run_id} job=crm_contacts_sync state=RUNNING attempt=1 worker={WORKER}")
        batches = rng.randint(5, 7)
        for batch in range(1, batches + 1):
            t += rng.uniform(6, 19)
            if rng.random() < 0.12:
                add(t, "WARN", "jobs.crm_sync",
                    f"run={run_id} CRM API answered 429 Too Many Requests; backing off "
                    f"{rng.choice([2, 4, 8])}s (retry 1/5)")
                t += 4
            add(t, "INFO", "jobs.crm_sync",
                f"run={run_id} batch {batch}/{batches} upserted={rng.randint(380, 500)} "
                f"skipped={rng.randint(0, 6)} api_latency_ms={rng.randint(180, 940)}")
        add(t + 1.2, "INFO", "conductor.runner",
            f"run={run_id} state=SUCCESS duration={t + 1.2 - run_start:.1f}s")
    # a long feature-store backfill that runs all night, one day of features every 5 minutes
    groups = ("orders_agg", "sessions_agg", "support_agg")
    t = start_s + rng.uniform(5, 50)
    while t < end_s:
        day = datetime(2024, 4, 1) + timedelta(days=int((t + 2 * 3600) // 300))
        group = groups[int(t // 100) % 3]
        written = rng.uniform(6.0, 15.5)
        if written > 14.6:
            add(t - 0.4, "WARN", "jobs.feature_backfill",
                f"run=fsb-20240610-220000 slow write to feature store: {written:.1f}s > 14.0s "
                "threshold (partition will be retried only on failure)")
        add(t, "INFO", "jobs.feature_backfill",
            f"run=fsb-20240610-220000 day={day:%Y-%m-%d} group={group} entity=customer "
            f"rows={thousands(rng.randint(90_000, 150_000))} written in {written:.1f}s")
        t += rng.uniform(120, 170)
    if with_export:
        base = 2 * 3600
        add(base + 0.912, "INFO", "conductor.runner",
            f"run={EXPORT_RUN} job={EXPORT_JOB} state=RUNNING attempt=1 worker={WORKER} "
            "trigger=schedule")
        add(base + 1.044, "INFO", "export.config",
            f"run={EXPORT_RUN} target=s3://dp-exports-prod/customer_export/dt=2024-06-10/ "
            "format=parquet compression=zstd partitions=16 "
            "source=pgbouncer-orders.prod.internal:6432/orders role=export_ro "
            "statement_timeout=3600s lock_timeout=600s")
        add(base + 1.301, "INFO", "export.steps.prepare_staging",
            f"run={EXPORT_RUN} creating staging schema stg_nce_20240611 on warehouse-1")
        add(base + 82.7, "INFO", "export.steps.prepare_staging",
            f"run={EXPORT_RUN} truncated 4 staging tables (customers, orders, order_lines, "
            "refunds) and granted loader role in 81.4s")
        add(base + 83.1, "INFO", "export.steps.extract_customers",
            f"run={EXPORT_RUN} starting COPY of public.customers changed since 2024-06-10")
        add(base + 249.4, "INFO", "export.steps.extract_customers",
            f"run={EXPORT_RUN} copied {thousands(1_204_551)} rows (388.2 MiB) in 166.0s")
        add(base + 249.771, "INFO", "export.steps.extract_orders",
            f"run={EXPORT_RUN} starting COPY: SELECT o.*, l.* FROM public.orders o JOIN "
            "public.order_lines l USING (order_id) WHERE o.updated_at >= '2024-06-10' AND "
            "o.updated_at < '2024-06-11'")
        for minute in range(1, 10):
            add(base + 249.771 + minute * 60 + rng.uniform(0.01, 0.2), "INFO", "export.progress",
                f"run={EXPORT_RUN} step=extract_orders rows=0 bytes=0 elapsed={minute * 60}s")
        timeline.add(LOCK_TIMEOUT_AT, INCIDENT_FINDING)
        add(base + 849.903, "INFO", "export.steps.extract_orders",
            f"run={EXPORT_RUN} step failed after 600.1s; no retry (retries=0 for COPY steps)")
        add(base + 850.12, "INFO", "export.cleanup",
            f"run={EXPORT_RUN} dropping staging schema stg_nce_20240611")
        add(base + 851.408, "INFO", "conductor.runner",
            f"run={EXPORT_RUN} state=FAILED failed_step=extract_orders exit_code=1 "
            "duration=610.5s")
        add(base + 851.63, "INFO", "conductor.notify",
            f"run={EXPORT_RUN} posted failure to #data-alerts and paged nobody "
            "(severity=low: job has no SLA pager)")
    shown = timeline.lines()
    header = (
        f"search_logs service=etl-worker host={WORKER} {iso_ms(window_start)[:19]}Z .. "
        f"{iso_ms(window_end)[:19]}Z\nmatched {len(shown)} lines; showing {len(shown)}\n"
    )
    return header + "\n".join(shown)


def _postgres_metrics(rng: random.Random) -> str:
    start = at(INCIDENT_NIGHT, 3600 + 30 * 60)
    lines = [
        f'query_range host="{DB_HOST}" metric_set=postgres 2024-06-11T01:30:00Z .. '
        "2024-06-11T03:00:00Z step=5m",
        "time                  cpu_pct  conns_active  conns_idle  xact_per_s  "
        "disk_write_mbps  wal_mbps  repl_lag_s  cache_hit_pct",
    ]
    for i in range(19):
        moment = at(start, i * 300)
        offset = (moment - INCIDENT_NIGHT).seconds
        rewriting = 2 * 3600 + 300 <= offset <= 2 * 3600 + 50 * 60
        lines.append(
            f"{moment:%Y-%m-%dT%H:%M:%SZ}  {rng.uniform(22, 38) + (9 if rewriting else 0):7.1f}  "
            f"{rng.randint(31, 58):12d}  {rng.randint(140, 190):10d}  {rng.randint(380, 520):10d}  "
            f"{rng.uniform(40, 75) + (165 if rewriting else 0):15.1f}  "
            f"{rng.uniform(8, 16) + (58 if rewriting else 0):8.1f}  "
            f"{rng.uniform(0.0, 0.6) + (0.9 if rewriting else 0):10.2f}  "
            f"{rng.uniform(99.1, 99.8):13.2f}"
        )
    lines += [
        "",
        "alert rules evaluated: pg_cpu_high (>80% for 10m), pg_conns_near_max (>90% of 400), "
        "pg_repl_lag (>30s), pg_cache_hit_low (<95%), pg_deadlocks (>0), pg_xid_wraparound",
        "alerts firing in range: none",
        "postgres 15.6, max_connections=400, shared_buffers=32GB; replica pg-orders-replica-1 streaming",
    ]
    return "\n".join(lines)


def _uploader_logs(rng: random.Random) -> str:
    jobs = [("sessions_rollup", "hour=01", 4), ("crm_contacts", "snapshot", 2),
            ("feature_snapshots", "entity=customer", 3), ("billing_events", "hour=01", 3),
            ("marketing_attribution", "day=2024-06-10", 3), ("sessions_rollup", "hour=02", 3),
            ("search_clicks", "hour=02", 2)]
    timeline = Timeline()
    t = 2 * 3600 + 380.0
    for dataset, partition, parts in jobs:
        for part in range(parts):
            t += rng.uniform(8, 70)
            moment = at(INCIDENT_NIGHT, t)
            size = rng.uniform(4, 96)
            timeline.add(moment,
                         f"{iso_ms(moment)} INFO  uploader[{rng.randint(3100, 3140)}] put "
                         f"s3://dp-exports-prod/{dataset}/dt=2024-06-11/{partition}/"
                         f"part-{part:05d}.parquet size={size:.1f}MiB dur={size / rng.uniform(35, 80):.2f}s "
                         f'etag="{hex_id(rng, 32)}" req={hex_id(rng, 16).upper()}')
        moment = at(INCIDENT_NIGHT, t + 0.8)
        timeline.add(moment,
                     f"{iso_ms(moment)} INFO  uploader[{rng.randint(3100, 3140)}] manifest "
                     f"s3://dp-exports-prod/{dataset}/dt=2024-06-11/{partition}/_SUCCESS "
                     f"parts={parts} checksum=sha256:{hex_id(rng, 16)}...")
    shown = timeline.lines()
    return (
        "search_logs service=export-uploader 2024-06-11T02:00:00Z .. 2024-06-11T03:30:00Z\n"
        f"matched {len(shown)} lines; showing {len(shown)}\n" + "\n".join(shown) +
        "\n\n0 of the matched lines are at level WARN or above. No line mentions "
        f"{EXPORT_JOB} or customer_export in this window."
    )


def _upstream_runs(rng: random.Random) -> dict:
    runs = []
    for days_back in range(0, 7):
        day = INCIDENT_NIGHT - timedelta(days=days_back)
        start = at(day, 3600 + rng.uniform(0.3, 2.0))
        duration = rng.uniform(1880, 2460) if days_back else 2449.6
        runs.append({
            "run_id": f"occ-{day:%Y%m%d}-010000",
            "started_at": iso_ms(start),
            "finished_at": iso_ms(at(start, duration)),
            "state": "success",
            "duration_s": round(duration, 1),
            "worker": rng.choice(["etl-worker-02", "etl-worker-04", "etl-worker-09"]),
            "steps": [
                {"name": "read_cdc_segments", "state": "success",
                 "segments": rng.randint(410, 470)},
                {"name": "merge_orders", "state": "success",
                 "rows_merged": rng.randint(2_300_000, 2_700_000)},
                {"name": "merge_order_lines", "state": "success",
                 "rows_merged": rng.randint(6_100_000, 7_200_000)},
                {"name": "publish_watermark", "state": "success",
                 "watermark": f"{day:%Y-%m-%d}T00:00:00Z"},
            ],
        })
    return {
        "job": "orders_cdc_compaction",
        "schedule": "0 1 * * *",
        "owner": "data-platform",
        "downstream": [EXPORT_JOB, "finance_ledger_daily", "orders_search_index"],
        "runs": runs,
    }


def _vault_audit(rng: random.Random) -> str:
    paths = [
        ("update", "auth/approle/login", "approle-etl-runner", 200),
        ("update", "auth/token/renew-self", "approle-etl-runner", 200),
        ("read", "database/creds/orders-export-ro", "approle-etl-runner", 200),
        ("update", "sys/leases/renew", "approle-etl-runner", 200),
        ("read", "kv/data/etl/s3-export-writer", "approle-etl-runner", 200),
        ("read", "database/creds/warehouse-loader", "approle-etl-runner", 200),
        ("update", "auth/token/renew-self", "approle-crm-sync", 200),
        ("read", "kv/data/crm/api-token", "approle-crm-sync", 200),
    ]
    timeline = Timeline()
    for _ in range(30):
        moment = at(INCIDENT_NIGHT, rng.uniform(5400, 9000))
        op, path, role, status = rng.choice(paths)
        lease = ""
        if path.startswith(("database/creds", "sys/leases")):
            role_name = path.split("/")[-1] if path.startswith("database") else "orders-export-ro"
            lease = f" lease_id=database/creds/{role_name}/{hex_id(rng, 8)} ttl=8h renewable=true"
        timeline.add(moment,
                     f"{iso_ms(moment)} vault-{rng.randint(1, 3)} audit type=response op={op} "
                     f"path={path} display_name={role} remote=10.20.{rng.randint(4, 9)}."
                     f"{rng.randint(10, 250)} status={status}{lease} "
                     f"req_id={uuid4(rng)}")
    shown = timeline.lines()
    return (
        "search_logs service=vault 2024-06-11T01:30:00Z .. 2024-06-11T02:30:00Z "
        'query="approle-etl-runner OR approle-crm-sync"\n'
        f"matched {len(shown)} lines; showing {len(shown)}\n" + "\n".join(shown) +
        "\n\nstatus summary: 200 x" + str(len(shown)) + "; no 403 permission denied, no lease "
        "revocations, no secret-engine rotations (database/rotate-root) in the window."
    )


def _journal(rng: random.Random) -> str:
    """etl-worker-07's systemd journal: cron, ssh sessions, logrotate, worker slots."""
    timeline = Timeline()

    def add(seconds: float, text: str) -> None:
        moment = at(INCIDENT_NIGHT, seconds)
        timeline.add(moment, f"{moment:%b %d %H:%M:%S} {WORKER} {text}")

    begin, finish = 3600 + 40 * 60, 3 * 3600
    for t in range(begin, finish, 600):  # the node-exporter textfile collector, every 10 min
        add(t + 1, f"CRON[{rng.randint(40000, 48000)}]: (root) CMD "
                   "(/usr/local/bin/node-exporter-textfile --collect apt,ntp)")
    session = 8806
    t = begin + rng.uniform(60, 300)
    while t < finish - 600:  # short ssh sessions of the deploy user
        session += 1
        add(t, f"systemd-logind[811]: New session {session} of user deploy.")
        add(t + 0.2, f"systemd[1]: Started session-{session}.scope - Session {session} of User deploy.")
        t += rng.uniform(20, 90)
        add(t, f"systemd-logind[811]: Session {session} logged out. Waiting for processes to exit.")
        add(t + 0.1, f"systemd[1]: session-{session}.scope: Deactivated successfully.")
        add(t + 0.2, f"systemd-logind[811]: Removed session {session}.")
        t += rng.uniform(600, 1500)
    add(2 * 3600 + 0.4, "systemd[1]: Starting logrotate.service - Rotate log files...")
    add(2 * 3600 + 1.9, "systemd[1]: logrotate.service: Deactivated successfully.")
    add(2 * 3600 + 1.9, "systemd[1]: Finished logrotate.service - Rotate log files.")
    for t in (begin + 412, 2 * 3600 + 1517, 2 * 3600 + 3302):
        add(t, "chronyd[702]: Selected source 10.20.0.11 (ntp-2.prod.internal)")
    slots = [(1, 2 * 3600 + 0.9, 2 * 3600 + 851.4, 1), (3, 2 * 3600 + 2.3, 2 * 3600 + 300.4, 0),
             (4, 2 * 3600 + 3.5, 2 * 3600 + 112.3, 0), (4, 2 * 3600 + 1801.2, 2 * 3600 + 1867.9, 0)]
    for slot, acquired, released, code in slots:
        add(acquired, f"conductor-worker[2231]: slot {slot} acquired for task")
        add(released, f"conductor-worker[2231]: slot {slot} released after task exit "
                      f"(exit_code={code})")
    shown = timeline.lines()
    return (
        f"search_logs service=journald host={WORKER} 2024-06-11T01:40:00Z .. 2024-06-11T03:00:00Z\n"
        f"matched {len(shown)} lines; showing {len(shown)}\n" + "\n".join(shown) +
        "\n\nquery \"oom-killer OR Out of memory OR segfault OR I/O error OR nvme OR "
        "hung_task\": 0 matches in the last 7 days on this host. Last boot: 2024-05-28 06:12:40."
    )


def _pgbouncer_logs(rng: random.Random) -> str:
    timeline = Timeline()
    for minute in range(0, 20):
        moment = at(INCIDENT_NIGHT, 2 * 3600 + minute * 60 + 0.118)
        xacts = rng.randint(360, 470)
        timeline.add(moment,
                     f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} UTC [1187] "
                     f"LOG stats: {xacts} xacts/s, {xacts * rng.randint(3, 4)} queries/s, "
                     f"0 client parses/s, 0 server parses/s, 0 binds/s, in "
                     f"{rng.randint(1_500_000, 2_400_000)} B/s, out "
                     f"{rng.randint(14_000_000, 22_000_000)} B/s, xact {rng.randint(2600, 3600)} us, "
                     f"query {rng.randint(600, 900)} us, wait {rng.randint(4, 40)} us")
    users = [("export_ro", "10.20.7.31"), ("crm_sync", "10.20.7.31"), ("api_rw", "10.20.3.14"),
             ("api_rw", "10.20.3.15"), ("reporting_ro", "10.20.9.40")]
    for _ in range(8):
        moment = at(INCIDENT_NIGHT, 2 * 3600 + rng.uniform(0, 1200))
        user, ip = rng.choice(users)
        timeline.add(moment,
                     f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} UTC [1187] "
                     f"LOG C-0x55d1{hex_id(rng, 8)}: orders/{user}@{ip}:{rng.randint(40000, 61000)} "
                     "login attempt: db=orders user=" + user + " tls=TLSv1.3/TLS_AES_256_GCM_SHA384")
    shown = timeline.lines()
    return (
        "search_logs service=pgbouncer host=pgbouncer-orders-1 2024-06-11T02:00:00Z .. "
        "2024-06-11T02:20:00Z\n"
        f"matched {len(shown)} lines; showing {len(shown)}\n" + "\n".join(shown) +
        "\n\npool orders/export_ro: max 20, peak in use 3; pool orders/api_rw: max 120, peak 61. "
        "No 'no more connections allowed', 'query_wait_timeout' or 'server conn crashed' lines."
    )


def _change_log() -> dict:
    return {
        "scopes": [EXPORT_JOB, "etl-workers"],
        "since": "2024-06-04",
        "changes": [
            {"id": "CHG-20931", "at": "2024-06-04T10:02:11Z", "author": "r.okafor",
             "kind": "config", "scope": "etl-workers",
             "summary": "raise conductor worker slots from 6 to 8 on etl-worker-0[1-12]"},
            {"id": "CHG-20948", "at": "2024-06-05T14:10:37Z", "author": "deploy-bot",
             "kind": "deploy", "scope": "etl-workers",
             "summary": "etl-runner 3.18.1 -> 3.18.2 (fix: log rotation reopened files twice)"},
            {"id": "CHG-20960", "at": "2024-06-06T09:44:02Z", "author": "m.lindgren",
             "kind": "config", "scope": "crm_contacts_sync",
             "summary": "crm_contacts_sync batch size 400 -> 500"},
            {"id": "CHG-20977", "at": "2024-06-07T16:31:50Z", "author": "deploy-bot",
             "kind": "deploy", "scope": "etl-workers",
             "summary": "node-exporter 1.7.0 -> 1.8.1 on all ETL workers"},
            {"id": "CHG-20991", "at": "2024-06-08T11:05:19Z", "author": "a.haddad",
             "kind": "config", "scope": "feature_store_backfill",
             "summary": "backfill window 2024-04-01..2024-06-10, nightly 22:00 start"},
            {"id": "CHG-21003", "at": "2024-06-10T08:12:44Z", "author": "r.okafor",
             "kind": "secret", "scope": "etl-workers",
             "summary": "rotate S3 writer key for dp-exports-prod (old key valid until 2024-06-17)"},
        ],
        "note": f"No change in this period targets {EXPORT_JOB} itself; its last change is "
                "CHG-20417 on 2024-05-14 (added the refunds table to the extract).",
    }


def _maintenance_jobs() -> dict:
    return {
        "host": DB_HOST,
        "window": ["2024-06-11T01:30:00Z", "2024-06-11T03:30:00Z"],
        "jobs": [
            {"job": "analyze_hot_tables", "schedule": "30 1 * * *", "pid": 38722,
             "statement": "ANALYZE public.orders, public.carts, public.sessions",
             "lock": "ShareUpdateExclusiveLock", "started_at": "2024-06-11T01:30:00.412Z",
             "finished_at": "2024-06-11T01:33:48.019Z", "state": "done",
             "last_changed_by": "MNT-3902"},
            {"job": "reindex_concurrently_carts", "schedule": "45 1 * * *", "pid": 38860,
             "statement": "REINDEX INDEX CONCURRENTLY public.carts_updated_at_idx",
             "lock": "ShareUpdateExclusiveLock", "started_at": "2024-06-11T01:45:00.208Z",
             "finished_at": "2024-06-11T01:58:31.744Z", "state": "done",
             "last_changed_by": "MNT-4120"},
            {"job": MAINT_JOB, "schedule": "0 2 * * *", "pid": MAINT_PID,
             "statement": "VACUUM (FULL, ANALYZE) public.order_lines",
             "lock": "AccessExclusiveLock", "started_at": "2024-06-11T02:00:00.137Z",
             "lock_granted_at": "2024-06-11T02:03:51.006Z",
             "finished_at": "2024-06-11T02:52:37.551Z", "state": "done",
             "table_size_before": "212 GB", "table_size_after": "141 GB",
             "last_changed_by": MAINT_CHANGE},
            {"job": "pg_stat_statements_reset", "schedule": "0 3 * * *", "pid": 40511,
             "statement": "SELECT pg_stat_statements_reset()", "lock": None,
             "started_at": "2024-06-11T03:00:00.094Z",
             "finished_at": "2024-06-11T03:00:00.131Z", "state": "done",
             "last_changed_by": "MNT-2210"},
            {"job": "base_backup_snapshot", "schedule": "15 3 * * *", "pid": 40597,
             "statement": "pg_backup_start('nightly-20240611', fast => false)", "lock": None,
             "started_at": "2024-06-11T03:15:00.322Z", "finished_at": None, "state": "running",
             "last_changed_by": "MNT-3377"},
        ],
        "next_scheduled_on_order_lines": f"{MAINT_JOB} at 2024-06-12T02:00:00Z",
    }


def _maintenance_change_record() -> dict:
    return {
        "id": MAINT_CHANGE,
        "title": f"Run {MAINT_JOB} nightly instead of weekly",
        "status": "implemented",
        "requested_by": "dba-team (k.brandt)",
        "approved_by": "s.ivanova (DB platform lead)",
        "created_at": "2024-06-07T13:02:55Z",
        "implemented_at": "2024-06-10T16:20:08Z",
        "systems": [DB_HOST, "maintd"],
        "change": {"schedule_before": "0 4 * * 0 (Sundays 04:00 UTC)",
                   "schedule_after": "0 2 * * * (daily 02:00 UTC)"},
        "reason": "public.order_lines bloated from 138 GB to 212 GB after the order-line "
                  "backfill of 2024-06-03; autovacuum cannot return the space, and the weekly "
                  "run let it grow again for six days. A nightly run keeps the table near "
                  "its packed size.",
        "risk_assessment": "Low. VACUUM FULL takes an ACCESS EXCLUSIVE lock on order_lines for "
                           "the length of the rewrite (about 45 minutes). Customer traffic at "
                           "02:00 UTC is under 3% of peak and the API retries on lock waits. No "
                           "batch consumers identified.",
        "rollback": "Restore the previous cron expression in maintd (no data change).",
        "comments": [
            {"at": "2024-06-07T15:40:12Z", "by": "s.ivanova",
             "text": "Approved. Please move to pg_repack once the extension is packaged."},
        ],
    }


def build_incident() -> Transcript:
    t = Transcript("incident", seed=2024_0611, system_prompt=INCIDENT_SYSTEM,
                   tools=INCIDENT_TOOLS)
    rng = t.rng
    t.user(prose(
        f"""
        The nightly customer export ({EXPORT_JOB}) failed last night and the finance team's
        06:00 reconciliation is waiting on it. Why did it fail? I need the root cause with
        evidence, and to know whether it is safe to re-run it now.
        """
    ))
    history, durations = _export_run_history(rng)
    t.turn(None, Call("get_job_runs", {"job": EXPORT_JOB, "limit": 10}, history))
    t.turn(None, Call("query_metrics", {"host": WORKER, "metric_set": "node",
                                        "start": "2024-06-11T01:30:00Z",
                                        "end": "2024-06-11T03:00:00Z", "step": "5m"},
                      _node_metrics(rng, WORKER)))
    # lap 3: the one line that matters is in here, among routine worker output
    t.turn(None, Call("search_logs", {"service": "etl-worker", "host": WORKER,
                                      "start": "2024-06-11T02:00:00Z",
                                      "end": "2024-06-11T02:20:00Z", "limit": 200},
                      _worker_log_lines(rng, 2 * 3600, 2 * 3600 + 1200, with_export=True)))
    t.turn(None, Call("search_logs", {"service": "etl-worker", "host": WORKER,
                                      "start": "2024-06-11T02:20:00Z",
                                      "end": "2024-06-11T02:45:00Z", "limit": 200},
                      _worker_log_lines(rng, 2 * 3600 + 1200, 2 * 3600 + 2700, with_export=False)))
    t.turn(None, Call("query_metrics", {"host": DB_HOST, "metric_set": "postgres",
                                        "start": "2024-06-11T01:30:00Z",
                                        "end": "2024-06-11T03:00:00Z", "step": "5m"},
                      _postgres_metrics(rng)))
    t.turn(None, Call("search_logs", {"service": "export-uploader",
                                      "start": "2024-06-11T02:00:00Z",
                                      "end": "2024-06-11T03:30:00Z"},
                      _uploader_logs(rng)))
    t.turn(None, Call("get_job_runs", {"job": "orders_cdc_compaction", "limit": 7},
                      _upstream_runs(rng)))
    t.turn(None, Call("search_logs", {"service": "vault", "start": "2024-06-11T01:30:00Z",
                                      "end": "2024-06-11T02:30:00Z",
                                      "query": "approle-etl-runner OR approle-crm-sync"},
                      _vault_audit(rng)))
    t.turn(None, Call("search_logs", {"service": "journald", "host": WORKER,
                                      "start": "2024-06-11T01:40:00Z",
                                      "end": "2024-06-11T03:00:00Z"},
                      _journal(rng)))
    t.turn(None, Call("search_logs", {"service": "pgbouncer", "host": "pgbouncer-orders-1",
                                      "start": "2024-06-11T02:00:00Z",
                                      "end": "2024-06-11T02:20:00Z"},
                      _pgbouncer_logs(rng)))
    t.turn(None, Call("get_change_log", {"scope": f"{EXPORT_JOB},etl-workers",
                                         "since": "2024-06-04"},
                      _change_log()))
    t.turn(
        prose(
            f"""
            Runbook steps 1 to 10 are clean apart from one line. The only error in the run is
            the 55P03 lock timeout at 02:14:09.882 in the worker log: extract_orders waited
            600 s for a lock on public.order_lines held by pid {MAINT_PID}
            (maintd:{MAINT_JOB}). Step 11: what maintd ran on {DB_HOST} around the run.
            """
        ),
        Call("list_maintenance_jobs", {"host": DB_HOST, "start": "2024-06-11T01:30:00Z",
                                       "end": "2024-06-11T03:30:00Z"},
             _maintenance_jobs()),
    )
    t.turn(None, Call("get_change_record", {"id": MAINT_CHANGE}, _maintenance_change_record()))
    low, high = min(durations) // 60, -(-max(durations) // 60)
    t.answer(prose(
        f"""
        **Root cause.** Run {EXPORT_RUN} failed because its extract_orders step waited 600 s
        for a lock on public.order_lines and was cancelled by its own lock_timeout (SQLSTATE
        55P03, 02:14:09.882 UTC, {WORKER}). The lock was held by pid {MAINT_PID}, the maintd
        job {MAINT_JOB}, which ran VACUUM (FULL, ANALYZE) on that table under an ACCESS
        EXCLUSIVE lock from 02:03:51 to 02:52:37. Until yesterday that job ran on Sundays at
        04:00; change {MAINT_CHANGE} (implemented 2024-06-10 16:20 UTC) made it daily at 02:00,
        so last night was the first time it overlapped the export.

        **Evidence**
        - Conductor: {EXPORT_RUN} failed in extract_orders after 600.1 s (exit code 1,
          retries=0 for COPY steps); the {len(durations)} previous nightly runs succeeded in
          {low} to {high} minutes.
        - {WORKER}, 02:14:09.882: `sqlstate=55P03 canceling statement due to lock timeout ...
          lock held by pid {MAINT_PID} (application_name=maintd:{MAINT_JOB})`; the progress
          lines show rows=0 from 02:04:09 until then.
        - maintd: {MAINT_JOB}, pid {MAINT_PID}, AccessExclusiveLock granted 02:03:51, finished
          02:52:37, schedule `0 2 * * *` since {MAINT_CHANGE}.
        - {DB_HOST}: disk writes and WAL up from about 02:05 to 02:50, the signature of a
          table rewrite; no alerts.

        **Contributing factors.** {MAINT_CHANGE}'s risk assessment found "no batch consumers"
        of order_lines at 02:00; extract_orders has no retry, so one lock wait fails the run.

        **Ruled out.** Worker resources (no alerts, no OOM, no restarts); the uploader (the run
        never reached it); upstream orders_cdc_compaction (succeeded, watermark published);
        Vault (all renewals 200, no rotations in the window); pgbouncer (export pool peaked at 3
        of 20); recent changes (none touch the export's database path: etl-runner 3.18.2 has had
        five good runs, and the S3 key rotation CHG-21003 keeps the old key valid until
        2024-06-17, on a step the run never reached).

        **Re-run now?** Yes. The vacuum finished at 02:52:37 and maintd has nothing else on
        order_lines before 02:00 tonight. A manual run takes about 35 minutes.

        **Follow-ups**
        1. DBA team (k.brandt): move {MAINT_JOB} off 02:00 before tonight's run (03:00
           clears the export window), or switch it to pg_repack as the approver asked.
        2. Data platform: add a maintd blackout on {DB_HOST} for the export window, and list
           {EXPORT_JOB} as a consumer in the maintenance risk checklist.
        3. Data platform: let extract_orders retry once after 55P03, and alert on lock waits
           over 120 s.
        """
    ))
    return t


# =============================================================================================
# refund: a support agent whose refund is declined by the payment processor
#
# Nine laps. The refund to the original card fails with a permanent decline code
# (card_account_closed); the agent does not retry the dead card, checks the policy and
# escalates to billing with the reason, then tells the customer what happens next.
# =============================================================================================

REFUND_ORDER = "FH-20931-7744"
REFUND_CUSTOMER = "cus_7Q2M4X81"
REFUND_DECLINE = "card_account_closed"

REFUND_SYSTEM = prose(
    """
    You are the customer support agent for Fernhill Outdoor Co., an online outdoor-gear shop.
    You help customers by email with orders, deliveries, returns and refunds, using the tools
    provided. Today is Friday 31 May 2024.

    Refund policy (summary of KB-200; search the policy base for details):
    - Refunds are allowed within 30 days of delivery for returned items the warehouse has
      received, and for items that arrived damaged or defective.
    - For damaged or defective items, refund the item, its sales tax and the original shipping.
      Never refund more than was paid for the items returned.
    - Refunds go to the original payment method.
    - If a refund fails, read the decline code. Retry once only when the processor marks it
      retryable. Never move a refund to another card, a bank account or store credit on your
      own: that needs the customer's written consent and a billing specialist (queue
      billing-refunds).
    - Record every action you take in an order note.

    Write to the customer in plain, warm English, say what you did and what happens next with
    dates, and sign as "Fernhill Support". Do not promise anything the tools have not
    confirmed.
    """
)

REFUND_TOOLS = [
    tool(
        "lookup_order",
        "Fetch an order by its number (FH-xxxxx-xxxx): customer, items with SKU, price and "
        "tax, shipping, payment details (method, processor, charge id) and delivery status.",
        {"order_id": {"type": "string", "description": "Order number, e.g. FH-20931-7744."}},
        ["order_id"],
    ),
    tool(
        "get_return",
        "Look up a return by RMA number or by the return shipment's tracking number: "
        "carrier events, warehouse receipt, inspection result and items received.",
        {"rma_or_tracking": {"type": "string"}},
        ["rma_or_tracking"],
    ),
    tool(
        "check_refund_eligibility",
        "Check items of an order against the refund policy and compute the refundable amount "
        "(item price, item tax and, for damaged or defective items, original shipping).",
        {
            "order_id": {"type": "string"},
            "skus": {"type": "array", "items": {"type": "string"},
                     "description": "SKUs being refunded."},
            "reason": {"type": "string",
                       "enum": ["damaged_in_transit", "defective", "changed_mind", "wrong_item",
                                "not_delivered"]},
        },
        ["order_id", "skus", "reason"],
    ),
    tool(
        "issue_refund",
        "Send a refund to the order's original payment method through the payment processor "
        "(Tessera Payments). Returns the refund id on success or the processor's decline code "
        "and whether a retry can succeed. Idempotent per idempotency_key.",
        {
            "order_id": {"type": "string"},
            "amount": {"type": "number", "description": "Amount in the order's currency."},
            "currency": {"type": "string", "default": "USD"},
            "reason": {"type": "string"},
            "idempotency_key": {"type": "string"},
        },
        ["order_id", "amount", "reason", "idempotency_key"],
    ),
    tool(
        "get_customer",
        "Fetch a customer's profile: contact details, preferred language, payment methods on "
        "file, store-credit balance and recent support contacts.",
        {"customer_id": {"type": "string"}},
        ["customer_id"],
    ),
    tool(
        "search_policy",
        "Search the internal policy base (KB articles) and return the best-matching article "
        "in full.",
        {"query": {"type": "string"}},
        ["query"],
    ),
    tool(
        "create_billing_escalation",
        "Open a ticket for the billing specialists (queue billing-refunds) when a refund needs "
        "manual handling. Returns the ticket id and its service-level target.",
        {
            "order_id": {"type": "string"},
            "amount": {"type": "number"},
            "summary": {"type": "string"},
            "decline_code": {"type": "string"},
            "customer_options": {"type": "array", "items": {"type": "string"},
                                 "description": "Refund routes to offer the customer."},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        },
        ["order_id", "amount", "summary", "priority"],
    ),
    tool(
        "add_order_note",
        "Append an internal note to an order's timeline (visible to staff only).",
        {"order_id": {"type": "string"}, "note": {"type": "string"}},
        ["order_id", "note"],
    ),
]


def _refund_order() -> dict:
    return {
        "order_id": REFUND_ORDER,
        "placed_at": "2024-05-02T18:41:07-07:00",
        "customer": {"id": REFUND_CUSTOMER, "name": "Priya Raman",
                     "email": "priya.raman@example.net"},
        "channel": "web",
        "currency": "USD",
        "shipping_address": {"name": "Priya Raman", "line1": "2417 Alder Creek Way",
                             "city": "Sacramento", "region": "CA", "postal_code": "95818",
                             "country": "US"},
        "billing_address": "same as shipping",
        "items": [
            {"sku": "TNT-RDG2-GRN", "name": "Ridgeline 2 backpacking tent, fern green",
             "qty": 1, "unit_price": 289.00, "tax": 20.95},
            {"sku": "FTP-RDG2", "name": "Ridgeline 2 footprint", "qty": 1,
             "unit_price": 39.00, "tax": 2.83},
        ],
        "shipping": {"method": "UPS Ground", "charged": 12.95, "tax": 0.00},
        "tax_rate": "7.25% (CA, Sacramento County)",
        "total_paid": 364.73,
        "payment": {"method": "card", "brand": "visa", "funding": "credit", "last4": "4417",
                    "exp": "09/2026", "cardholder": "PRIYA RAMAN",
                    "processor": "tessera", "charge_id": "ch_3PbX9rT2eWq0LmA7",
                    "authorized_at": "2024-05-02T18:41:09-07:00",
                    "captured_at": "2024-05-02T18:41:12-07:00", "status": "captured",
                    "avs": "Y", "cvc_check": "pass", "risk_score": 12,
                    "refunded": 0.00, "disputes": []},
        "fulfilment": {"warehouse": "RNO-1", "shipped_at": "2024-05-03T11:02:40-07:00",
                       "carrier": "UPS", "tracking": "1Z8A0W470388120935",
                       "delivered_at": "2024-05-06T14:17:00-07:00", "status": "delivered"},
        "returns": [{"rma": "RMA-55102", "created_at": "2024-05-23T09:12:51-07:00",
                     "items": ["TNT-RDG2-GRN"], "reason_given": "arrived damaged"}],
        "timeline": [
            {"at": "2024-05-02T18:41:12-07:00", "event": "order placed, payment captured"},
            {"at": "2024-05-02T18:41:40-07:00", "event": "order confirmation emailed"},
            {"at": "2024-05-03T07:15:02-07:00", "event": "picked at RNO-1 (2 units, 1 box)"},
            {"at": "2024-05-03T11:02:40-07:00", "event": "shipped, UPS 1Z8A0W470388120935"},
            {"at": "2024-05-06T14:17:00-07:00", "event": "delivered, left at front door"},
            {"at": "2024-05-23T09:05:40-07:00", "event": "customer email: tent arrived damaged"},
            {"at": "2024-05-23T09:12:51-07:00", "event": "RMA-55102 created for TNT-RDG2-GRN"},
            {"at": "2024-05-28T13:06:22-07:00", "event": "return received at RNO-1"},
            {"at": "2024-05-29T08:47:10-07:00", "event": "return inspected: damaged_in_transit"},
        ],
        "notes": [
            {"at": "2024-05-23T09:14:03-07:00", "by": "support:auto",
             "text": "Prepaid return label emailed for RMA-55102 (damage reported with 3 photos)."},
        ],
    }


def _refund_return() -> dict:
    return {
        "rma": "RMA-55102",
        "order_id": REFUND_ORDER,
        "carrier": "UPS",
        "tracking": "1Z8A0W470392771546",
        "events": [
            {"at": "2024-05-24T16:05:00-07:00", "where": "Sacramento, CA",
             "event": "Drop-off at UPS Access Point"},
            {"at": "2024-05-25T03:44:00-07:00", "where": "West Sacramento, CA",
             "event": "Departed facility"},
            {"at": "2024-05-27T22:10:00-07:00", "where": "Sparks, NV", "event": "Arrived at facility"},
            {"at": "2024-05-28T10:31:00-07:00", "where": "Reno, NV",
             "event": "Delivered to RNO-1 receiving dock"},
        ],
        "received": {"at": "2024-05-28T13:06:22-07:00", "by": "rno1-recv-04",
                     "items": [{"sku": "TNT-RDG2-GRN", "qty": 1}]},
        "inspection": {
            "at": "2024-05-29T08:47:10-07:00",
            "inspector": "rno1-qa-11",
            "result": "damaged_in_transit",
            "detail": "2 of 9 pole segments fractured at the ferrules; outer box crushed on one "
                      "corner; canopy and fly intact and unused.",
            "restock": False,
            "disposition": "vendor claim VC-8812 (Ridgeline supplier)",
            "refund_recommendation": "approve",
            "checklist": {"packaging": "original box, crushed corner",
                          "components_present": "tent body, fly, 9 pole segments, 14 stakes, "
                                                "3 guylines, stuff sack",
                          "signs_of_use": "none", "photos": ["qa/55102-1.jpg", "qa/55102-2.jpg",
                                                             "qa/55102-3.jpg"]},
        },
    }


def _refund_eligibility() -> dict:
    return {
        "order_id": REFUND_ORDER,
        "eligible": True,
        "policy": "KB-200 section 3 (damaged or defective items)",
        "days_since_delivery": 25,
        "window_days": 30,
        "lines": [
            {"sku": "TNT-RDG2-GRN", "item": 289.00, "tax": 20.95, "eligible": True,
             "basis": "returned, inspection result damaged_in_transit"},
        ],
        "shipping_refund": {"amount": 12.95,
                            "basis": "damaged item: original shipping refundable"},
        "not_included": [{"sku": "FTP-RDG2", "reason": "not returned"}],
        "refundable_total": 322.90,
        "currency": "USD",
        "destination": "original payment method (visa ending 4417, charge ch_3PbX9rT2eWq0LmA7)",
    }


def _refund_decline() -> dict:
    return {
        "error": "refund_declined",
        "processor": "tessera",
        "http_status": 402,
        "decline_code": REFUND_DECLINE,
        "message": "The card issuer rejected the refund: the card account ending 4417 has been "
                   "closed. Refunds to this card cannot succeed; send the funds to another "
                   "destination.",
        "retryable": False,
        "refund_attempt_id": "rfa_1Pc0Hq8Zk3VnY5dE",
        "charge_id": "ch_3PbX9rT2eWq0LmA7",
        "amount": 322.90,
        "currency": "USD",
        "processor_request_id": "req_b7E2kQ9xW4mTz1",
        "at": "2024-05-31T10:22:48-07:00",
    }


def _refund_customer() -> dict:
    return {
        "id": REFUND_CUSTOMER,
        "name": "Priya Raman",
        "email": "priya.raman@example.net",
        "phone": "+1 916 555 0148",
        "language": "en-US",
        "customer_since": "2019-08-14",
        "orders_count": 11,
        "lifetime_value": 1893.40,
        "payment_methods": [
            {"id": "pm_visa_4417", "brand": "visa", "last4": "4417", "exp": "09/2026",
             "added_at": "2021-03-02", "default": False, "status": "active"},
            {"id": "pm_mc_0923", "brand": "mastercard", "last4": "0923", "exp": "04/2029",
             "added_at": "2024-05-19", "default": True, "status": "active"},
        ],
        "store_credit": {"balance": 0.00, "currency": "USD"},
        "orders": [
            {"order_id": "FH-20931-7744", "placed": "2024-05-02", "total": 364.73,
             "status": "delivered, partial return open"},
            {"order_id": "FH-20114-1290", "placed": "2024-03-17", "total": 84.50,
             "status": "delivered"},
            {"order_id": "FH-19872-5531", "placed": "2023-11-26", "total": 212.00,
             "status": "delivered"},
            {"order_id": "FH-19540-0087", "placed": "2023-08-09", "total": 46.95,
             "status": "delivered"},
            {"order_id": "FH-19107-3318", "placed": "2023-04-30", "total": 398.00,
             "status": "delivered, returned (size exchange)"},
            {"order_id": "FH-18766-9042", "placed": "2022-12-04", "total": 129.99,
             "status": "delivered"},
        ],
        "recent_contacts": [
            {"at": "2024-05-23T09:05:40-07:00", "channel": "email",
             "subject": "Tent arrived with broken poles", "resolution": "return label sent"},
        ],
        "flags": [],
    }


def _refund_policy_article() -> dict:
    return {
        "id": "KB-214",
        "title": "When a refund to the original payment method fails",
        "updated": "2024-02-12",
        "owner": "Billing Operations",
        "body": prose(
            """
            1. Read the processor's decline code and its retryable flag. Temporary codes
               (processing_error, issuer_unavailable, try_again_later) may be retried once
               after 30 minutes with a new idempotency key. Permanent codes (card_closed,
               account closed or frozen, lost_or_stolen, do_not_honor on a refund) must not be
               retried: a second attempt fails the same way and adds a processor fee.
            2. Do not send the refund to another card on file, a bank account or store credit
               yourself. A different destination needs (a) the customer's written consent
               naming that destination and (b) a billing specialist, who checks that the
               cardholder name matches and logs the change for the auditors (fraud control
               FC-7).
            3. Open a billing escalation in the billing-refunds queue with the order, the
               amount, the decline code and the routes the customer may choose from: another
               card in their name, an ACH transfer to a US bank account, or store credit with a
               10% bonus. Priority high when the amount is over $250 or the customer has
               waited more than 7 days since the return arrived.
            4. Tell the customer the same day: the refund was approved, the bank could not
               accept it, which routes are available, and that a billing specialist will
               contact them within 2 business days. Give the decline code as a reference the
               customer can quote to their bank, but not the processor's full message, which
               can mention fraud checks.
            5. Note everything in the order timeline. Billing closes the ticket when the funds
               are sent and mails the customer a receipt.
            """
        ),
        "decline_codes": [
            {"code": "processing_error", "meaning": "processor fault", "retry": "once, after 30 min"},
            {"code": "issuer_unavailable", "meaning": "bank offline", "retry": "once, after 30 min"},
            {"code": "try_again_later", "meaning": "rate limited", "retry": "once, after 30 min"},
            {"code": "card_closed, account_closed", "meaning": "card or account closed",
             "retry": "never"},
            {"code": "account_frozen", "meaning": "bank froze the account", "retry": "never"},
            {"code": "lost_or_stolen", "meaning": "card reported lost or stolen",
             "retry": "never; also flag for fraud review"},
            {"code": "do_not_honor", "meaning": "bank refused without reason",
             "retry": "never for refunds"},
        ],
        "related": ["KB-200 Refund policy", "KB-231 Chargebacks and disputes",
                    "FC-7 Changing a refund destination"],
    }


def build_refund() -> Transcript:
    t = Transcript("refund", seed=2024_0531, system_prompt=REFUND_SYSTEM, tools=REFUND_TOOLS,
                   indent=2)
    t.user(prose(
        f"""
        Hi, I bought the Ridgeline 2 tent on 2 May (order {REFUND_ORDER}). It arrived with two
        of the pole sections cracked, so I sent it back with your prepaid label on 24 May
        (UPS 1Z8A0W470392771546). Could you refund me, including the shipping I paid? I kept
        the footprint, that one is fine.
        """
    ) + "\n\nThanks,\nPriya Raman")
    t.turn(None, Call("lookup_order", {"order_id": REFUND_ORDER}, _refund_order()))
    t.turn(None, Call("get_return", {"rma_or_tracking": "1Z8A0W470392771546"}, _refund_return()))
    t.turn(
        "The tent was received and inspected as damaged in transit; checking what is refundable.",
        Call("check_refund_eligibility", {"order_id": REFUND_ORDER, "skus": ["TNT-RDG2-GRN"],
                                          "reason": "damaged_in_transit"},
             _refund_eligibility()),
    )
    t.turn(None, Call("issue_refund", {"order_id": REFUND_ORDER, "amount": 322.90,
                                       "currency": "USD", "reason": "damaged_in_transit",
                                       "idempotency_key": "rfd-FH-20931-7744-RMA-55102"},
                      _refund_decline()))
    t.turn(
        prose(
            f"""
            The refund was declined with {REFUND_DECLINE} and retryable=false: the Visa ending
            4417 is closed, so retrying it would fail the same way. Sending the money to
            another card or to store credit is not mine to decide. Checking what the customer
            has on file, then the policy for failed refunds.
            """
        ),
        Call("get_customer", {"customer_id": REFUND_CUSTOMER}, _refund_customer()),
    )
    t.turn(None, Call("search_policy", {"query": "refund failed original payment method closed card"},
                      _refund_policy_article()))
    t.turn(
        prose(
            f"""
            KB-214 applies: {REFUND_DECLINE} is permanent, so no retry; the Mastercard ending
            0923 is on file but moving the refund there needs Priya's written consent and a
            billing specialist. Escalating at high priority (over $250).
            """
        ),
        Call("create_billing_escalation", {
            "order_id": REFUND_ORDER,
            "amount": 322.90,
            "summary": "Approved refund for RMA-55102 (tent damaged in transit: item 289.00, tax "
                       "20.95, shipping 12.95) declined by Tessera: Visa ending 4417 closed. "
                       "Not retried. Customer to choose a new destination.",
            "decline_code": REFUND_DECLINE,
            "customer_options": ["Mastercard ending 0923 (on file, added 2024-05-19)",
                                 "ACH transfer to a US bank account",
                                 "store credit with 10% bonus"],
            "priority": "high",
        }, {
            "ticket_id": "BIL-58213",
            "queue": "billing-refunds",
            "priority": "high",
            "status": "open",
            "sla": {"first_contact_by": "2024-06-04T17:00:00-07:00", "business_days": 2},
            "assigned_to": None,
            "created_at": "2024-05-31T10:26:05-07:00",
            "url": "https://support.fernhill.example/billing/BIL-58213",
        }),
    )
    t.turn(None, Call("add_order_note", {
        "order_id": REFUND_ORDER,
        "note": f"Refund of $322.90 approved for RMA-55102 (damaged in transit). Tessera "
                f"declined it: {REFUND_DECLINE}, Visa 4417 closed, not retryable; not retried. "
                "Escalated to billing as BIL-58213 (high). Customer told to expect contact "
                "within 2 business days; options: Mastercard 0923, ACH, store credit +10%.",
    }, {"ok": True, "order_id": REFUND_ORDER, "note_id": "note_88213",
        "at": "2024-05-31T10:26:31-07:00"}))
    t.answer(prose(
        f"""
        Hi Priya,

        Thank you for sending the tent back, and I'm sorry it reached you with broken poles.
        Our warehouse received it on 28 May and confirmed the damage happened in transit, so
        your refund is approved in full: $289.00 for the tent, $20.95 tax and the $12.95 you
        paid for shipping, $322.90 in total. The footprint stays with you and isn't affected.

        There is one snag. When we sent the refund to the Visa card ending in 4417 that you
        paid with, your bank turned it away because that card account has been closed
        (reference {REFUND_DECLINE}). The money has not left us, and trying the same card
        again would not work.

        I've passed your refund to our billing team (ticket BIL-58213) at high priority. A
        billing specialist will contact you by Tuesday 4 June to confirm where you'd like the
        $322.90 to go:
        - the Mastercard ending in 0923 on your account,
        - a transfer to a US bank account, or
        - Fernhill store credit, with a 10% bonus ($355.19).

        If you already know which you prefer, just reply to this email and we'll add it to the
        ticket so it moves faster.

        Fernhill Support
        """
    ))
    return t


# =============================================================================================
# coding: fix a one-cent mismatch between the order summary and the charge
#
# Thirteen laps in a small Python shop. The user's first message sets a constraint (do not
# modify the payments module); the cause is a rounding difference between shop/checkout/
# totals.py and shop/payments/amounts.py, and the tempting fix is in the forbidden module.
# The source files below are the repository the agent reads; grep hits, the edits and the
# diff are computed from them, so line numbers and contents agree everywhere.
# =============================================================================================

CODING_CONSTRAINT = "do not modify the payments module"

# ISO 4217 minor-unit exponents (the real ones) for the currencies the processor settles.
_CURRENCIES = {
    "AED": 2, "AUD": 2, "BGN": 2, "BHD": 3, "BRL": 2, "CAD": 2, "CHF": 2, "CLP": 0, "CNY": 2,
    "CZK": 2, "DKK": 2, "EUR": 2, "GBP": 2, "HKD": 2, "HUF": 2, "IDR": 2, "ILS": 2, "INR": 2,
    "ISK": 0, "JOD": 3, "JPY": 0, "KRW": 0, "KWD": 3, "MXN": 2, "MYR": 2, "NOK": 2, "NZD": 2,
    "OMR": 3, "PHP": 2, "PLN": 2, "QAR": 2, "RON": 2, "SAR": 2, "SEK": 2, "SGD": 2, "THB": 2,
    "TND": 3, "TRY": 2, "TWD": 2, "UGX": 0, "USD": 2, "VND": 0, "XOF": 0, "ZAR": 2,
}
_MONEY_FORMATS = {
    "EUR": ("\u202f\u20ac", False, ",", "."), "USD": ("$", True, ".", ","), "GBP": ("\u00a3", True, ".", ","),
    "CHF": ("CHF\u00a0", True, ".", "\u2019"), "SEK": ("\u00a0kr", False, ",", "\u00a0"),
    "NOK": ("kr\u00a0", True, ",", "\u00a0"), "DKK": ("\u00a0kr.", False, ",", "."),
    "PLN": ("\u00a0z\u0142", False, ",", "\u00a0"), "CZK": ("\u00a0K\u010d", False, ",", "\u00a0"),
    "CAD": ("CA$", True, ".", ","), "AUD": ("A$", True, ".", ","), "JPY": ("\u00a5", True, ".", ","),
}
_VAT_COUNTRIES = ["AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB",
                  "GR", "HR", "HU", "IE", "IT", "LT", "LU", "LV", "MT", "NL", "NO", "PL", "PT",
                  "RO", "SE", "SI", "SK"]


def _python_table(name: str, annotation: str, items: list[str], per_line: int, indent: str = "    ") -> str:
    """A dict or set literal laid out the way black would, a few entries per line."""
    rows = [", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]
    opener, closer = ("{", "}") if annotation.startswith("dict") else ("frozenset({", "})")
    body = "\n".join(indent + row for row in rows)
    return f"{name}: {annotation} = {opener}\n{body}\n{closer}"


CART_MODELS_PY = block(r'''
    """The shopper's cart: lines, quantities and the coupon codes they have typed in.

    A cart can change until checkout starts. ``Cart.freeze()`` returns the snapshot that the
    checkout page, the order summary and the payment step all read, so the figures a shopper
    sees and the amount charged are computed from the same lines.
    """

    from __future__ import annotations

    import itertools
    from dataclasses import dataclass, field, replace
    from decimal import Decimal
    from typing import Any, Iterator

    from shop.catalog.categories import Category
    from shop.money import ZERO, parse_amount

    MAX_QTY_PER_LINE = 20
    MAX_LINES = 60
    MAX_COUPON_CODES = 3

    _line_ids = itertools.count(1)


    class CartError(ValueError):
        """A change the cart cannot accept: unknown line, bad quantity, frozen cart."""


    @dataclass(frozen=True)
    class LineItem:
        """One cart line: a SKU, its unit price when it was added, and a quantity.

        ``is_gift`` marks a free item added by a promotion rule: its price is 0, it is never
        discounted and it does not count toward coupon thresholds. ``category`` decides which
        coupons exclude the line.
        """

        sku: str
        title: str
        unit_price: Decimal
        qty: int
        category: Category = Category.GENERAL
        tax_code: str = "standard"
        is_gift: bool = False
        bundle_id: str | None = None
        line_id: int = field(default_factory=lambda: next(_line_ids))

        def __post_init__(self) -> None:
            if not 1 <= self.qty <= MAX_QTY_PER_LINE:
                raise CartError(f"{self.sku}: quantity must be 1..{MAX_QTY_PER_LINE}, got {self.qty}")
            if self.unit_price < ZERO:
                raise CartError(f"{self.sku}: negative unit price {self.unit_price}")
            if self.is_gift and self.unit_price != ZERO:
                raise CartError(f"{self.sku}: a gift line must have price 0, got {self.unit_price}")
            if self.unit_price.as_tuple().exponent < -2:
                raise CartError(f"{self.sku}: unit price {self.unit_price} has more than 2 decimals")

        @property
        def amount(self) -> Decimal:
            """Unit price times quantity. Exact: prices have at most two decimals."""
            return self.unit_price * self.qty

        def with_qty(self, qty: int) -> LineItem:
            return replace(self, qty=qty)

        def to_dict(self) -> dict[str, Any]:
            return {
                "line_id": self.line_id,
                "sku": self.sku,
                "title": self.title,
                "unit_price": str(self.unit_price),
                "qty": self.qty,
                "category": self.category.value,
                "tax_code": self.tax_code,
                "is_gift": self.is_gift,
                "bundle_id": self.bundle_id,
            }

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> LineItem:
            return cls(
                sku=data["sku"],
                title=data["title"],
                unit_price=parse_amount(data["unit_price"]),
                qty=int(data["qty"]),
                category=Category(data.get("category", Category.GENERAL.value)),
                tax_code=data.get("tax_code", "standard"),
                is_gift=bool(data.get("is_gift", False)),
                bundle_id=data.get("bundle_id"),
                line_id=int(data["line_id"]),
            )


    @dataclass
    class Cart:
        """A shopper's cart in one currency, shipping to one country (and region, in the US)."""

        id: str
        currency: str
        country: str
        region: str | None = None
        lines: list[LineItem] = field(default_factory=list)
        coupon_codes: list[str] = field(default_factory=list)
        customer_id: str | None = None
        frozen: bool = False

        def __iter__(self) -> Iterator[LineItem]:
            return iter(self.lines)

        def __len__(self) -> int:
            return len(self.lines)

        def _check_open(self) -> None:
            if self.frozen:
                raise CartError(f"cart {self.id} is frozen for checkout; start a new cart to change it")

        def _index(self, line_id: int) -> int:
            for index, line in enumerate(self.lines):
                if line.line_id == line_id:
                    return index
            raise CartError(f"cart {self.id} has no line {line_id}")

        def add(self, sku: str, title: str, unit_price: Any, qty: int = 1, **extra: Any) -> LineItem:
            """Add ``qty`` of a SKU, merging with an existing line at the same price."""
            self._check_open()
            price = parse_amount(unit_price)
            for index, line in enumerate(self.lines):
                if line.sku == sku and line.unit_price == price and not line.is_gift:
                    merged = line.with_qty(min(line.qty + qty, MAX_QTY_PER_LINE))
                    self.lines[index] = merged
                    return merged
            if len(self.lines) >= MAX_LINES:
                raise CartError(f"cart {self.id} already has {MAX_LINES} lines")
            line = LineItem(sku=sku, title=title, unit_price=price, qty=qty, **extra)
            self.lines.append(line)
            return line

        def set_qty(self, line_id: int, qty: int) -> None:
            self._check_open()
            index = self._index(line_id)
            if qty == 0:
                del self.lines[index]
            else:
                self.lines[index] = self.lines[index].with_qty(qty)

        def remove(self, line_id: int) -> None:
            self._check_open()
            del self.lines[self._index(line_id)]

        def apply_coupon(self, code: str) -> None:
            """Remember a coupon code; validity is checked at checkout, not here."""
            self._check_open()
            normalised = code.strip().upper()
            if not normalised:
                raise CartError("empty coupon code")
            if normalised in self.coupon_codes:
                return
            if len(self.coupon_codes) >= MAX_COUPON_CODES:
                raise CartError(f"at most {MAX_COUPON_CODES} coupon codes per cart")
            self.coupon_codes.append(normalised)

        def remove_coupon(self, code: str) -> None:
            self._check_open()
            normalised = code.strip().upper()
            if normalised in self.coupon_codes:
                self.coupon_codes.remove(normalised)

        @property
        def subtotal(self) -> Decimal:
            return sum((line.amount for line in self.lines), ZERO)

        @property
        def item_count(self) -> int:
            return sum(line.qty for line in self.lines)

        def paid_lines(self) -> list[LineItem]:
            """Lines the shopper pays for (everything but promotional gifts)."""
            return [line for line in self.lines if not line.is_gift]

        def lines_in(self, *categories: Category) -> list[LineItem]:
            return [line for line in self.lines if line.category in categories]

        def freeze(self) -> Cart:
            """An immutable copy for checkout. Freezing a frozen cart returns it unchanged."""
            if self.frozen:
                return self
            return Cart(
                id=self.id,
                currency=self.currency,
                country=self.country,
                region=self.region,
                lines=list(self.lines),
                coupon_codes=list(self.coupon_codes),
                customer_id=self.customer_id,
                frozen=True,
            )

        def to_dict(self) -> dict[str, Any]:
            return {
                "id": self.id,
                "currency": self.currency,
                "country": self.country,
                "region": self.region,
                "lines": [line.to_dict() for line in self.lines],
                "coupon_codes": list(self.coupon_codes),
                "customer_id": self.customer_id,
                "frozen": self.frozen,
            }

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Cart:
            return cls(
                id=data["id"],
                currency=data["currency"],
                country=data["country"],
                region=data.get("region"),
                lines=[LineItem.from_dict(line) for line in data.get("lines", [])],
                coupon_codes=list(data.get("coupon_codes", [])),
                customer_id=data.get("customer_id"),
                frozen=bool(data.get("frozen", False)),
            )
''')


COUPONS_PY = block(r'''
    """Coupons: the codes a shopper types in at checkout, and what each one takes off.

    Kinds:

    * ``PERCENT``: a percentage off the lines the coupon covers (SPRING15 is 15 % off).
    * ``FIXED``: an amount off the order once it reaches ``min_subtotal``.
    * ``FREE_SHIPPING``: the standard shipping option costs nothing.

    Coupons combine only when every one of them is ``stackable``. Percentage coupons then apply
    in ``priority`` order (lowest first), each to what the earlier ones left of a line.

    Coupon definitions live in ``config/coupons.json``, edited by the marketing team through
    the admin; ``CouponBook`` loads them and answers lookups by code.
    """

    from __future__ import annotations

    import enum
    import json
    import logging
    from dataclasses import dataclass
    from datetime import datetime, timezone
    from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
    from pathlib import Path
    from typing import Any, Iterable, Sequence

    from shop.cart.models import Cart, LineItem
    from shop.catalog.categories import Category
    from shop.money import CENT, ZERO

    log = logging.getLogger(__name__)

    MAX_COUPONS_PER_ORDER = 3

    # Codes renamed when the 2023 campaigns were merged; old codes keep working.
    {{LEGACY_CODES}}


    class CouponKind(enum.Enum):
        PERCENT = "percent"
        FIXED = "fixed"
        FREE_SHIPPING = "free_shipping"


    class CouponError(ValueError):
        """A coupon definition or combination that cannot be used."""


    @dataclass(frozen=True)
    class Coupon:
        code: str
        kind: CouponKind
        value: Decimal = ZERO
        currency: str | None = None
        min_subtotal: Decimal = ZERO
        starts_at: datetime | None = None
        ends_at: datetime | None = None
        excluded_categories: frozenset[Category] = frozenset()
        only_skus: frozenset[str] = frozenset()
        stackable: bool = True
        priority: int = 100
        max_uses_per_customer: int | None = None

        def __post_init__(self) -> None:
            if self.kind is CouponKind.PERCENT and not ZERO < self.value <= 100:
                raise CouponError(f"{self.code}: a percentage must be in (0, 100], got {self.value}")
            if self.kind is CouponKind.FIXED:
                if self.value <= ZERO:
                    raise CouponError(f"{self.code}: a fixed coupon needs a positive value")
                if self.currency is None:
                    raise CouponError(f"{self.code}: a fixed coupon needs a currency")
            if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
                raise CouponError(f"{self.code}: ends before it starts")

        def applies_to(self, line: LineItem) -> bool:
            """Whether this coupon takes anything off ``line`` (gifts are never discounted)."""
            if line.is_gift or self.kind is not CouponKind.PERCENT:
                return False
            if self.only_skus and line.sku not in self.only_skus:
                return False
            return line.category not in self.excluded_categories

        def percent_off(self, amount: Decimal) -> Decimal:
            """This coupon's percentage of ``amount``, rounded half-up to the cent."""
            if self.kind is not CouponKind.PERCENT:
                raise CouponError(f"{self.code} is not a percentage coupon")
            return (amount * self.value / 100).quantize(CENT, rounding=ROUND_HALF_UP)

        def fixed_off(self, subtotal: Decimal) -> Decimal:
            """What a fixed coupon takes off ``subtotal``: its value, never more than the subtotal."""
            if self.kind is not CouponKind.FIXED or subtotal < self.min_subtotal:
                return ZERO
            return min(self.value, subtotal)

        def is_active(self, now: datetime) -> bool:
            if self.starts_at and now < self.starts_at:
                return False
            return not (self.ends_at and now >= self.ends_at)


    def check_combination(coupons: Sequence[Coupon]) -> None:
        """Raise ``CouponError`` unless ``coupons`` may be used together on one order."""
        if len(coupons) > MAX_COUPONS_PER_ORDER:
            raise CouponError(f"at most {MAX_COUPONS_PER_ORDER} coupons per order")
        codes = [coupon.code for coupon in coupons]
        if len(set(codes)) != len(codes):
            raise CouponError(f"a coupon is applied twice: {codes}")
        if len(coupons) > 1 and not all(coupon.stackable for coupon in coupons):
            single = [coupon.code for coupon in coupons if not coupon.stackable]
            raise CouponError(f"{', '.join(single)} cannot be combined with other coupons")
        if sum(coupon.kind is CouponKind.FIXED for coupon in coupons) > 1:
            raise CouponError("only one fixed-amount coupon per order")


    def validate_for_cart(
        coupon: Coupon, cart: Cart, *, now: datetime | None = None, uses_by_customer: int = 0
    ) -> list[str]:
        """Reasons ``coupon`` cannot be used on ``cart`` (empty when it can).

        The reason codes match ``shop.checkout.totals.COUPON_NOTES``.
        """
        now = now or datetime.now(timezone.utc)
        reasons = []
        if coupon.starts_at and now < coupon.starts_at:
            reasons.append("not_started")
        if coupon.ends_at and now >= coupon.ends_at:
            reasons.append("expired")
        if coupon.currency and coupon.currency != cart.currency:
            reasons.append("wrong_currency")
        paid = sum((line.amount for line in cart.paid_lines()), ZERO)
        if paid < coupon.min_subtotal:
            reasons.append("min_subtotal")
        if coupon.kind is CouponKind.PERCENT and not any(coupon.applies_to(l) for l in cart.lines):
            reasons.append("no_eligible_items")
        if coupon.max_uses_per_customer is not None and uses_by_customer >= coupon.max_uses_per_customer:
            reasons.append("used_up")
        return reasons


    def _parse_time(value: str | None) -> datetime | None:
        if value is None:
            return None
        moment = datetime.fromisoformat(value)
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


    def _parse(record: dict[str, Any]) -> Coupon:
        try:
            return Coupon(
                code=record["code"].upper(),
                kind=CouponKind(record["kind"]),
                value=Decimal(str(record.get("value", "0"))),
                currency=record.get("currency"),
                min_subtotal=Decimal(str(record.get("min_subtotal", "0"))),
                starts_at=_parse_time(record.get("starts_at")),
                ends_at=_parse_time(record.get("ends_at")),
                excluded_categories=frozenset(Category(c) for c in record.get("exclude", [])),
                only_skus=frozenset(record.get("only_skus", [])),
                stackable=bool(record.get("stackable", True)),
                priority=int(record.get("priority", 100)),
                max_uses_per_customer=record.get("max_uses_per_customer"),
            )
        except (KeyError, ValueError, InvalidOperation) as err:
            raise CouponError(f"bad coupon record {record.get('code', '?')!r}: {err}") from err


    class CouponBook:
        """The coupons marketing has defined, looked up by code (legacy codes included)."""

        def __init__(self, coupons: Iterable[Coupon]) -> None:
            self._by_code = {coupon.code: coupon for coupon in coupons}

        @classmethod
        def load(cls, path: Path) -> CouponBook:
            records = json.loads(path.read_text(encoding="utf-8"))
            coupons, broken = [], 0
            for record in records:
                try:
                    coupons.append(_parse(record))
                except CouponError:
                    broken += 1
                    log.exception("skipping coupon record in %s", path)
            log.info("loaded %d coupons from %s (%d skipped)", len(coupons), path, broken)
            return cls(coupons)

        def lookup(self, code: str) -> Coupon | None:
            normalised = code.strip().upper()
            normalised = LEGACY_CODES.get(normalised, normalised)
            return self._by_code.get(normalised)

        def for_cart(self, cart: Cart, *, now: datetime | None = None) -> tuple[list[Coupon], dict[str, list[str]]]:
            """The cart's coupon codes split into usable coupons and rejected codes with reasons."""
            usable, rejected = [], {}
            for code in cart.coupon_codes:
                coupon = self.lookup(code)
                if coupon is None:
                    rejected[code] = ["unknown"]
                    continue
                reasons = validate_for_cart(coupon, cart, now=now)
                if reasons:
                    rejected[code] = reasons
                else:
                    usable.append(coupon)
            return usable, rejected

        def __len__(self) -> int:
            return len(self._by_code)
''')


AMOUNTS_PY = block(r'''
    """Amounts sent to the payment processor.

    This module is in PCI DSS audit scope (docs/payments/audit-scope.md). Every change here is
    reviewed by the payments team and re-certified before release; keep checkout logic out.

    The charge is computed from the frozen cart, independently of the summary shown on the
    checkout page, and follows finance policy INV-3 so that the charge, the invoice and the
    ledger agree to the minor unit:

    1. Percentage coupons apply in priority order, each ONCE to the subtotal of the lines it
       covers (what earlier coupons left of those lines), rounded half-up to the minor unit.
    2. Then the fixed coupon, then shipping, then tax where prices exclude it.
    3. Amounts travel to the processor as integers in minor units (cents, yen, fils).
    """

    from __future__ import annotations

    from dataclasses import dataclass
    from decimal import ROUND_HALF_UP, Decimal
    from operator import attrgetter
    from typing import Sequence

    from shop.cart.models import Cart
    from shop.checkout.shipping import ShippingOption
    from shop.checkout.tax import TaxBreakdown
    from shop.promotions.coupons import Coupon, CouponKind, check_combination

    # ISO 4217 minor-unit exponents of every currency the processor settles for us.
    {{CURRENCY_TABLE}}

    # The processor refuses charges below these amounts (minor units).
    MINIMUM_CHARGE: dict[str, int] = {"EUR": 50, "GBP": 30, "USD": 50, "JPY": 50, "CHF": 50}


    class AmountError(ValueError):
        """An amount the processor would reject."""


    def exponent(currency: str) -> int:
        try:
            return CURRENCY_EXPONENTS[currency]
        except KeyError:
            raise AmountError(f"currency {currency!r} is not settled by the processor") from None


    def quantum(currency: str) -> Decimal:
        """The smallest amount in ``currency``: Decimal('0.01') for EUR, Decimal('1') for JPY."""
        return Decimal(1).scaleb(-exponent(currency))


    def round_amount(amount: Decimal, currency: str) -> Decimal:
        """``amount`` rounded half-up to the currency's minor unit (INV-3)."""
        return amount.quantize(quantum(currency), rounding=ROUND_HALF_UP)


    def to_minor_units(amount: Decimal, currency: str) -> int:
        rounded = round_amount(amount, currency)
        if rounded != amount:
            raise AmountError(f"{amount} {currency} is not a whole number of minor units")
        return int(rounded.scaleb(exponent(currency)))


    def from_minor_units(minor: int, currency: str) -> Decimal:
        return Decimal(minor).scaleb(-exponent(currency))


    def apply_percentage(amount: Decimal, percent: Decimal, currency: str) -> Decimal:
        """``percent`` % of ``amount``, rounded half-up to the minor unit (INV-3 rule 1)."""
        return round_amount(amount * percent / 100, currency)


    @dataclass(frozen=True)
    class ChargeAmount:
        """What the processor is asked to capture, in minor units, with its breakdown."""

        currency: str
        minor: int
        breakdown: tuple[tuple[str, int], ...] = ()

        @property
        def amount_decimal(self) -> Decimal:
            return from_minor_units(self.minor, self.currency)

        def __str__(self) -> str:
            return f"{self.amount_decimal} {self.currency}"


    def charge_amount(
        cart: Cart,
        coupons: Sequence[Coupon] = (),
        shipping: ShippingOption | None = None,
        tax: TaxBreakdown | None = None,
    ) -> ChargeAmount:
        """The amount to charge for ``cart`` under INV-3."""
        if not cart.frozen:
            raise AmountError(f"cart {cart.id} must be frozen before computing a charge")
        check_combination(coupons)
        currency = cart.currency

        # Rule 1: percentage coupons, each once on what is left of the lines it covers.
        left = {line.line_id: line.amount for line in cart.lines if not line.is_gift}
        percent_total = Decimal(0)
        for coupon in sorted((c for c in coupons if c.kind is CouponKind.PERCENT), key=attrgetter("priority")):
            covered = [line for line in cart.lines if line.line_id in left and coupon.applies_to(line)]
            base = sum((left[line.line_id] for line in covered), Decimal(0))
            if base == 0:
                continue
            percent_total += apply_percentage(base, coupon.value, currency)
            for line in covered:
                left[line.line_id] -= left[line.line_id] * coupon.value / 100

        # Rule 2: the fixed coupon, shipping, tax.
        subtotal = sum((line.amount for line in cart.lines), Decimal(0))
        after_coupons = subtotal - percent_total
        fixed_total = Decimal(0)
        for coupon in coupons:
            if coupon.kind is CouponKind.FIXED:
                fixed_total += coupon.fixed_off(after_coupons)
        after_coupons -= fixed_total
        free_shipping = any(c.kind is CouponKind.FREE_SHIPPING for c in coupons)
        shipping_total = Decimal(0)
        if shipping is not None and not (free_shipping and shipping.is_standard):
            shipping_total = shipping.price_for(after_coupons)
        tax_total = Decimal(0) if tax is None or tax.inclusive else tax.amount
        total = after_coupons + shipping_total + tax_total

        minor = to_minor_units(round_amount(total, currency), currency)
        if minor < MINIMUM_CHARGE.get(currency, 0):
            raise AmountError(f"{total} {currency} is below the processor's minimum charge")
        breakdown = (
            ("subtotal", to_minor_units(subtotal, currency)),
            ("percent_coupons", -to_minor_units(percent_total, currency)),
            ("fixed_coupon", -to_minor_units(fixed_total, currency)),
            ("shipping", to_minor_units(shipping_total, currency)),
            ("tax", to_minor_units(tax_total, currency)),
        )
        return ChargeAmount(currency=currency, minor=minor, breakdown=breakdown)


    def refund_minor_units(charge: ChargeAmount, refunded: Sequence[int], amount: Decimal) -> int:
        """Minor units to refund now, refusing to refund more than is left of the charge."""
        wanted = to_minor_units(round_amount(amount, charge.currency), charge.currency)
        left = charge.minor - sum(refunded)
        if wanted <= 0:
            raise AmountError("a refund must be positive")
        if wanted > left:
            raise AmountError(
                f"refund of {amount} {charge.currency} exceeds the {from_minor_units(left, charge.currency)} left"
            )
        return wanted


    def capture_plan(charge: ChargeAmount, shipment_shares: Sequence[Decimal]) -> list[int]:
        """Split a charge across shipments for partial captures; the parts sum to the charge.

        Each shipment captures its share rounded down; the minor units left over go to the
        first shipment, which the processor captures first.
        """
        if not shipment_shares or sum(shipment_shares) != 1:
            raise AmountError("shipment shares must be non-empty and sum to 1")
        parts = [int(charge.minor * share) for share in shipment_shares]
        parts[0] += charge.minor - sum(parts)
        return parts
''')


TOTALS_PY = block(r'''
    """Order summary: the figures a shopper sees on the checkout page before paying.

    ``build_summary`` turns a frozen cart, the coupons applied to it and the chosen shipping
    option into an ``OrderSummary``: one ``SummaryLine`` per cart line (amount, discount, total)
    and the order figures (subtotal, discount, shipping, tax, total), each rounded to the cent.

    The amount actually charged is computed separately, by
    ``shop.payments.amounts.charge_amount``. The two must agree to the cent;
    tests/checkout/test_totals.py checks that they do.
    """

    from __future__ import annotations

    import logging
    from dataclasses import asdict, dataclass
    from decimal import Decimal
    from operator import attrgetter
    from typing import Any, Iterable, Sequence

    from shop.cart.models import Cart, LineItem
    from shop.checkout.shipping import ShippingOption
    from shop.checkout.tax import TaxBreakdown, tax_for
    from shop.money import ZERO, format_money, quantize
    from shop.promotions.coupons import Coupon, CouponKind, check_combination

    log = logging.getLogger(__name__)

    # Countries whose shoppers see prices with VAT included. Everywhere else (the US states we
    # ship to, Canada) sales tax is added on top of the summary.
    {{VAT_COUNTRIES}}

    # What the summary says about a coupon that could not be used, by reason code
    # (the codes come from shop.promotions.coupons.validate_for_cart).
    COUPON_NOTES = {
        "expired": "Coupon {code} has expired.",
        "not_started": "Coupon {code} is not active yet.",
        "min_subtotal": "Coupon {code} needs an order of at least {amount}.",
        "not_stackable": "Coupon {code} cannot be combined with other coupons.",
        "no_eligible_items": "Coupon {code} does not apply to any item in your cart.",
        "used_up": "You have already used coupon {code}.",
        "wrong_currency": "Coupon {code} is not valid for orders in {currency}.",
        "unknown": "We could not find coupon {code}.",
    }


    class SummaryError(ValueError):
        """The cart cannot be summarised: empty, mixed currencies, unknown shipping option."""


    @dataclass(frozen=True)
    class SummaryLine:
        line_id: int
        sku: str
        title: str
        qty: int
        unit_price: Decimal
        amount: Decimal
        discount: Decimal
        total: Decimal
        is_gift: bool = False


    @dataclass(frozen=True)
    class OrderSummary:
        currency: str
        lines: tuple[SummaryLine, ...]
        subtotal: Decimal
        discount: Decimal
        shipping: Decimal
        tax: Decimal
        total: Decimal
        tax_inclusive: bool
        shipping_waived: Decimal = ZERO
        coupon_codes: tuple[str, ...] = ()
        notes: tuple[str, ...] = ()

        @property
        def item_count(self) -> int:
            return sum(line.qty for line in self.lines)

        @property
        def savings(self) -> Decimal:
            """Coupons and free shipping together: the "You save" figure."""
            return self.discount + self.shipping_waived

        def as_dict(self) -> dict[str, Any]:
            data = asdict(self)
            for key in ("subtotal", "discount", "shipping", "tax", "total", "shipping_waived"):
                data[key] = str(data[key])
            data["lines"] = [
                {k: str(v) if isinstance(v, Decimal) else v for k, v in asdict(line).items()}
                for line in self.lines
            ]
            return data

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> OrderSummary:
            money = ("unit_price", "amount", "discount", "total")
            lines = tuple(
                SummaryLine(**{k: Decimal(v) if k in money else v for k, v in line.items()})
                for line in data["lines"]
            )
            return cls(
                currency=data["currency"],
                lines=lines,
                subtotal=Decimal(data["subtotal"]),
                discount=Decimal(data["discount"]),
                shipping=Decimal(data["shipping"]),
                tax=Decimal(data["tax"]),
                total=Decimal(data["total"]),
                tax_inclusive=data["tax_inclusive"],
                shipping_waived=Decimal(data.get("shipping_waived", "0")),
                coupon_codes=tuple(data.get("coupon_codes", ())),
                notes=tuple(data.get("notes", ())),
            )


    def build_summary(
        cart: Cart,
        coupons: Sequence[Coupon] = (),
        shipping: ShippingOption | None = None,
        *,
        notes: Iterable[str] = (),
    ) -> OrderSummary:
        """Summarise ``cart`` for the checkout page.

        ``coupons`` are the coupons already validated for this cart (see
        ``CouponBook.for_cart``); ``shipping`` is the option the shopper chose, or ``None``
        before they have chosen (shipping then shows as 0 and the total leaves it out).
        """
        if not cart.lines:
            raise SummaryError(f"cart {cart.id} is empty")
        _check_currency(cart, coupons)
        check_combination(coupons)
        percent, fixed, free_shipping = _split_coupons(coupons)

        lines = []
        for line in cart.lines:
            discount = ZERO
            remaining = line.amount
            for coupon in percent:
                if coupon.applies_to(line):
                    cut = coupon.percent_off(remaining)
                    discount += cut
                    remaining -= cut
            lines.append(_summary_line(line, discount))

        subtotal = sum((line.amount for line in lines), ZERO)
        discount = sum((line.discount for line in lines), ZERO)
        for coupon in fixed:
            discount += coupon.fixed_off(subtotal - discount)

        shipping_amount, waived = _shipping(shipping, free_shipping, subtotal - discount)
        tax = _tax(cart, lines, shipping_amount)
        total = subtotal - discount + shipping_amount
        if not tax.inclusive:
            total += tax.amount

        summary = OrderSummary(
            currency=cart.currency,
            lines=tuple(lines),
            subtotal=quantize(subtotal),
            discount=quantize(discount),
            shipping=quantize(shipping_amount),
            tax=quantize(tax.amount),
            total=quantize(total),
            tax_inclusive=tax.inclusive,
            shipping_waived=quantize(waived),
            coupon_codes=tuple(coupon.code for coupon in coupons),
            notes=tuple(notes),
        )
        log.debug("summary cart=%s total=%s discount=%s", cart.id, summary.total, summary.discount)
        return summary


    def _split_coupons(coupons: Sequence[Coupon]) -> tuple[list[Coupon], list[Coupon], bool]:
        percent = sorted(
            (coupon for coupon in coupons if coupon.kind is CouponKind.PERCENT),
            key=attrgetter("priority"),
        )
        fixed = [coupon for coupon in coupons if coupon.kind is CouponKind.FIXED]
        free_shipping = any(coupon.kind is CouponKind.FREE_SHIPPING for coupon in coupons)
        return percent, fixed, free_shipping


    def _summary_line(line: LineItem, discount: Decimal) -> SummaryLine:
        return SummaryLine(
            line_id=line.line_id,
            sku=line.sku,
            title=line.title,
            qty=line.qty,
            unit_price=line.unit_price,
            amount=line.amount,
            discount=discount,
            total=line.amount - discount,
            is_gift=line.is_gift,
        )


    def _check_currency(cart: Cart, coupons: Sequence[Coupon]) -> None:
        for coupon in coupons:
            if coupon.currency is not None and coupon.currency != cart.currency:
                raise SummaryError(
                    f"coupon {coupon.code} is in {coupon.currency}, cart {cart.id} is in {cart.currency}"
                )


    def _shipping(
        option: ShippingOption | None, free: bool, discounted_subtotal: Decimal
    ) -> tuple[Decimal, Decimal]:
        """(shipping charged, shipping waived by a free-shipping coupon)."""
        if option is None:
            return ZERO, ZERO
        price = option.price_for(discounted_subtotal)
        if free and option.is_standard:
            return ZERO, price
        return price, ZERO


    def _tax(cart: Cart, lines: Sequence[SummaryLine], shipping_amount: Decimal) -> TaxBreakdown:
        inclusive = cart.country in TAX_INCLUSIVE_COUNTRIES
        taxable = [(line.sku, line.total) for line in lines if not line.is_gift]
        return tax_for(
            country=cart.country,
            region=cart.region,
            lines=taxable,
            shipping=shipping_amount,
            inclusive=inclusive,
        )


    def coupon_note(reason: str, code: str, *, currency: str, amount: Decimal | None = None) -> str:
        """The sentence shown under the coupon box when ``code`` was rejected for ``reason``."""
        template = COUPON_NOTES.get(reason, "Coupon {code} cannot be used on this order.")
        shown = format_money(amount, currency) if amount is not None else ""
        return template.format(code=code, amount=shown, currency=currency)


    def render_text(summary: OrderSummary) -> str:
        """Plain-text summary for order-confirmation emails (the HTML page has its own template)."""
        money = lambda value: format_money(value, summary.currency)  # noqa: E731
        width = max(len(line.title) for line in summary.lines) + 4
        rows = []
        for line in summary.lines:
            label = f"{line.qty} x {line.title}"
            rows.append(f"{label:<{width + 6}}{money(line.amount):>12}")
            if line.discount:
                rows.append(f"{'  discount':<{width + 6}}{money(-line.discount):>12}")
        rows.append("-" * (width + 18))
        rows.append(f"{'Subtotal':<{width + 6}}{money(summary.subtotal):>12}")
        if summary.discount:
            codes = ", ".join(summary.coupon_codes)
            rows.append(f"{'Discount (' + codes + ')':<{width + 6}}{money(-summary.discount):>12}")
        rows.append(f"{'Shipping':<{width + 6}}{money(summary.shipping):>12}")
        if summary.tax_inclusive:
            rows.append(f"{'incl. VAT':<{width + 6}}{money(summary.tax):>12}")
        else:
            rows.append(f"{'Tax':<{width + 6}}{money(summary.tax):>12}")
        rows.append(f"{'Total':<{width + 6}}{money(summary.total):>12}")
        if summary.savings:
            rows.append(f"You save {money(summary.savings)} on this order.")
        rows.extend(summary.notes)
        return "\n".join(rows)


    def compare_with_charge(summary: OrderSummary, charged: Decimal) -> Decimal:
        """Difference between the summary's total and what was charged; logs any mismatch."""
        difference = charged - summary.total
        if difference:
            log.warning(
                "summary/charge mismatch: summary=%s charged=%s difference=%s",
                summary.total,
                charged,
                difference,
            )
        return difference
''')

INVOICE_LINES_PY = block(r'''
    """Invoice lines: how an order is itemised on its invoice (finance policy INV-3).

    An invoice lists the items at full price, then ONE discount line per coupon (never a
    discount per item), then shipping, then tax. Its total must equal the amount the payment
    processor captured, so the coupon arithmetic here uses the same helpers as
    ``shop.payments.amounts.charge_amount``.

    Invoices cannot change once issued; corrections are credit notes (shop/invoicing/credit.py).
    """

    from __future__ import annotations

    import enum
    from dataclasses import dataclass, field
    from datetime import date
    from decimal import Decimal
    from operator import attrgetter
    from typing import Sequence

    from shop.cart.models import Cart
    from shop.checkout.tax import TaxBreakdown
    from shop.payments.amounts import apply_percentage, round_amount
    from shop.promotions.coupons import Coupon, CouponKind

    INVOICE_PREFIX = {"DE": "RE", "AT": "RE", "FR": "FA", "GB": "INV", "US": "INV"}


    class LineKind(enum.Enum):
        ITEM = "item"
        DISCOUNT = "discount"
        SHIPPING = "shipping"
        TAX = "tax"


    @dataclass(frozen=True)
    class InvoiceLine:
        kind: LineKind
        label: str
        amount: Decimal
        sku: str | None = None
        qty: int | None = None
        unit_price: Decimal | None = None
        tax_rate: Decimal | None = None


    @dataclass
    class Invoice:
        number: str
        order_id: str
        issued_on: date
        currency: str
        country: str
        lines: list[InvoiceLine] = field(default_factory=list)

        @property
        def total(self) -> Decimal:
            return sum((line.amount for line in self.lines if line.kind is not LineKind.TAX or
                        self.country == "US"), Decimal(0))

        def lines_of(self, kind: LineKind) -> list[InvoiceLine]:
            return [line for line in self.lines if line.kind is kind]


    def item_lines(cart: Cart) -> list[InvoiceLine]:
        """One line per cart line, gifts included at 0 so the packing list matches."""
        return [
            InvoiceLine(kind=LineKind.ITEM, label=line.title, amount=line.amount, sku=line.sku,
                        qty=line.qty, unit_price=line.unit_price)
            for line in cart.lines
        ]


    def coupon_lines(invoice: Invoice, cart: Cart, coupons: Sequence[Coupon]) -> list[InvoiceLine]:
        """Invoice lines under INV-3: one discount line per coupon, never one per item."""
        rows = []
        left = {line.line_id: line.amount for line in cart.lines if not line.is_gift}
        for coupon in sorted((c for c in coupons if c.kind is CouponKind.PERCENT),
                             key=attrgetter("priority")):
            covered = [line for line in cart.lines if line.line_id in left and coupon.applies_to(line)]
            base = sum((left[line.line_id] for line in covered), Decimal(0))
            if base == 0:
                continue
            cut = apply_percentage(base, coupon.value, invoice.currency)
            rows.append(InvoiceLine(kind=LineKind.DISCOUNT, label=f"Coupon {coupon.code}", amount=-cut))
            for line in covered:
                left[line.line_id] -= left[line.line_id] * coupon.value / 100
        after = sum(left.values(), Decimal(0))
        for coupon in coupons:
            if coupon.kind is CouponKind.FIXED:
                off = coupon.fixed_off(round_amount(after, invoice.currency))
                if off:
                    rows.append(InvoiceLine(kind=LineKind.DISCOUNT, label=f"Coupon {coupon.code}",
                                            amount=-off))
        return rows


    def shipping_line(label: str, amount: Decimal) -> InvoiceLine:
        return InvoiceLine(kind=LineKind.SHIPPING, label=f"Shipping ({label})", amount=amount)


    def tax_lines(tax: TaxBreakdown) -> list[InvoiceLine]:
        """One line per tax rate; for VAT countries these show the VAT included above."""
        return [
            InvoiceLine(kind=LineKind.TAX, label=f"{rate.name} {rate.percent}%", amount=rate.amount,
                        tax_rate=rate.percent)
            for rate in tax.rates
        ]


    def build_invoice(number: str, order_id: str, issued_on: date, cart: Cart,
                      coupons: Sequence[Coupon], shipping: tuple[str, Decimal] | None,
                      tax: TaxBreakdown) -> Invoice:
        invoice = Invoice(number=number, order_id=order_id, issued_on=issued_on,
                          currency=cart.currency, country=cart.country)
        invoice.lines.extend(item_lines(cart))
        invoice.lines.extend(coupon_lines(invoice, cart, coupons))
        if shipping is not None:
            invoice.lines.append(shipping_line(*shipping))
        invoice.lines.extend(tax_lines(tax))
        return invoice


    def next_number(country: str, year: int, last: int) -> str:
        """RE-2024-000123 style numbers, gap-free per country and year (a legal requirement)."""
        return f"{INVOICE_PREFIX.get(country, 'INV')}-{year}-{last + 1:06d}"
''')


MONEY_PY = block(r'''
    """Money helpers shared by the whole shop: Decimal only, never float.

    Amounts are ``Decimal`` values in major units (euros, dollars). Anything that reaches a
    shopper is rounded half-up to the cent with ``quantize``; currencies without cents are
    handled by the payment layer, which works in minor units (shop.payments.amounts).
    """

    from __future__ import annotations

    from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
    from typing import Any

    ZERO = Decimal("0.00")
    CENT = Decimal("0.01")

    # How amounts are written for shoppers, by currency: (symbol, symbol first, decimal mark,
    # thousands separator). The storefront's locale middleware may override the marks.
    {{MONEY_FORMATS}}


    class MoneyError(ValueError):
        """A value that is not a valid amount of money."""


    def quantize(amount: Decimal) -> Decimal:
        """``amount`` rounded half-up to the cent."""
        return amount.quantize(CENT, rounding=ROUND_HALF_UP)


    def parse_amount(value: Any) -> Decimal:
        """A price from a form, a CSV or JSON: '9.99', 9 or Decimal('9.99'), never a float."""
        if isinstance(value, float):
            raise MoneyError(f"refusing float amount {value!r}; pass a string or a Decimal")
        try:
            amount = Decimal(str(value).strip())
        except InvalidOperation:
            raise MoneyError(f"not an amount: {value!r}") from None
        if not amount.is_finite():
            raise MoneyError(f"not a finite amount: {value!r}")
        return amount


    def format_money(amount: Decimal, currency: str) -> str:
        """'EUR 1234.5' -> '1.234,50 EUR' style text for shoppers, by the currency's format."""
        symbol, first, mark, thousands = MONEY_FORMATS.get(currency, (currency + " ", True, ".", ","))
        sign = "-" if amount < 0 else ""
        whole, _, cents = f"{abs(quantize(amount)):.2f}".partition(".")
        groups = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        groups.insert(0, whole)
        number = thousands.join(groups) + mark + cents
        return f"{sign}{symbol}{number}" if first else f"{sign}{number}{symbol}"


    def split_evenly(amount: Decimal, parts: int) -> list[Decimal]:
        """Split ``amount`` into ``parts`` cent amounts that differ by at most a cent."""
        if parts < 1:
            raise MoneyError("parts must be at least 1")
        cents = int(quantize(amount) / CENT)
        base, extra = divmod(cents, parts)
        return [(base + (1 if i < extra else 0)) * CENT for i in range(parts)]
''')


LEGACY_CODES = {
    "WELCOME10": "HELLO10", "SUMMER2022": "SUN15", "SUMMERSALE": "SUN15", "BF2022": "FRIDAY20",
    "BLACKFRIDAY": "FRIDAY20", "XMAS22": "WINTER10", "NEWSLETTER": "HELLO10",
    "STUDENT": "CAMPUS10", "UNIDAYS": "CAMPUS10", "FREESHIP50": "SHIPFREE",
    "SPRING23": "SPRING15", "LOYAL5": "MEMBER5", "VIP5": "MEMBER5", "TRAIL20": "OUTDOOR20",
}

TEST_TOTALS_HEAD = block(r'''
    """Order summary: the figures on the checkout page, and their agreement with the charge."""

    from decimal import Decimal

    import pytest

    from shop.cart.models import Cart
    from shop.catalog.categories import Category
    from shop.checkout.shipping import FREE_STANDARD, STANDARD_DE, STANDARD_US
    from shop.checkout.totals import OrderSummary, SummaryError, build_summary, render_text
    from shop.payments.amounts import charge_amount
    from shop.promotions.coupons import Coupon, CouponError, CouponKind

    D = Decimal


    @pytest.fixture
    def cart_factory():
        def make(lines, currency="EUR", country="DE", region=None):
            cart = Cart(id="c-test", currency=currency, country=country, region=region)
            for sku, price, qty, *extra in lines:
                cart.add(sku, sku.replace("-", " ").title(), price, qty, **(extra[0] if extra else {}))
            return cart.freeze()

        return make


    @pytest.fixture
    def spring15():
        return Coupon(code="SPRING15", kind=CouponKind.PERCENT, value=D("15"), priority=10)


    @pytest.fixture
    def member5():
        return Coupon(code="MEMBER5", kind=CouponKind.PERCENT, value=D("5"), priority=20)


    @pytest.fixture
    def ten_off():
        return Coupon(code="TENOFF", kind=CouponKind.FIXED, value=D("10"), currency="EUR",
                      min_subtotal=D("50"))


    @pytest.fixture
    def ship_free():
        return Coupon(code="SHIPFREE", kind=CouponKind.FREE_SHIPPING)


    def test_empty_cart_is_rejected(cart_factory):
        with pytest.raises(SummaryError, match="is empty"):
            build_summary(cart_factory([]))


    def test_subtotal_is_the_sum_of_line_amounts(cart_factory):
        cart = cart_factory([("SOCK-MERINO-CHR", "12.90", 2), ("CAP-TRUCKER-OLV", "19.00", 1)])
        summary = build_summary(cart)
        assert [line.amount for line in summary.lines] == [D("25.80"), D("19.00")]
        assert summary.subtotal == D("44.80")
        assert summary.total == D("44.80")


    def test_percentage_coupon_on_one_line(cart_factory, spring15):
        cart = cart_factory([("JACKET-SHELL-NVY", "149.00", 1)])
        summary = build_summary(cart, coupons=[spring15])
        assert summary.lines[0].discount == D("22.35")
        assert summary.discount == D("22.35")
        assert summary.total == D("126.65")


    def test_gift_line_is_never_discounted(cart_factory, spring15):
        cart = cart_factory([("BOTTLE-STEEL-750", "27.50", 2),
                             ("KEYRING-LOGO", "0.00", 1, {"is_gift": True})])
        summary = build_summary(cart, coupons=[spring15])
        assert summary.lines[1].discount == D("0.00")
        assert summary.discount == D("8.25")


    def test_excluded_category_is_not_discounted(cart_factory):
        coupon = Coupon(code="SPRING15", kind=CouponKind.PERCENT, value=D("15"),
                        excluded_categories=frozenset({Category.GIFT_CARD}))
        cart = cart_factory([("GIFTCARD-50", "50.00", 1, {"category": Category.GIFT_CARD}),
                             ("TEE-ORGANIC-WHT", "24.00", 1)])
        summary = build_summary(cart, coupons=[coupon])
        assert [line.discount for line in summary.lines] == [D("0.00"), D("3.60")]


    def test_fixed_coupon_needs_its_minimum(cart_factory, ten_off):
        cart = cart_factory([("CAP-TRUCKER-OLV", "19.00", 2)])
        assert build_summary(cart, coupons=[ten_off]).discount == D("0.00")


    def test_fixed_coupon_applies_after_percentages(cart_factory, spring15, ten_off):
        cart = cart_factory([("BOOTS-TRAIL-42", "129.00", 1)])
        summary = build_summary(cart, coupons=[spring15, ten_off])
        assert summary.discount == D("29.35")
        assert summary.total == D("99.65")


    def test_free_shipping_coupon_waives_standard_shipping(cart_factory, ship_free):
        cart = cart_factory([("TEE-ORGANIC-WHT", "24.00", 1)])
        summary = build_summary(cart, coupons=[ship_free], shipping=STANDARD_DE)
        assert summary.shipping == D("0.00")
        assert summary.shipping_waived == D("4.90")
        assert summary.savings == D("4.90")


    def test_standard_shipping_is_free_over_the_threshold(cart_factory):
        cart = cart_factory([("FLEECE-GRID-RST", "64.00", 1)])
        assert build_summary(cart, shipping=STANDARD_DE).shipping == D("0.00")


    def test_vat_is_included_in_germany(cart_factory):
        summary = build_summary(cart_factory([("BACKPACK-28L-BLK", "119.00", 1)]))
        assert summary.tax_inclusive
        assert summary.tax == D("19.00")
        assert summary.total == D("119.00")


    def test_sales_tax_is_added_in_washington(cart_factory):
        cart = cart_factory([("BACKPACK-28L-BLK", "80.00", 1)], currency="USD", country="US",
                            region="WA")
        summary = build_summary(cart)
        assert not summary.tax_inclusive
        assert summary.tax == D("5.20")
        assert summary.total == D("85.20")


    def test_coupon_in_another_currency_is_rejected(cart_factory):
        coupon = Coupon(code="USD10", kind=CouponKind.FIXED, value=D("10"), currency="USD")
        with pytest.raises(SummaryError, match="is in USD"):
            build_summary(cart_factory([("TEE-ORGANIC-WHT", "24.00", 1)]), coupons=[coupon])


    def test_four_coupons_are_too_many(cart_factory, spring15, member5, ten_off, ship_free):
        extra = Coupon(code="CAMPUS10", kind=CouponKind.PERCENT, value=D("10"))
        with pytest.raises(CouponError, match="at most 3"):
            build_summary(cart_factory([("TEE-ORGANIC-WHT", "24.00", 1)]),
                          coupons=[spring15, member5, ship_free, extra])


    def test_free_shipping_coupon_does_not_cover_express(cart_factory, ship_free):
        from shop.checkout.shipping import EXPRESS_DE

        cart = cart_factory([("TEE-ORGANIC-WHT", "24.00", 1)])
        summary = build_summary(cart, coupons=[ship_free], shipping=EXPRESS_DE)
        assert summary.shipping == D("12.90")
        assert summary.shipping_waived == D("0.00")


    def test_fixed_coupon_never_makes_the_total_negative(cart_factory):
        coupon = Coupon(code="TWENTYOFF", kind=CouponKind.FIXED, value=D("20"), currency="EUR")
        summary = build_summary(cart_factory([("BANDANA-PRINT", "7.50", 2)]), coupons=[coupon])
        assert summary.discount == D("15.00")
        assert summary.total == D("0.00")


    def test_notes_are_passed_through(cart_factory):
        summary = build_summary(cart_factory([("SPORK-TI", "11.99", 1)]),
                                notes=["Coupon OLD5 has expired."])
        assert summary.notes == ("Coupon OLD5 has expired.",)


    @pytest.mark.parametrize("lines", [
    {{CARTS_NO_COUPON}}
    ])
    def test_summary_matches_charge_without_coupons(cart_factory, lines):
        cart = cart_factory(lines)
        summary = build_summary(cart, shipping=STANDARD_DE)
        assert summary.total == charge_amount(cart, shipping=STANDARD_DE).amount_decimal


    @pytest.mark.parametrize("price, qty", [
    {{SINGLE_LINES}}
    ])
    def test_single_line_percentage_matches_charge(cart_factory, spring15, price, qty):
        cart = cart_factory([("JACKET-SHELL-NVY", price, qty)])
        summary = build_summary(cart, coupons=[spring15], shipping=FREE_STANDARD)
        charge = charge_amount(cart, coupons=[spring15], shipping=FREE_STANDARD)
        assert summary.total == charge.amount_decimal


    def test_line_discounts_add_up_to_the_order_discount(cart_factory, spring15):
        cart = cart_factory([("SOCK-MERINO-CHR", "12.90", 3), ("CAP-TRUCKER-OLV", "19.00", 1),
                             ("TEE-ORGANIC-WHT", "24.00", 2)])
        summary = build_summary(cart, coupons=[spring15])
        assert sum(line.discount for line in summary.lines) == summary.discount


    def test_stacked_percentage_coupons_match_charge(cart_factory, spring15, member5):
        cart = cart_factory([("GLOVES-MERINO-S", "34.90", 2)])
        summary = build_summary(cart, coupons=[spring15, member5], shipping=FREE_STANDARD)
        charge = charge_amount(cart, coupons=[spring15, member5], shipping=FREE_STANDARD)
        assert summary.total == charge.amount_decimal


    def test_percentage_coupon_summary_matches_charge(cart_factory, spring15):
        """Bug #412: the checkout page and the card charge must agree to the cent."""
        cart = cart_factory([("MUG-ENAMEL-BLU", "9.99", 3), ("TOTE-CANVAS-NAT", "24.50", 1)])
        summary = build_summary(cart, coupons=[spring15], shipping=FREE_STANDARD)
        charge = charge_amount(cart, coupons=[spring15], shipping=FREE_STANDARD)
        assert summary.total == charge.amount_decimal


    def test_render_text_lists_every_line_and_the_total(cart_factory, spring15):
        cart = cart_factory([("MUG-ENAMEL-BLU", "9.99", 3), ("TOTE-CANVAS-NAT", "24.50", 1)])
        text = render_text(build_summary(cart, coupons=[spring15]))
        assert "3 x Mug Enamel Blu" in text
        assert "Discount (SPRING15)" in text
        assert text.splitlines()[-2].startswith("Total")


    def test_as_dict_round_trips(cart_factory, spring15, ship_free):
        cart = cart_factory([("BOOTS-TRAIL-42", "129.00", 1), ("SOCK-MERINO-CHR", "12.90", 2)])
        summary = build_summary(cart, coupons=[spring15, ship_free], shipping=STANDARD_DE)
        assert OrderSummary.from_dict(summary.as_dict()) == summary
''')

_SKUS = [("SOCK-MERINO-CHR", "12.90"), ("CAP-TRUCKER-OLV", "19.00"), ("TEE-ORGANIC-WHT", "24.00"),
         ("BOTTLE-STEEL-750", "27.50"), ("MUG-ENAMEL-BLU", "9.99"), ("TOTE-CANVAS-NAT", "24.50"),
         ("BEANIE-RIB-OAT", "19.90"), ("GLOVES-MERINO-S", "34.90"), ("HEADLAMP-350", "44.95"),
         ("FLEECE-GRID-RST", "64.00"), ("SHORTS-TRAIL-M", "49.99"), ("BANDANA-PRINT", "7.50"),
         ("CARABINER-HMS", "14.95"), ("SPORK-TI", "11.99"), ("DRYBAG-10L", "21.00")]


def _test_totals_py(rng: random.Random) -> str:
    carts = []
    for _ in range(12):
        chosen = rng.sample(_SKUS, rng.randint(1, 3))
        carts.append("    [" + ", ".join(f'("{sku}", "{price}", {rng.randint(1, 3)})'
                                          for sku, price in chosen) + "],")
    singles = []
    for _ in range(8):
        price = f"{rng.randint(5, 180)}.{rng.choice(['00', '50', '90', '95', '99'])}"
        singles.append(f'    ("{price}", {rng.randint(1, 4)}),')
    return (TEST_TOTALS_HEAD.replace("{{CARTS_NO_COUPON}}", "\n".join(carts))
            .replace("{{SINGLE_LINES}}", "\n".join(singles)))


def _test_ids(test_source: str) -> list[str]:
    """Test ids in file order, one per parametrized case, as pytest collects them."""
    ids, pending = [], 1
    lines = test_source.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("@pytest.mark.parametrize"):
            count = 0
            for follow in lines[number + 1:]:
                if follow.startswith("])"):
                    break
                count += 1
            pending = count
        elif line.startswith("def test_"):
            name = line[4:line.index("(")]
            ids.extend([name] * pending)
            pending = 1
    return ids


def _numbered(text: str, start: int = 1, end: int | None = None) -> str:
    lines = text.splitlines()
    end = len(lines) if end is None else min(end, len(lines))
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))


def _read_file_result(path: str, text: str, start: int = 1, end: int | None = None) -> str:
    total = len(text.splitlines())
    shown_end = total if end is None else min(end, total)
    header = (f"{path} ({total} lines)" if start == 1 and shown_end == total
              else f"{path} (lines {start}-{shown_end} of {total})")
    return header + "\n" + _numbered(text, start, shown_end)


def _grep(files: dict[str, str], pattern: str, extra: list[str]) -> str:
    regex = re.compile(pattern)
    hits = list(extra)
    for path, text in files.items():
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                hits.append(f"{path}:{number}:{line}")
    hits.sort(key=lambda hit: (hit.split(":", 1)[0], int(hit.split(":", 2)[1])))
    return "\n".join(hits) + f"\n\n{len(hits)} matches in {len({h.split(':', 1)[0] for h in hits})} files"


def _pytest_failure_block(test_source: str, test_name: str, fixtures: list[str],
                          error_lines: list[str]) -> tuple[str, int]:
    """pytest's long traceback for a test that fails on its last assert."""
    lines = test_source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {test_name}("))
    end = start + 1
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    body = lines[start:end]
    failing = end  # 1-based line number of the last line of the function
    out = [f" {test_name} ".center(80, "_"), ""]
    out += fixtures + [""]
    out += ["    " + line if line else "" for line in body[:-1]]
    out.append(">   " + body[-1])
    out += ["E   " + line for line in error_lines]
    out += ["", f"tests/checkout/test_totals.py:{failing}: AssertionError"]
    return "\n".join(out), failing


def _pytest_session(files: list[tuple[str, str]], summary: str, extra: str = "",
                    collected: int | None = None) -> str:
    total = sum(len(outcomes) for _, outcomes in files) if collected is None else collected
    out = [
        " test session starts ".center(80, "="),
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
        "rootdir: /workspace/shopfront",
        "configfile: pyproject.toml",
        "plugins: cov-5.0.0, xdist-3.6.1, freezegun-0.4.2",
        f"collected {total} items",
        "",
    ]
    done = 0
    for path, outcomes in files:
        done += len(outcomes)
        out.append(f"{path} {outcomes}".ljust(73) + f"[{100 * done // total:3d}%]")
    out.append("")
    if extra:
        out.append(extra)
    out.append(f" {summary} ".center(80, "="))
    return "\n".join(out)


CODING_SYSTEM = prose(
    """
    You are a software engineer working in the shopfront repository (Python 3.11, pytest),
    the code behind an online shop's cart, checkout, promotions, payments and invoicing.
    You can read files, search the code, edit files, run the tests and look at the diff.

    Work in small steps: reproduce the problem with a test, read the code involved, change as
    little as you can, and run the tests after every change. Follow the user's constraints
    exactly; if a constraint blocks the obvious fix, say so and find another. When you are
    done, report the cause, what you changed (files and functions), the test results, and
    anything you chose not to do.

    Repository conventions: money is always Decimal, never float; shop.money holds ZERO, CENT,
    quantize (half-up to the cent) and format_money; a cart is frozen before checkout reads it;
    tests live under tests/ in the same layout as shop/; code is formatted with black (line
    length 100) and checked with ruff and mypy in CI. Do not commit: the user reviews the diff.
    """
)

CODING_TOOLS = [
    tool(
        "read_file",
        "Read a text file from the repository. Returns the lines with their numbers (1-based), "
        "the whole file unless start_line/end_line narrow it.",
        {"path": {"type": "string", "description": "Path relative to the repository root."},
         "start_line": {"type": "integer", "minimum": 1},
         "end_line": {"type": "integer", "minimum": 1}},
        ["path"],
    ),
    tool(
        "grep",
        "Search file contents with a regular expression (ripgrep syntax). Returns "
        "path:line:text for every match, sorted by path.",
        {"pattern": {"type": "string"},
         "path": {"type": "string", "description": "File or folder to search (default '.')."},
         "glob": {"type": "string", "description": "Only files matching this glob, e.g. '*.py'."}},
        ["pattern"],
    ),
    tool(
        "edit_file",
        "Apply exact string replacements to one file, in order. Each old_string must occur "
        "exactly once in the file as it is when that edit runs. Returns a summary of the change.",
        {"path": {"type": "string"},
         "edits": {"type": "array", "minItems": 1, "items": {
             "type": "object",
             "properties": {"old_string": {"type": "string"}, "new_string": {"type": "string"}},
             "required": ["old_string", "new_string"], "additionalProperties": False}}},
        ["path", "edits"],
    ),
    tool(
        "run_tests",
        "Run pytest on the given paths or node ids and return its output (exit code included).",
        {"paths": {"type": "array", "items": {"type": "string"}},
         "extra_args": {"type": "array", "items": {"type": "string"},
                        "description": "More pytest arguments, e.g. ['-x', '--durations=5']."}},
        ["paths"],
    ),
    tool(
        "git_diff",
        "Show the uncommitted changes in the working tree (git diff), optionally for some paths "
        "only, and the list of changed files.",
        {"paths": {"type": "array", "items": {"type": "string"}}},
        [],
    ),
]

# The two edits the agent makes to shop/checkout/totals.py, as (old, new) pairs.
TOTALS_EDIT_1 = [
    ("from decimal import Decimal\n", "from decimal import ROUND_DOWN, Decimal\n"),
    ("from shop.money import ZERO, format_money, quantize\n",
     "from shop.money import CENT, ZERO, format_money, quantize\n"
     "from shop.payments.amounts import apply_percentage\n"),
    (indented('''
            lines = []
            for line in cart.lines:
                discount = ZERO
                remaining = line.amount
                for coupon in percent:
                    if coupon.applies_to(line):
                        cut = coupon.percent_off(remaining)
                        discount += cut
                        remaining -= cut
                lines.append(_summary_line(line, discount))
        '''),
     indented('''
            # Percentage coupons are rounded once per coupon, on the lines it covers, exactly
            # as the charge and the invoice do (INV-3); each line then shows its share.
            shares = _percent_discounts(cart.lines, percent, cart.currency)
            lines = [_summary_line(line, share) for line, share in zip(cart.lines, shares)]
        ''')),
    ("def _summary_line(line: LineItem, discount: Decimal) -> SummaryLine:\n",
     block('''
        def _percent_discounts(
            lines: Sequence[LineItem], coupons: Sequence[Coupon], currency: str
        ) -> list[Decimal]:
            """The discount each line shows from percentage coupons (in priority order).

            Each coupon is applied once to the subtotal of the lines it covers and rounded
            there, with the same helper ``charge_amount`` uses; the rounded amount is then
            spread over those lines so that the line discounts add up to it exactly.
            """
            shares = [ZERO] * len(lines)
            for coupon in coupons:
                covered = [i for i, line in enumerate(lines) if coupon.applies_to(line)]
                base = sum((lines[i].amount for i in covered), ZERO)
                if base == ZERO:
                    continue
                cut = apply_percentage(base, coupon.value, currency)
                for i, part in zip(covered, _allocate(cut, [lines[i].amount for i in covered])):
                    shares[i] += part
            return shares


        def _allocate(total: Decimal, weights: Sequence[Decimal]) -> list[Decimal]:
            """Split ``total`` (whole cents) in proportion to ``weights``; the parts sum to it.

            Largest remainder: each part is rounded down to the cent, then the cents left over
            go to the parts that lost the most, the earliest line first on ties.
            """
            weight_sum = sum(weights, ZERO)
            exact = [total * weight / weight_sum for weight in weights]
            parts = [value.quantize(CENT, rounding=ROUND_DOWN) for value in exact]
            leftover = int((total - sum(parts, ZERO)) / CENT)
            by_loss = sorted(range(len(parts)), key=lambda i: (parts[i] - exact[i], i))
            for i in by_loss[:leftover]:
                parts[i] += CENT
            return parts


        def _summary_line(line: LineItem, discount: Decimal) -> SummaryLine:
        ''')),
]

TOTALS_EDIT_2 = [
    (indented('''
            Each coupon is applied once to the subtotal of the lines it covers and rounded
            there, with the same helper ``charge_amount`` uses; the rounded amount is then
            spread over those lines so that the line discounts add up to it exactly.
            """
            shares = [ZERO] * len(lines)
            for coupon in coupons:
                covered = [i for i, line in enumerate(lines) if coupon.applies_to(line)]
                base = sum((lines[i].amount for i in covered), ZERO)
                if base == ZERO:
                    continue
                cut = apply_percentage(base, coupon.value, currency)
                for i, part in zip(covered, _allocate(cut, [lines[i].amount for i in covered])):
                    shares[i] += part
            return shares
        '''),
     indented('''
            Each coupon is applied once to what earlier coupons left of the lines it covers,
            and rounded there, with the same helper ``charge_amount`` uses (INV-3 rule 1); the
            rounded amount is then spread over those lines so that the line discounts add up
            to it exactly.
            """
            shares = [ZERO] * len(lines)
            left = [line.amount for line in lines]  # unrounded, as in charge_amount
            for coupon in coupons:
                covered = [i for i, line in enumerate(lines) if coupon.applies_to(line)]
                base = sum((left[i] for i in covered), ZERO)
                if base == ZERO:
                    continue
                cut = apply_percentage(base, coupon.value, currency)
                for i, part in zip(covered, _allocate(cut, [left[i] for i in covered])):
                    shares[i] += part
                for i in covered:
                    left[i] -= left[i] * coupon.value / 100
            return shares
        ''')),
]


def _apply_edits(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        if text.count(old) != 1:
            raise ValueError(f"edit does not match exactly once: {old[:60]!r}")
        text = text.replace(old, new)
    return text


def _diff_counts(before: str, after: str) -> tuple[int, int]:
    added = removed = 0
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _edit_summary(path: str, before: str, after: str, edits: int) -> str:
    added, removed = _diff_counts(before, after)
    return (f"Applied {edits} edit{'s' if edits > 1 else ''} to {path}: +{added} -{removed} lines; "
            f"the file now has {len(after.splitlines())} lines.")


def _git_diff(path: str, before: str, after: str, rng: random.Random) -> str:
    added, removed = _diff_counts(before, after)
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(),
                                fromfile=f"a/{path}", tofile=f"b/{path}", lineterm="", n=3)
    return (f" {path} | {added + removed} {'+' * min(added, 40)}{'-' * min(removed, 20)}\n"
            f" 1 file changed, {added} insertions(+), {removed} deletions(-)\n\n"
            f"diff --git a/{path} b/{path}\nindex {hex_id(rng, 7)}..{hex_id(rng, 7)} 100644\n"
            + "\n".join(diff) + "\n")


_COUPON_REPR = ("Coupon(code='{code}', kind=<CouponKind.PERCENT: 'percent'>, value=Decimal('{value}'), "
                "currency=None, min_subtotal=Decimal('0.00'), starts_at=None, ends_at=None, "
                "excluded_categories=frozenset(), only_skus=frozenset(), stackable=True, "
                "priority={priority}, max_uses_per_customer=None)")

_OTHER_GREP_HITS = [
    'shop/admin/reports.py:88:            "discount": str(row.discount_total),',
    "shop/admin/reports.py:131:def discount_report(start: date, end: date) -> list[dict[str, str]]:",
    'shop/admin/reports.py:140:        .annotate(discount_total=Sum("discount_minor"))',
    "shop/emails/order_confirmation.py:40:    if summary.discount:",
    'shop/emails/order_confirmation.py:41:        context["savings_line"] = f"You saved {format_money(summary.savings, summary.currency)}"',
    "shop/templates/checkout/summary.html:34:      {% if line.discount %}<span class=\"line-discount\">-{{ line.discount|money(summary.currency) }}</span>{% endif %}",
    "shop/templates/checkout/summary.html:52:      <dt>Discount</dt><dd>-{{ summary.discount|money(summary.currency) }}</dd>",
]

_SUITE_FILES = [("tests/cart/test_models.py", 24), ("tests/catalog/test_categories.py", 9),
                ("tests/catalog/test_skus.py", 17), ("tests/checkout/test_shipping.py", 14),
                ("tests/checkout/test_tax.py", 22), ("tests/checkout/test_totals.py", 0),
                ("tests/invoicing/test_invoice_lines.py", 19), ("tests/invoicing/test_render.py", 11),
                ("tests/payments/test_amounts.py", 31), ("tests/payments/test_capture.py", 12),
                ("tests/payments/test_refunds.py", 15), ("tests/promotions/test_coupon_book.py", 13),
                ("tests/promotions/test_coupons.py", 38), ("tests/test_money.py", 21)]


def _param_ids(test_source: str) -> list[str]:
    """pytest's verbose node ids for test_totals.py, parametrized cases included."""
    node_ids, params = [], []
    lines = test_source.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("@pytest.mark.parametrize"):
            names = line.split('"')[1]
            params = []
            for index, follow in enumerate(lines[number + 1:]):
                if follow.startswith("])"):
                    break
                if "," in names:  # ("73.90", 2) -> 73.90-2
                    price, qty = follow.strip().strip("(),").split(", ")
                    params.append(f"{price.strip(chr(34))}-{qty}")
                else:
                    params.append(f"{names}{index}")
        elif line.startswith("def test_"):
            name = line[4:line.index("(")]
            node_ids.extend([f"{name}[{p}]" for p in params] or [name])
            params = []
    return node_ids


def _checkout_run(test_source: str, failing: str | None, fixtures: list[str],
                  error_lines: list[str], seconds: float, verbose: bool = False) -> str:
    ids = _test_ids(test_source)
    outcomes = "".join("F" if test == failing else "." for test in ids)
    files = [("tests/checkout/test_shipping.py", "." * 14), ("tests/checkout/test_tax.py", "." * 22),
             ("tests/checkout/test_totals.py", outcomes)]
    total = 14 + 22 + len(ids)
    if verbose:
        node_ids = _param_ids(test_source)
        files = []
        total = len(node_ids)
    if failing is None:
        return _pytest_session(files, f"{total} passed in {seconds:.2f}s")
    block_text, line = _pytest_failure_block(test_source, failing, fixtures, error_lines)
    failures = (" FAILURES ".center(80, "=") + "\n" + block_text + "\n" +
                " short test summary info ".center(80, "=") + "\n" +
                f"FAILED tests/checkout/test_totals.py::{failing} - {error_lines[0].strip()}")
    session = _pytest_session(files, f"1 failed, {total - 1} passed in {seconds:.2f}s",
                              extra=failures, collected=total)
    if verbose:
        rows = []
        for number, node in enumerate(node_ids, start=1):
            outcome = "FAILED" if node == failing else "PASSED"
            row = f"tests/checkout/test_totals.py::{node} {outcome}"
            rows.append((row.ljust(72) if len(row) < 72 else row) + f" [{100 * number // total:3d}%]")
        head, _, tail = session.partition("\n\n" + " FAILURES ".center(80, "="))
        head = head.replace("collected", "cachedir: .pytest_cache\ncollected", 1)
        session = head + "\n" + "\n".join(rows) + "\n\n" + " FAILURES ".center(80, "=") + tail
    return session + "\n(exit code 1)"


def build_coding() -> Transcript:
    t = Transcript("coding", seed=412, system_prompt=CODING_SYSTEM, tools=CODING_TOOLS)
    rng = t.rng
    legacy = [f'"{old}": "{new}"' for old, new in LEGACY_CODES.items()]
    coupons_py = COUPONS_PY.replace(
        "{{LEGACY_CODES}}", _python_table("LEGACY_CODES", "dict[str, str]", legacy, 3, "    "))
    amounts_py = AMOUNTS_PY.replace(
        "{{CURRENCY_TABLE}}",
        _python_table("CURRENCY_EXPONENTS", "dict[str, int]",
                      [f'"{code}": {exp}' for code, exp in _CURRENCIES.items()], 8))
    totals_v0 = TOTALS_PY.replace(
        "{{VAT_COUNTRIES}}",
        _python_table("TAX_INCLUSIVE_COUNTRIES", "frozenset[str]",
                      [f'"{code}"' for code in _VAT_COUNTRIES], 10))
    totals_v1 = _apply_edits(totals_v0, TOTALS_EDIT_1)
    totals_v2 = _apply_edits(totals_v1, TOTALS_EDIT_2)
    tests_py = _test_totals_py(rng)
    money_py = MONEY_PY.replace(
        "{{MONEY_FORMATS}}",
        _python_table("MONEY_FORMATS", "dict[str, tuple[str, bool, str, str]]",
                      [f'"{code}": (' + ", ".join(json.dumps(part) for part in fmt) + ")"
                       for code, fmt in _MONEY_FORMATS.items()], 2))

    t.user(prose(
        f"""
        Bug #412 from support: customers who use a percentage coupon are sometimes charged one
        cent more than the order summary showed them. The ticket's example: 3 x enamel mug at
        EUR 9.99 and 1 x canvas tote at EUR 24.50 with SPRING15; the checkout page said
        EUR 46.29 and the card was charged EUR 46.30. Finance says the charged amount is the
        right one, it matches the invoice. There is already a failing test:
        tests/checkout/test_totals.py::test_percentage_coupon_summary_matches_charge.

        Please fix it so the summary and the charge always agree. One constraint:
        {CODING_CONSTRAINT} (anything under shop/payments/). It is in PCI audit scope and
        every change there needs a separate review we cannot get this sprint.
        """
    ))
    spring = _COUPON_REPR.format(code="SPRING15", value="15", priority=10)
    member = _COUPON_REPR.format(code="MEMBER5", value="5", priority=20)
    factory = "cart_factory = <function cart_factory.<locals>.make at 0x7f3a2c1d8e00>"
    t.turn(None, Call("run_tests", {"paths": ["tests/checkout"], "extra_args": []}, _checkout_run(
        tests_py, "test_percentage_coupon_summary_matches_charge", [factory, f"spring15 = {spring}"],
        ["    AssertionError: assert Decimal('46.29') == Decimal('46.30')",
         "     +  where Decimal('46.29') = OrderSummary(currency='EUR', lines=(SummaryLine("
         "line_id=2291, sku='MUG-ENAMEL-BLU', title='Mug Enamel Blu', qty=3, unit_price=Decimal("
         "'9.99'), amount=Decimal('29.97'), discount=Decimal('4.50'), total=Decimal('25.47'), "
         "is_gift=False), SummaryLine(...)), subtotal=Decimal('54.47'), discount=Decimal('8.18'), "
         "shipping=Decimal('0.00'), tax=Decimal('7.39'), total=Decimal('46.29'), ...).total",
         "     +  and   Decimal('46.30') = ChargeAmount(currency='EUR', minor=4630, breakdown=(("
         "'subtotal', 5447), ('percent_coupons', -817), ('fixed_coupon', 0), ('shipping', 0), "
         "('tax', 0))).amount_decimal"], 0.94)))
    t.turn(None, Call("grep", {"pattern": "percent_off|apply_percentage|discount", "path": "shop"},
                      _grep({"shop/cart/models.py": CART_MODELS_PY,
                             "shop/checkout/totals.py": totals_v0,
                             "shop/invoicing/lines.py": INVOICE_LINES_PY,
                             "shop/payments/amounts.py": amounts_py,
                             "shop/promotions/coupons.py": coupons_py},
                            r"percent_off|apply_percentage|discount", _OTHER_GREP_HITS)))
    t.turn(None, Call("read_file", {"path": "shop/checkout/totals.py"},
                      _read_file_result("shop/checkout/totals.py", totals_v0)))
    t.turn(
        prose(
            """
            build_summary rounds every percentage coupon line by line (coupon.percent_off on
            each line's amount). Reading the coupon code and the cart model it relies on.
            """
        ),
        Call("read_file", {"path": "shop/promotions/coupons.py"},
             _read_file_result("shop/promotions/coupons.py", coupons_py)),
        Call("read_file", {"path": "shop/cart/models.py"},
             _read_file_result("shop/cart/models.py", CART_MODELS_PY)),
    )
    t.turn(
        prose(
            """
            The grep shows the invoice (shop/invoicing/lines.py) calls apply_percentage once per
            coupon, not per line. Reading how charge_amount computes the amount charged, and the
            invoice code next to it.
            """
        ),
        Call("read_file", {"path": "shop/payments/amounts.py"},
             _read_file_result("shop/payments/amounts.py", amounts_py)),
        Call("read_file", {"path": "shop/invoicing/lines.py"},
             _read_file_result("shop/invoicing/lines.py", INVOICE_LINES_PY)),
    )
    t.turn(
        prose(
            f"""
            That is the mismatch. charge_amount follows INV-3: each percentage coupon is
            applied once to the subtotal of the lines it covers and rounded half-up there:
            15 % of 54.47 = 8.1705, so 8.17 off and 46.30 charged. build_summary rounds per
            line: 4.4955 becomes 4.50 and 3.675 becomes 3.68, so 8.18 off and 46.29 shown.
            The charge matches the invoice, and the user said {CODING_CONSTRAINT}, so the
            summary must follow the charge. Plan: in totals.py, compute each coupon once with
            apply_percentage (importing it leaves the module untouched) and spread the rounded
            amount over the lines for display. First, what the tests expect of line
            discounts, and which helpers shop.money offers for cent arithmetic.
            """
        ),
        Call("read_file", {"path": "tests/checkout/test_totals.py"},
             _read_file_result("tests/checkout/test_totals.py", tests_py)),
        Call("read_file", {"path": "shop/money.py"}, _read_file_result("shop/money.py", money_py)),
    )
    t.turn(
        prose(
            """
            test_line_discounts_add_up_to_the_order_discount needs the per-line figures to sum
            to the order discount, so the rounded coupon amount is split over its lines by
            largest remainder.
            """
        ),
        Call("edit_file", {"path": "shop/checkout/totals.py",
                           "edits": [{"old_string": old, "new_string": new}
                                     for old, new in TOTALS_EDIT_1]},
             _edit_summary("shop/checkout/totals.py", totals_v0, totals_v1, len(TOTALS_EDIT_1))),
    )
    t.turn(None, Call("run_tests", {"paths": ["tests/checkout/test_totals.py"], "extra_args": ["-v"]},
                      _checkout_run(tests_py, "test_stacked_percentage_coupons_match_charge",
        [factory, f"spring15 = {spring}", f"member5 = {member}"],
        ["    AssertionError: assert Decimal('55.84') == Decimal('56.36')",
         "     +  where Decimal('55.84') = OrderSummary(currency='EUR', lines=(SummaryLine("
         "line_id=2377, sku='GLOVES-MERINO-S', title='Gloves Merino S', qty=2, unit_price="
         "Decimal('34.90'), amount=Decimal('69.80'), discount=Decimal('13.96'), total=Decimal("
         "'55.84'), is_gift=False),), subtotal=Decimal('69.80'), discount=Decimal('13.96'), "
         "shipping=Decimal('0.00'), tax=Decimal('8.92'), total=Decimal('55.84'), ...).total",
         "     +  and   Decimal('56.36') = ChargeAmount(currency='EUR', minor=5636, breakdown=(("
         "'subtotal', 6980), ('percent_coupons', -1344), ('fixed_coupon', 0), ('shipping', 0), "
         "('tax', 0))).amount_decimal"], 0.61, verbose=True)))
    charge_start = amounts_py.splitlines().index("def charge_amount(") + 1
    t.turn(
        prose(
            """
            Bug #412's test passes now, but the stacked case broke: SPRING15 then MEMBER5 gives
            55.84 on the page and 56.36 charged. My version applies MEMBER5 to the full line
            amount. Re-reading charge_amount for its exact stacking rule.
            """
        ),
        Call("read_file", {"path": "shop/payments/amounts.py", "start_line": charge_start,
                           "end_line": charge_start + 52},
             _read_file_result("shop/payments/amounts.py", amounts_py, charge_start,
                               charge_start + 52)),
    )
    t.turn(
        prose(
            """
            charge_amount applies each later coupon to what the earlier ones left of a line,
            unrounded (left -= left * value / 100), and rounds only the coupon's total.
            Mirroring that in _percent_discounts.
            """
        ),
        Call("edit_file", {"path": "shop/checkout/totals.py",
                           "edits": [{"old_string": old, "new_string": new}
                                     for old, new in TOTALS_EDIT_2]},
             _edit_summary("shop/checkout/totals.py", totals_v1, totals_v2, len(TOTALS_EDIT_2))),
    )
    suite = []
    for path, count in _SUITE_FILES:
        suite.append((path, "." * (count or len(_test_ids(tests_py)))))
    total = sum(len(outcomes) for _, outcomes in suite)
    durations = "\n".join([
        " slowest 5 durations ".center(80, "="),
        "0.41s call     tests/promotions/test_coupon_book.py::test_load_real_config",
        "0.22s call     tests/invoicing/test_render.py::test_pdf_render_smoke",
        "0.09s setup    tests/catalog/test_skus.py::test_sku_index_covers_catalog",
        "0.05s call     tests/payments/test_capture.py::test_capture_plan_many_shipments",
        "0.03s call     tests/checkout/test_tax.py::test_every_vat_country_has_a_rate",
    ])
    t.turn(None, Call("run_tests", {"paths": ["tests"], "extra_args": ["--durations=5"]},
                      _pytest_session(suite, f"{total} passed in 3.87s", extra=durations)))
    t.turn(None, Call("git_diff", {}, _git_diff("shop/checkout/totals.py", totals_v0, totals_v2, rng)))
    t.answer(prose(
        f"""
        Fixed bug #412.

        **Cause.** The checkout summary and the charge rounded percentage coupons differently.
        `charge_amount` (shop/payments/amounts.py) follows INV-3: each percentage coupon is
        applied once to the subtotal of the lines it covers and rounded there (15 % of 54.47 is
        8.1705, so 8.17 off and 46.30 charged). `build_summary` (shop/checkout/totals.py) applied
        the coupon to each line and rounded each line (4.4955 to 4.50 and 3.675 to 3.68, so
        8.18 off and 46.29 shown). The invoice uses the charge's rule, so the summary was wrong.

        **Change**, in shop/checkout/totals.py only:
        - `build_summary` takes its percentage discounts from a new `_percent_discounts`, which
          applies the coupons in priority order, each once to what earlier coupons left of the
          lines it covers, with the payments module's own `apply_percentage` (imported, not
          changed): the same arithmetic as `charge_amount`.
        - A new `_allocate` spreads each rounded coupon amount over its lines by largest
          remainder, so the line discounts on the page still add up to the order discount
          (4.50 + 3.67 = 8.17 in the ticket's example).

        **Tests.** The bug's test passes. My first version broke
        test_stacked_percentage_coupons_match_charge (it applied MEMBER5 to the full amount
        rather than to what SPRING15 left); the second edit fixed that. Full suite: {total}
        passed.

        **Not done.** As asked, I did not modify the payments module: the diff touches
        shop/checkout/totals.py only. Worth a separate ticket: `Coupon.percent_off` is no longer
        used by checkout, and a property test comparing summary and charge over random carts and
        coupon stacks would catch this kind of drift early.
        """
    ))
    return t


# =============================================================================================
# research: a 40-lap literature search with a late constraint and a tool that keeps failing
#
# The goal comes in the first user message; a constraint (cite only sources published in
# 2021 or later) comes in a second user message before lap 2. fetch_pdf fails on the same
# paywalled URL at laps 7, 17 and 31: the agent forgot the earlier failures. Older sources
# turn up in searches and one is read; the final report cites only 2021-and-later ones.
# Every source, organisation, journal and person here is invented for the course; DOIs use
# the 10.5555 test prefix and web addresses the reserved .example domain.
# =============================================================================================

RESEARCH_CONSTRAINT = "published in 2021 or later"
PAYWALL_MESSAGE = (
    "The publisher returned 403 Forbidden: the full text requires a subscription or a "
    "one-time purchase (EUR 39.95). Only the abstract page is public."
)
RESEARCH_FAILURE = "full text requires a subscription"


@dataclass
class Source:
    """One invented publication the research agent can find, read and cite."""

    key: str
    year: int
    date: str  # publication date as the page shows it
    authors: str
    title: str
    venue: str
    url: str
    kind: str  # article, report, landing, blog, guide, review
    snippet: str
    abstract: str
    findings: list[str]
    discussion: str = ""
    doi: str | None = None
    sites: int = 0
    design_range: tuple[int, int] = (-22, -29)
    cop_curve: tuple[float, float] = (3.3, 0.05)
    backup: float = 0.06


SOURCES: dict[str, Source] = {s.key: s for s in [
    Source(
        "marsh2023", 2023, "2023-05-16", "Marsh, D., Okonkwo, A. and Lindahl, P.",
        "Cold-climate heat pumps in occupied homes: two heating seasons of monitoring in 48 houses",
        "Energy and Buildings Review 41(3), 201-219",
        "https://journals.ebr.example/articles/2023/0412", "article",
        "Two winters of sub-hourly monitoring in 48 occupied houses with design temperatures "
        "between -22 and -29 °C; seasonal COP including backup, and when backup heat runs.",
        "We monitored 48 occupied single-family houses heated by variable-speed cold-climate "
        "air-source heat pumps through the winters of 2020-21 and 2021-22. Heat delivered and "
        "electricity used were metered every minute, including electric resistance backup. "
        "Seasonal COP per house ranged from 2.3 to 3.3 (median 2.8). Backup heat supplied a "
        "median of 6 % of annual heat, but more than 20 % in three houses whose heat pumps "
        "were sized below 80 % of the design heat load.",
        ["Seasonal COP per house, backup included, ranged from 2.3 to 3.3, with a median of 2.8.",
         "At outdoor temperatures around -20 °C the mean hourly COP across houses was 1.8; no "
         "unit's hourly COP fell below 1.2 while the compressor was running.",
         "Electric resistance backup supplied a median of 6 % of annual heat (range 0-24 %). "
         "All three houses above 20 % had heat pumps sized below 80 % of the design heat load.",
         "Complaints about cold rooms came almost entirely from houses served by a single "
         "ductless indoor unit."],
        "Sizing against the design heat load, not against the old furnace, was the strongest "
        "predictor of low backup use. Ductless single-head installations were cheap but left "
        "bedrooms 2-4 K colder than the living area on design days.",
        doi="10.5555/ebr.2023.0412", sites=48, design_range=(-22, -29), cop_curve=(3.35, 0.052),
        backup=0.06,
    ),
    Source(
        "npeo2021", 2021, "2021-09-30", "Northern Plains Energy Office",
        "Field performance of variable-speed ductless heat pumps in a cold continental climate "
        "(report NPEO-2021-07)",
        "Northern Plains Energy Office, technical report",
        "https://energy.northernplains.example/reports/npeo-2021-07", "report",
        "State report on 31 ductless variable-speed heat pumps monitored for a full winter; "
        "capacity at -25 °C, defrost energy, seasonal COP.",
        "Thirty-one ductless variable-speed heat pumps in homes with design temperatures of "
        "-26 to -31 °C were monitored from October 2020 to April 2021. Seasonal COP ranged "
        "from 2.4 to 3.1. At -25 °C the units delivered 52-68 % of their capacity at 8.3 °C, "
        "and defrost used 6-9 % of winter electricity.",
        ["Seasonal COP (heat pump only, backup excluded) ranged from 2.4 to 3.1 across the 31 "
         "homes.",
         "Measured capacity at -25 °C was 52-68 % of the capacity the same units delivered at "
         "8.3 °C.",
         "Defrost cycles used 6-9 % of winter electricity.",
         "The lowest hourly COP recorded was 1.3, at -31 °C."],
        "Ductless systems worked best in open-plan homes; homes with closed-off bedrooms kept "
        "their baseboard heaters and used them more than planned.",
        sites=31, design_range=(-26, -31), cop_curve=(3.2, 0.055), backup=0.10,
    ),
    Source(
        "glec2018", 2018, "2018-03-02", "Great Lakes Energy Collaborative",
        "Cold climate air source heat pump field assessment",
        "Great Lakes Energy Collaborative, final report",
        "https://glec.example/library/ccashp-field-assessment-2018", "report",
        "An early field assessment of 20 cold-climate heat pumps; seasonal COP 2.1-2.7 and "
        "heavy reliance on backup heat in the coldest months.",
        "Twenty cold-climate heat pumps installed in 2015-16 were monitored for two winters. "
        "Seasonal COP ranged from 2.1 to 2.7, and backup heat supplied up to 35 % of heat in "
        "January.",
        ["Seasonal COP ranged from 2.1 to 2.7.",
         "Backup heat supplied up to 35 % of January heat at the coldest sites."],
        sites=20, design_range=(-23, -30), cop_curve=(2.9, 0.05), backup=0.18,
    ),
    Source(
        "hollis2022", 2022, "2022-04-11", "Hollis, R. and Varga, E.",
        "Performance maps of six cold-climate air-source heat pumps from +10 to -30 °C",
        "Journal of Building Thermal Systems 18(2), 77-95",
        "https://jbts.example/article/2022/0218", "article",
        "Psychrometric-chamber tests of six variable-speed cold-climate heat pumps at eight "
        "outdoor temperatures down to -30 °C, at full and part load.",
        "Six variable-speed cold-climate heat pumps were tested in psychrometric chambers at "
        "outdoor temperatures from +10 to -30 °C. At -15 °C the COP ranged from 1.9 to 2.5 and "
        "at -25 °C from 1.4 to 1.8. Maximum capacity at -25 °C was 58-81 % of the capacity at "
        "8.3 °C. Two units shut down on low-ambient protection below -28 °C.",
        ["At -15 °C the COP at maximum capacity ranged from 1.9 to 2.5; at -25 °C from 1.4 to 1.8.",
         "Maximum capacity at -25 °C was 58-81 % of the capacity at 8.3 °C.",
         "Two of the six units stopped on low-ambient protection below -28 °C.",
         "The spread between units at -25 °C was larger than the spread at +5 °C: published "
         "ratings at 8.3 °C do not rank the units correctly for cold sites."],
        "Selecting a unit for a cold site requires data at the site's design temperature; the "
        "-15 °C rating point is not enough to tell which units keep their capacity further down.",
        doi="10.5555/jbts.2022.0218",
    ),
    Source(
        "lindqvist2022", 2022, "2022-11-03", "Lindqvist, M., Berg, S., Aalto, J. and Haugen, K.",
        "Field performance of 212 air-to-water heat pumps in Nordic single-family houses",
        "Nordic Journal of Building Physics 9(4), 311-334",
        "https://www.njbp.example/doi/10.5555/njbp.2022.0931", "landing",
        "The largest Nordic field study of air-to-water heat pumps: 212 houses, seasonal "
        "performance factor by climate zone and emitter temperature.",
        "We analysed one to three years of monitoring data from 212 air-to-water heat pumps in "
        "single-family houses in four Nordic climate zones. The median seasonal performance "
        "factor including backup heat and domestic hot water was 2.7 (range 2.0-3.6). SPF "
        "fell by about 0.1 for every 2 K lower design temperature, and houses whose radiators "
        "needed supply water above 55 °C had a median SPF 0.4 lower than the rest.",
        [], doi="10.5555/njbp.2022.0931",
    ),
    Source(
        "nhpa2022", 2022, "2022-10-12", "Nordic Heat Pump Association (news desk)",
        "What 212 heat pumps taught us: notes from the Nordic field-study session",
        "Nordic Heat Pump Association blog",
        "https://nordicheatpumps.example/news/2022/10/212-heat-pumps", "blog",
        "Conference write-up of the Lindqvist et al. Nordic field study, with the results by "
        "climate zone shown in the talk.",
        "",
        ["In the coldest of the four zones (design temperatures around -25 °C) the median SPF "
         "was 2.4, against 2.9 in the mildest zone.",
         "Electric backup supplied about 12 % of annual heat in the coldest zone.",
         "Houses that replaced two or three of the smallest radiators, so the system could run "
         "at 45-50 °C supply water, gained 0.3-0.5 in SPF."],
    ),
    Source(
        "meridian2024", 2024, "2024-02-20", "Meridian Evaluation Group for Lakeshore Power & Light",
        "Whole-home heat pump retrofit program: impact evaluation, program years 2021-2023",
        "Lakeshore Power & Light, evaluation report",
        "https://www.lakeshorepower.example/evaluations/hp-retrofit-py2021-2023", "report",
        "Utility program evaluation of 1,140 whole-home heat pump retrofits, with a metered "
        "subsample of 96 homes; backup heat share, controls, electrical upgrades.",
        "The program replaced oil, propane and electric-resistance heating with cold-climate "
        "heat pumps in 1,140 homes. In a metered subsample of 96 homes the seasonal COP "
        "averaged 2.6 (range 2.0-3.3) and resistance backup supplied 9 % of heat on average.",
        ["Metered seasonal COP averaged 2.6 (range 2.0-3.3) in the 96-home subsample.",
         "Resistance backup supplied 9 % of heat on average, but 17 % in homes where the "
         "auxiliary-heat lockout was left at the installer default of -10 °C.",
         "22 % of installations had controls misconfigured at the first inspection, most often "
         "backup heat staged on too early.",
         "14 % of homes needed an electrical service upgrade before installation."],
        "Controls set-up was the cheapest lever: correcting lockout and staging settings at a "
        "follow-up visit cut backup use by roughly half in the homes that needed it.",
        sites=96, design_range=(-20, -27), cop_curve=(3.1, 0.05), backup=0.09,
    ),
    Source(
        "sorensen2019", 2019, "2019-06-01", "Sorensen, T. and Abara, N.",
        "Air-source heat pumps in cold climates: a review of field evidence",
        "Renewable Heat Review 11, 55-81",
        "https://rhr.example/2019/sorensen-abara-review", "review",
        "Review of 27 field studies of air-source heat pumps in cold climates published "
        "2008-2018.",
        "We reviewed 27 field studies published between 2008 and 2018. Reported seasonal COPs "
        "ranged from 1.6 to 3.2; most studies did not meter backup heat separately.",
        ["Reported seasonal COPs ranged from 1.6 to 3.2 across 27 studies.",
         "Fewer than half of the studies metered backup heat separately."],
        doi="10.5555/rhr.2019.0055",
    ),
    Source(
        "park2021", 2021, "2021-07-14", "Park, J., Demir, S. and Novak, T.",
        "Measured defrost penalties of variable-speed air-source heat pumps in cold climates",
        "Proceedings of the International Conference on Heat Pump Systems 2021, paper 118",
        "https://ichps.example/2021/papers/118", "article",
        "Field measurements of defrost energy in 22 heat pumps; when defrost costs most and "
        "what demand-defrost control saves.",
        "Defrost energy was measured on 22 variable-speed heat pumps over one winter. Defrost "
        "used 4-12 % of heating-season electricity, most of it between -5 and +2 °C in humid "
        "weather. Demand-defrost controls used 35-45 % less defrost energy than timed defrost.",
        ["Defrost used 4-12 % of heating-season electricity.",
         "Most defrost energy was spent between -5 and +2 °C at high humidity, not in the "
         "coldest weather, when the outdoor air holds little moisture.",
         "Demand-defrost control used 35-45 % less defrost energy than timed defrost."],
        "Outdoor units should be raised above snow level and kept clear of roof run-off; two "
        "units that iced up from dripping gutters had the study's worst defrost penalties.",
        doi="10.5555/ichps.2021.118", sites=22, design_range=(-18, -27), cop_curve=(3.3, 0.05),
        backup=0.05,
    ),
    Source(
        "feld2020", 2020, "2021-03", "Feld, A., Ito, K. and Marchetti, L.",
        "Ducted cold-climate heat pumps in existing homes: eight case studies",
        "Residential Building Systems 33(1), 9-27",
        "https://rbs.example/article/2021/33-1-9", "article",
        "Eight case studies of ducted cold-climate heat pumps replacing furnaces; duct "
        "condition and airflow.",
        "Eight ducted cold-climate heat pumps replacing gas and oil furnaces were monitored. "
        "Leaky or undersized ducts lowered delivered capacity by up to 20 %.",
        ["Leaky or undersized ducts lowered delivered capacity by up to 20 %."],
        doi="10.5555/rbs.2021.0009",
    ),
    Source(
        "greaves2022", 2022, "2022-02-14", "Greaves, L., Amari, K. and Holt, B.",
        "Installation practices and performance gaps: a survey of 612 heat pump installers",
        "Building Services Practice 12(1), 14-31",
        "https://bsp.example/articles/2022/0107", "article",
        "Survey of 612 installers on load calculation, sizing, commissioning and callbacks.",
        "We surveyed 612 heat pump installers about how they size, install and commission "
        "systems in cold climates. Only 38 % carry out a room-by-room heat-loss calculation on "
        "every job, and 41 % usually size the heat pump to match the furnace it replaces.",
        ["38 % of installers carry out a room-by-room heat-loss calculation on every job; 41 % "
         "usually size the heat pump to match the old furnace.",
         "Commissioning checks (refrigerant charge by weight, airflow measurement) were "
         "reported on 54 % of jobs.",
         "Installers with cold-climate training reported callbacks on 7 % of jobs, against "
         "15 % for those without it."],
        "Programs that require a load calculation and a commissioning sheet before paying a "
        "rebate close most of the gap between good and typical practice.",
        doi="10.5555/bsp.2022.0107",
    ),
    Source(
        "ruiz2023", 2023, "2023-08-29", "Ruiz, C., Petrov, I. and Andersen, H.",
        "Retrofitting a 1960s 48-unit apartment block with central air-to-water heat pumps: "
        "the first two winters",
        "Case Studies in Building Energy 7, 100233",
        "https://csbe.example/article/2023/100233", "article",
        "Case study of a cascade of four air-to-water heat pumps in a 48-unit block with a "
        "design temperature of -22 °C; gas boiler kept for peaks.",
        "A cascade of four air-to-water heat pumps replaced most of the gas heating of a "
        "48-unit apartment block (design temperature -22 °C). Over two winters the space-"
        "heating SCOP was 2.7 (2.3 including domestic hot water); the retained gas boiler "
        "covered 8 % of heat, and site energy fell by 61 %.",
        ["Space-heating SCOP was 2.7, or 2.3 including domestic hot water.",
         "The retained gas boiler covered 8 % of annual heat, all of it on days below -15 °C.",
         "Site energy use fell by 61 % against the three winters before the retrofit.",
         "Supply water temperature was lowered from 80 to 55 °C after the radiators in 30 % of "
         "the flats were replaced."],
        "Keeping the old boiler for peaks let the heat pumps be sized for 70 % of the design "
        "load, which cut the capital cost by about a quarter.",
        doi="10.5555/csbe.2023.100233", sites=1, design_range=(-22, -22),
        cop_curve=(3.15, 0.045), backup=0.08,
    ),
    Source(
        "tran2023", 2023, "2023-03-08", "Tran, M.",
        "Low-ambient capacity: what the ratings don't tell you",
        "HVAC Practice Journal, March 2023",
        "https://hvacpractice.example/2023/03/low-ambient-capacity", "blog",
        "Trade-journal article on reading capacity tables for cold sites and sizing at the "
        "design temperature.",
        "",
        ["Nameplate capacity is measured at +8.3 °C; at -25 °C many cold-climate units deliver "
         "55-75 % of it.",
         "Size so that the unit's maximum capacity at the design temperature covers at least "
         "90 % of the design heat load; variable-speed compressors keep the mild-weather "
         "penalty of that sizing small."],
    ),
    Source(
        "cchpc2023", 2023, "2023-10-02", "Cold Climate Heat Pump Council",
        "Sizing and selecting cold-climate heat pumps: design guide, 2nd edition",
        "Design guide series, no. 4", "https://cchpc.example/guides/sizing-2nd-edition",
        "guide",
        "Industry design guide: heat-loss calculation, balance point, choosing capacity at "
        "the design temperature, backup heat and lockout settings.",
        "",
        ["Start from a room-by-room heat-loss calculation; never size from the old equipment.",
         "Choose a unit whose maximum capacity at the design temperature meets the design load, "
         "or plan and size the backup heat explicitly.",
         "Set the auxiliary-heat lockout at or below -15 °C unless the unit is "
         "capacity-limited above that; staging backup on a timer wastes energy."],
    ),
    Source(
        "whitcombe2024", 2024, "2024-01-22", "Whitcombe, R. and Osei, E.",
        "Electrical service upgrades for residential heat pump retrofits: costs and alternatives",
        "Energy Policy Letters 6, 45-58",
        "https://epl.example/articles/2024/0045", "article",
        "Costs of electrical service upgrades in 410 heat pump retrofits and how often load "
        "management avoided them.",
        "We collected costs for 410 heat pump retrofits that needed more electrical capacity. "
        "The median service upgrade cost USD 2,300 (range 900-6,800). Load-management devices "
        "avoided a service upgrade in 40 % of the cases where they were tried.",
        ["The median service upgrade cost USD 2,300 (range 900-6,800).",
         "Load-management devices (circuit sharing, smart panels) avoided the upgrade in 40 % "
         "of the cases where they were tried.",
         "Homes with 60-100 A services were the most affected."],
        doi="10.5555/epl.2024.0045",
    ),
    Source(
        "kowalczyk2022", 2022, "2022-06-07", "Kowalczyk, A. and Brennan, F.",
        "Heat pumps and indoor comfort in retrofitted social housing",
        "Housing and Energy Research 15(2), 133-150",
        "https://her.example/articles/2022/0133", "article",
        "86 social-housing homes after heat pump retrofits: comfort, satisfaction, and how "
        "thermostat habits drive backup heat.",
        "We followed 86 social-housing homes for a year after heat pump retrofits. 78 % of "
        "tenants who received a home visit and written guidance were satisfied with comfort. "
        "Deep night setbacks triggered backup heat during morning recovery; homes kept at a "
        "steady setpoint used about half as much backup heat.",
        ["78 % of tenants who had a home visit and written guidance were satisfied, against "
         "52 % of those who only received the manual.",
         "Deep night setbacks triggered backup heat during morning recovery; steady setpoints "
         "cut backup use by about half."],
        "Tenant guidance should be part of the installation contract, not an afterthought.",
        doi="10.5555/her.2022.0133", sites=86, design_range=(-18, -24), cop_curve=(3.25, 0.05),
        backup=0.07,
    ),
    Source(
        "agri2023", 2023, "2023-11-15", "Aurora Grid Research Institute",
        "Winter peak impacts of residential heat pumps",
        "Aurora Grid Research Institute, research report",
        "https://agri.example/reports/2023/winter-peak-heat-pumps", "report",
        "How much residential heat pumps add to winter peak demand, and how much of it comes "
        "from resistance backup.",
        "Using metered data from 1,800 homes, we estimated the contribution of heat pumps to "
        "winter peak demand. On the coldest days, homes relying on resistance backup drew two "
        "to three times the peak load of homes with right-sized cold-climate units.",
        ["On the coldest days, homes relying on resistance backup drew two to three times the "
         "peak load of homes with right-sized cold-climate units.",
         "Controls that cap resistance backup during grid peaks cut the coincident peak by "
         "about 30 % with no comfort complaints."],
        sites=1800, design_range=(-20, -30), cop_curve=(3.1, 0.05), backup=0.11,
    ),
    Source(
        "decker2022", 2022, "2022-03-18", "Decker, H. and Lunde, R.",
        "Hybrid heat pumps with existing boilers: field results from 64 homes",
        "Applied Residential Energy 4(1), 22-39",
        "https://are.example/articles/2022/0022", "article",
        "Heat pumps added to existing oil and propane boilers, with the boiler taking over "
        "below a switchover temperature; share of heat and emissions.",
        "We monitored 64 homes where an air-source heat pump was added to an existing oil or "
        "propane boiler, which took over below a switchover temperature of -10 to -15 °C. The "
        "heat pump supplied 78-92 % of annual heat and emissions fell by 55-70 % against "
        "boiler-only heating.",
        ["The heat pump supplied 78-92 % of annual heat, with the boiler taking over below "
         "-10 to -15 °C.",
         "Emissions fell by 55-70 % against boiler-only heating; installed cost was about 40 % "
         "lower than a whole-home heat pump sized for the design load."],
        "Hybrids suit homes whose electrical service or distribution system cannot support a "
        "full-size heat pump yet.",
        doi="10.5555/are.2022.0022", sites=64, design_range=(-21, -28), cop_curve=(3.2, 0.05),
        backup=0.15,
    ),
    Source(
        "bhrc2021", 2021, "2021-04-26", "Boreal Housing Research Centre",
        "Seasonal performance of cold-climate heat pumps in 12 northern homes "
        "(technical report BHRC-TR-2021-03)",
        "Boreal Housing Research Centre, technical report",
        "https://bhrc.example/publications/BHRC-TR-2021-03.pdf", "report",
        "Open-access technical report: seasonal performance factor and backup share in 12 "
        "homes with design temperatures of -28 to -33 °C.",
        "Twelve homes with design temperatures between -28 and -33 °C were monitored for a "
        "full year. The seasonal performance factor including backup ranged from 2.2 to 2.8, "
        "and backup heat supplied 15-30 % of annual heat at the coldest sites.",
        ["SPF including backup ranged from 2.2 to 2.8.",
         "Backup heat supplied 15-30 % of annual heat at the coldest sites; the two homes with "
         "units sized at the design temperature stayed below 8 %."],
        sites=12, design_range=(-28, -33), cop_curve=(3.0, 0.05), backup=0.2,
    ),
]}

SCOP_RANGES = {"marsh2023": (2.3, 3.3), "npeo2021": (2.4, 3.1), "meridian2024": (2.0, 3.3),
               "park2021": (2.5, 3.2), "kowalczyk2022": (2.4, 3.2), "decker2022": (2.6, 3.4),
               "bhrc2021": (2.2, 2.8), "glec2018": (2.1, 2.7), "agri2023": (2.2, 3.2)}

_INTRO_SENTENCES = [
    "Air-source heat pumps have become the default replacement for fossil heating in many "
    "building programs, yet their performance in places with long, cold winters is still "
    "argued about.",
    "Manufacturers publish capacity and efficiency at standard rating points, usually 8.3 °C "
    "and -8.3 °C, sometimes -15 °C; hardly any publish data for colder conditions.",
    "Seasonal efficiency in occupied homes often differs from rated values because of sizing, "
    "controls, defrost and the way occupants use their thermostats.",
    "Most earlier field studies in cold regions monitored single-speed equipment installed "
    "before 2016 and found seasonal COPs well below those of milder climates.",
    "Variable-speed compressors and vapour-injection cycles have since pushed the useful "
    "operating range of air-source units to -25 °C and below.",
    "Programs that pay for retrofits need to know how much backup heat remains necessary, "
    "because backup heat drives both running costs and winter peak demand.",
    "Utilities in the region have started to plan for a winter-peaking system as heating "
    "electrifies.",
    "For building owners the question is less whether heat pumps work in the cold than how to "
    "specify and install them so that they do.",
    "Comparisons often mix seasonal COP, which leaves backup heat out, with seasonal "
    "performance factor, which counts it; we report both where the data allow.",
    "Much of the housing stock concerned was built before 1980, with modest insulation and "
    "with radiators or ducts sized for high-temperature boilers and furnaces.",
]
_METHOD_SENTENCES = [
    "Heat delivered was measured on the indoor side with {meter}; the outdoor unit, indoor "
    "unit and backup heater were metered separately at one-minute resolution.",
    "Outdoor temperature and humidity were logged at each site with shielded sensors and "
    "checked against the nearest weather station.",
    "Gaps longer than two hours ({gap} % of site-hours) were excluded; shorter gaps were "
    "filled by linear interpolation.",
    "Seasonal COP is heat delivered divided by electricity used from October to April; the "
    "text says where backup heat is included.",
    "Design temperatures are the 99 % heating design dry-bulb values of the nearest weather "
    "station.",
    "Occupants kept control of their thermostats; setpoints were recorded but never changed "
    "by the study team.",
    "Sites were recruited through a utility rebate program and were not chosen for good "
    "installation quality.",
]
_DISCUSSION_SENTENCES = [
    "The results are not a ceiling: several of the weakest installations had faults that a "
    "service visit could fix.",
    "Installation and controls mattered as much as equipment: the same model appears near both "
    "ends of the range.",
    "One or two winters contain few design-temperature events, so the coldest-hour results rest "
    "on a small number of hours.",
    "A larger and longer sample would be needed to separate the effect of climate from that of "
    "the building.",
    "The findings agree with laboratory data showing steep capacity loss below -20 °C for some "
    "units and much less for others.",
]
_SURNAMES = ["Albrecht", "Bjornsson", "Castellano", "Dubois", "Eriksen", "Fujimoto", "Gallagher",
             "Hartmann", "Ivanova", "Jensen", "Kaplan", "Laurent", "Mbeki", "Nakamura", "Olsen",
             "Pereira", "Quigley", "Rasmussen", "Schultz", "Tanaka", "Underwood", "Virtanen",
             "Weber", "Yilmaz", "Zhou"]
_REF_TOPICS = ["Seasonal performance of air-source heat pumps in {place}",
               "Defrost control strategies for variable-speed heat pumps",
               "Occupant behaviour and heat pump efficiency",
               "Capacity modulation in cold-climate heat pumps",
               "Monitoring protocols for residential heat pump field trials",
               "Heat pump retrofits in pre-1980 detached houses",
               "Electric backup heat and winter peak demand",
               "Low-temperature radiators in heat pump retrofits",
               "Vapour-injection compressors at low ambient temperature",
               "Uncertainty in field measurements of heat delivered",
               "Sizing rules for heat pumps replacing fossil boilers",
               "Cost-effectiveness of heat pump programs in cold regions"]
_REF_PLACES = ["Finland", "Quebec", "Minnesota", "Norway", "Hokkaido", "Alberta", "Maine",
               "northern Sweden", "Poland", "Vermont"]
_REF_VENUES = ["Energy and Buildings Review", "Journal of Building Thermal Systems",
               "Applied Residential Energy", "Building Services Practice",
               "International Journal of Heat Pump Research", "Renewable Heat Review",
               "Proceedings of the International Conference on Heat Pump Systems"]

_FILLER_RESULTS = [
    ("The 9 best cold-climate heat pumps of 2024 (buyer's guide)", "homecomfortreviews.example",
     "2024-01-09", "We ranked the top models by capacity at 5 °F, noise and price. Our pick for "
     "most homes..."),
    ("Mini split at -30? Real-world experience thread", "forum.diyheating.example", "2023-01-27",
     "Posted by northwoods_rick: Our unit kept the house at 66 °F until about -22, then the "
     "baseboards kicked in..."),
    ("Heat pump rebates in Eastvale County: what you can get", "eastvale-news.example",
     "2024-03-14", "Homeowners can now claim up to $8,000 toward a cold-climate heat pump under "
     "the county's new program..."),
    ("Do heat pumps work in cold weather? Myths and facts", "greenhome-blog.example",
     "2022-11-02", "The short answer is yes. Modern cold-climate units keep heating well below "
     "zero..."),
    ("Cold climate heat pump product list (qualified models)", "cchpc.example", None,
     "Searchable list of models meeting the cold-climate specification, with COP at 5 °F and "
     "capacity maintenance..."),
    ("Why my heat pump bill doubled in January", "savingsdaily.example", "2023-02-15",
     "Readers wrote in about surprise winter bills. The culprit in most cases: auxiliary "
     "heat..."),
    ("Heat pumps vs. oil boilers: a cost comparison", "energyadvice.example", "2021-10-20",
     "Running costs depend on your electricity and oil prices. At current rates..."),
    ("Installer training: cold-climate heat pump certificate", "tradeacademy.example", None,
     "A two-day course covering load calculation, line sets, commissioning and controls "
     "setup..."),
    ("Video: inside a heat pump at -25 °C", "videos.techexplained.example", "2023-12-05",
     "We put a heat pump in a climate chamber and watched what happens to the refrigerant..."),
    ("Heat pumps in Norway: how a cold country went electric", "worldenergy-mag.example",
     "2022-05-30", "More than 60 % of Norwegian detached houses now have a heat pump..."),
    ("Ask an expert: should I keep my furnace as backup?", "homeownerqa.example", "2021-12-11",
     "It depends on your climate, your electrical panel and the condition of the furnace..."),
    ("Manufacturer datasheet: cold-climate ducted series (PDF)", "hvac-maker.example", None,
     "Rated heating capacity at 47 °F, 17 °F and 5 °F. Extended capacity tables on request..."),
    ("Heat pump noise and defrost: what neighbours hear", "quiethomes.example", "2023-06-19",
     "Defrost cycles can produce a whoosh and a cloud of steam; here is why..."),
    ("State heat pump adoption dashboard", "data.stateenergy.example", "2024-02-01",
     "Installed cold-climate heat pumps by county and year, updated quarterly..."),
    ("Panel upgrades: the hidden cost of electrification", "buildingnews.example", "2023-09-07",
     "Contractors say one in five retrofits runs into an undersized electrical service..."),
    ("Air-to-water heat pumps explained", "heatinginfo.example", "2021-03-25",
     "Unlike ductless units, air-to-water heat pumps feed a wet heating system..."),
    ("Retrofit case study: 1950s bungalow goes all-electric", "retrofitstories.example",
     "2022-08-16", "The owners replaced a 30-year-old oil boiler with a 3-ton cold-climate "
     "unit..."),
    ("Cold climate heat pump specification v4.0", "cchpc.example", "2021-01-12",
     "Technical requirements: COP at 5 °F of at least 1.75, capacity at 5 °F of at least 70 % "
     "of rated..."),
]

RESEARCH_SYSTEM = prose(
    """
    You research questions for the sustainability office of the Eastvale Housing Authority
    and write short, well-sourced reports for its board. You have four tools: web_search,
    read_page (the readable text of a web page), fetch_pdf (the text of a PDF) and
    lookup_doi (bibliographic metadata, including publication dates, for a DOI).

    Prefer primary evidence: field monitoring, laboratory tests, program evaluations. Use
    trade articles and guides for practice advice only. Check publication dates when a page
    does not show one clearly. Every number in the report needs a citation.

    The report: at most one page (about 450 words), one short section per question asked,
    numeric ranges with bracketed citations [n], a numbered reference list giving each
    source's year, and a one-line note of anything you could not access.
    """
)

RESEARCH_TOOLS = [
    tool(
        "web_search",
        "Search the web. Returns up to `num_results` results, each with title, URL, site, "
        "publication date when the search index knows it (otherwise null) and a snippet.",
        {"query": {"type": "string"},
         "num_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8}},
        ["query"],
    ),
    tool(
        "read_page",
        "Fetch a web page and return its readable text (navigation, ads and scripts removed), "
        "with the page's title, URL and the date it shows, if any.",
        {"url": {"type": "string", "format": "uri"}},
        ["url"],
    ),
    tool(
        "fetch_pdf",
        "Download a PDF and return its text, page by page. Fails with the HTTP status and the "
        "server's message when the PDF cannot be downloaded.",
        {"url": {"type": "string", "format": "uri"},
         "pages": {"type": "string", "description": "Page range such as '1-5' (default: all)."}},
        ["url"],
    ),
    tool(
        "lookup_doi",
        "Look up a DOI in the bibliographic registry: title, authors, journal, publisher, "
        "online and print publication dates, type and open-access status.",
        {"doi": {"type": "string", "description": "A DOI such as 10.5555/abc.2022.0001."}},
        ["doi"],
    ),
]


def _search(rng: random.Random, query: str, keys: list[str], fillers: int,
            extra: list[dict] | None = None) -> dict:
    """A search engine's answer: the named sources in order, with filler pages mixed in."""
    results = list(extra or [])
    for key in keys:
        source = SOURCES[key]
        shows_date = source.kind not in ("guide",) and key not in ("feld2020",)
        results.append({"title": source.title, "url": source.url,
                        "site": source.url.split("/")[2],
                        "published": source.date if shows_date else None,
                        "snippet": source.snippet})
    for title, site, date, snippet in rng.sample(_FILLER_RESULTS, fillers):
        slug = "-".join(word.strip("?:.,()'").lower() for word in title.split()[:6])
        results.insert(rng.randint(1, len(results)), {
            "title": title, "url": f"https://{site}/{slug}", "site": site,
            "published": date, "snippet": snippet})
    for rank, result in enumerate(results, start=1):
        result["rank"] = rank
    return {"query": query, "total_estimated": rng.randint(18_000, 940_000),
            "results": [{k: r[k] for k in ("rank", "title", "url", "site", "published", "snippet")}
                        for r in results]}


def _references(rng: random.Random, year: int, count: int, include: list[str]) -> list[str]:
    refs = []
    for key in include:
        source = SOURCES[key]
        refs.append(f"{source.authors} ({source.year}). {source.title}. {source.venue}.")
    while len(refs) < count:
        authors = rng.sample(_SURNAMES, rng.randint(1, 3))
        names = ", ".join(f"{name}, {rng.choice('ABCDEFGHJKLMNPRST')}." for name in authors)
        topic = rng.choice(_REF_TOPICS).format(place=rng.choice(_REF_PLACES))
        first = rng.randint(1, 600)
        refs.append(f"{names} ({rng.randint(2009, year - 1)}). {topic}. {rng.choice(_REF_VENUES)}, "
                    f"{rng.randint(4, 60)}, {first}-{first + rng.randint(8, 24)}.")
    rng.shuffle(refs)
    return [f"[{i}] {ref}" for i, ref in enumerate(refs, start=1)]


def _site_table(rng: random.Random, source: Source) -> str:
    low, high = SCOP_RANGES.get(source.key, (2.4, 3.2))
    shown = min(source.sites, 12)
    kinds = ["ducted VS", "ductless multi-head", "ductless single-head", "ducted VS + coil"]
    rows = ["| Site | Climate | Design T (°C) | Floor area (m²) | Built | System | Rated kW | "
            "Seasonal COP |", "|---|---|---|---|---|---|---|---|"]
    cops = sorted(round(rng.uniform(low, high), 1) for _ in range(shown - 2)) + [low, high]
    rng.shuffle(cops)
    for i in range(shown):
        design = rng.randint(min(source.design_range), max(source.design_range))
        rows.append(f"| S{i + 1:02d} | {rng.choice(['inland', 'lake shore', 'upland', 'valley'])} "
                    f"| {design} | {rng.randint(85, 240)} | {rng.randint(1948, 1992)} | "
                    f"{rng.choice(kinds)} | {rng.choice([7.0, 8.8, 10.5, 12.3, 14.1])} | "
                    f"{cops[i]:.1f} |")
    title = (f"Table 1. Sites (first {shown} of {source.sites})" if source.sites > shown
             else f"Table 1. Sites ({source.sites})")
    return title + "\n" + "\n".join(rows)


def _monthly_table(rng: random.Random, source: Source) -> tuple[str, float]:
    shift = (sum(source.design_range) / 2 + 25) / 3
    temps = [4.1, -3.2, -10.8, -14.6, -12.9, -6.1, 1.8]
    c0, c1 = source.cop_curve
    rows = ["| Month | Mean outdoor T (°C) | Heat delivered (kWh/site) | Electricity (kWh/site) | "
            "COP (heat pump only) | Backup share (%) |", "|---|---|---|---|---|---|"]
    heat_total = elec_total = 0.0
    for month, base in zip(["Oct", "Nov", "Dec", "Jan", "Feb", "Mar", "Apr"], temps, strict=True):
        temp = base + shift + rng.uniform(-0.8, 0.8)
        cop = max(1.3, c0 + c1 * temp + rng.uniform(-0.06, 0.06))
        heat = (18 - temp) * rng.uniform(58, 66) * (1.4 if source.sites == 1 else 1.0)
        elec = heat / cop
        backup = max(0.0, source.backup * (1 + (-temp - 8) / 10) * 100) if temp < -4 else 0.0
        heat_total += heat
        elec_total += elec
        rows.append(f"| {month} | {temp:.1f} | {heat:,.0f} | {elec:,.0f} | {cop:.2f} | "
                    f"{backup:.1f} |")
    pooled = heat_total / elec_total
    return "Table 2. Monthly means across sites\n" + "\n".join(rows), pooled


def _performance_map(rng: random.Random) -> str:
    temps = [8.3, 0.0, -8.3, -15.0, -20.0, -25.0, -28.0, -30.0]
    rows = ["| Unit | " + " | ".join(f"{t:+.1f} °C" for t in temps) + " |",
            "|---|" + "---|" * len(temps)]
    cap_rows = list(rows)
    cop15 = [1.9, 2.0, 2.1, 2.3, 2.4, 2.5]
    cop25 = [1.4, 1.5, 1.6, 1.6, 1.7, 1.8]
    cap25 = [0.58, 0.63, 0.67, 0.72, 0.77, 0.81]
    order = list(range(6))
    rng.shuffle(order)
    for unit, i in zip("ABCDEF", order, strict=True):
        slope = (cop15[i] - cop25[i]) / 10
        cops, caps = [], []
        for t in temps:
            if t >= -15:
                cop = cop15[i] + (t + 15) * rng.uniform(0.075, 0.095)
            else:
                cop = cop15[i] + (t + 15) * slope
            lockout = t <= -30 and unit in "BE" or (t <= -28 and unit == "E")
            cops.append("stop" if lockout else f"{cop:.2f}")
            cap = 1.0 if t >= 8 else 1.0 - (8.3 - t) / 33.3 * (1 - cap25[i])
            caps.append("stop" if lockout else f"{cap:.2f}")
        rows.append(f"| {unit} | " + " | ".join(cops) + " |")
        cap_rows.append(f"| {unit} | " + " | ".join(caps) + " |")
    return ("Table 2. COP at maximum compressor speed\n" + "\n".join(rows) +
            "\n\nTable 3. Maximum capacity relative to capacity at 8.3 °C\n" + "\n".join(cap_rows) +
            "\n'stop': the unit shut down on low-ambient protection and did not restart within "
            "30 minutes.")


def _page_header(source: Source) -> str:
    shown_date = source.date if source.kind != "guide" else f"{source.date[:7]} (edition date)"
    lines = [f"URL: {source.url}", f"Title: {source.title}", f"Date shown on page: {shown_date}",
             "", source.title, source.authors, source.venue]
    if source.doi:
        lines.append(f"doi:{source.doi}")
    return "\n".join(lines)


def _read_page(rng: random.Random, source: Source) -> str:
    """The readable text of a source's web page, shaped by what kind of page it is."""
    if source.kind == "landing":
        return _landing_page(rng, source)
    if source.kind == "blog":
        return _blog_page(rng, source)
    if source.kind == "guide":
        return _guide_page(rng, source)
    intro = rng.sample(_INTRO_SENTENCES, 5)
    parts = [_page_header(source)]
    if source.kind in ("article", "review"):
        parts += _article_front_matter(rng, source)
    parts += ["", "Abstract", source.abstract]
    if source.kind == "article":
        parts += ["", "Highlights"] + [f"- {finding.split(';')[0].rstrip('.')}."
                                       for finding in source.findings[:3]]
    parts += ["", "1. Introduction", " ".join(intro[:3]), " ".join(intro[3:]), "", "2. Methods"]
    meter = rng.choice(["ultrasonic heat meters", "paired supply and return temperature sensors "
                        "and airflow stations", "calibrated heat meters (class 2)"])
    method = [s.format(meter=meter, gap=f"{rng.uniform(1.5, 4.5):.1f}")
              for s in rng.sample(_METHOD_SENTENCES, 4)]
    parts.append(" ".join(method))
    if source.key == "hollis2022":
        parts[-1] = ("Each unit was installed in a two-room psychrometric chamber and run at "
                     "maximum compressor speed and at 50 % speed at eight outdoor temperatures "
                     "from +10 to -30 °C, 60-80 % relative humidity, indoor 20 °C. Heat was "
                     "measured on the air side with a code tester; uncertainty of COP is about "
                     "4 %. Each point is the mean of three one-hour steady periods, defrost "
                     "excluded.")
    if source.sites > 1:
        parts += ["", _site_table(rng, source)]
    parts += ["", "3. Results", " ".join(source.findings)]
    if source.key == "hollis2022":
        parts += ["", _performance_map(rng)]
    elif source.sites >= 1:
        table, pooled = _monthly_table(rng, source)
        parts += ["", table, f"Pooled over all sites and months, the heat-pump-only COP was "
                              f"{pooled:.2f}."]
    if source.kind == "review":
        parts += ["", _review_table(rng)]
    extra = _EXTRA_TABLES.get(source.key)
    if extra:
        parts += ["", extra(rng)]
    parts += ["", f"Figure {rng.randint(2, 4)}. " + rng.choice(_FIGURE_CAPTIONS)]
    parts += ["", "4. Discussion",
              (source.discussion + " " if source.discussion else "")
              + " ".join(rng.sample(_DISCUSSION_SENTENCES, 2)),
              ""]
    if source.kind in ("article", "report"):
        parts += ["Data availability: " + rng.choice([
            "anonymised hourly data are available from the authors on reasonable request.",
            "site-level seasonal results are in the supplementary material; hourly data are "
            "withheld to protect occupants' privacy.",
            "the monitoring data set is archived with the funding agency and available under a "
            "data-sharing agreement."]),
            "Funding: " + rng.choice([
            "state energy research program, grant ER-" + str(rng.randint(1000, 9999)) + ".",
            "the utility's research and development fund; the funder had no role in the analysis.",
            "a public housing innovation grant."]), ""]
    parts.append("References")
    include = [k for k in ("glec2018", "sorensen2019") if SOURCES[k].year < source.year]
    parts += _references(rng, source.year, rng.randint(14, 20), include[:1])
    return "\n".join(parts)


_FIGURE_CAPTIONS = [
    "Hourly COP against outdoor temperature, all sites; the line is a least-squares fit.",
    "Share of heat from backup against the ratio of heat pump capacity at design temperature "
    "to design heat load.",
    "Daily heat delivered against heating degree days, by site.",
    "Cumulative distribution of hours by outdoor temperature over the monitoring period.",
    "Defrost cycles per hour against outdoor temperature and relative humidity.",
]

_AFFILIATIONS = ["Department of Civil and Building Engineering, Northgate University",
                 "Institute for Building Energy Systems, Lakehead Technical University",
                 "Centre for Housing Research, University of Eastmoor",
                 "Applied Thermal Sciences Group, Fjordland Institute of Technology",
                 "School of Architecture and Environment, Ridgeway College"]


def _article_front_matter(rng: random.Random, source: Source) -> list[str]:
    published = datetime.strptime(source.date if len(source.date) == 10 else source.date + "-15",
                                  "%Y-%m-%d")
    received = published - timedelta(days=rng.randint(150, 320))
    accepted = published - timedelta(days=rng.randint(20, 60))
    return ["Affiliations: " + "; ".join(rng.sample(_AFFILIATIONS, 2)),
            f"Received {received:%d %B %Y}; accepted {accepted:%d %B %Y}; published online "
            f"{published:%d %B %Y}",
            "Keywords: " + ", ".join(rng.sample(
                ["cold climate", "air-source heat pump", "field monitoring", "seasonal COP",
                 "backup heat", "retrofit", "defrost", "sizing", "residential"], 5))]


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [title, "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _marsh_sizing(rng: random.Random) -> str:
    return _table("Table 3. Backup share by sizing ratio (capacity at design T / design load)",
                  ["Sizing ratio", "Houses", "Median backup share (%)", "Range (%)"],
                  [["< 0.8", "5", "21", "9-24"], ["0.8-1.0", "19", "7", "1-15"],
                   ["> 1.0", "24", "3", "0-9"]])


def _npeo_models(rng: random.Random) -> str:
    ratios = [0.52, 0.57, 0.61, 0.64, 0.68]
    rng.shuffle(ratios)
    return _table("Table 3. Measured capacity at -25 °C relative to 8.3 °C, by model",
                  ["Model", "Homes", "Nominal kW", "Capacity ratio at -25 °C",
                   "Lowest hourly COP"],
                  [[f"M{i + 1}", str(rng.randint(4, 9)), f"{rng.choice([5.3, 7.0, 8.8])}",
                    f"{ratio:.2f}", f"{rng.uniform(1.3, 1.7):.1f}"]
                   for i, ratio in enumerate(ratios)])


def _park_bins(rng: random.Random) -> str:
    rows = []
    for low in range(6, -27, -4):
        share = 11.0 if -6 <= low <= 2 else (6.0 if low > 2 else max(1.5, 7 + low / 4))
        rows.append([f"{low - 4} to {low}", str(rng.randint(120, 900)),
                     f"{rng.uniform(0.3, 1.4):.2f}", f"{share + rng.uniform(-1, 1):.1f}"])
    return _table("Table 3. Defrost by outdoor temperature bin (°C)",
                  ["Bin", "Hours", "Defrosts per hour", "Defrost share of electricity (%)"], rows)


def _greaves_practices(rng: random.Random) -> str:
    rows = []
    for practice, trained, untrained in [("Room-by-room heat-loss calculation, every job", 61, 24),
                                         ("Usually sizes to match the old furnace", 22, 53),
                                         ("Refrigerant charge checked by weight", 71, 44),
                                         ("Airflow or water flow measured", 66, 38),
                                         ("Backup lockout set and recorded", 63, 35),
                                         ("Callbacks within first winter", 7, 15)]:
        overall = (trained * 231 + untrained * 381) / 612
        rows.append([practice, f"{overall:.0f}", str(trained), str(untrained)])
    return _table("Table 2. Practices reported (% of respondents)",
                  ["Practice", "All (n=612)", "Cold-climate trained (n=231)",
                   "Not trained (n=381)"], rows)


def _whitcombe_costs(rng: random.Random) -> str:
    return _table("Table 2. Electrical upgrades by existing service size",
                  ["Existing service", "Retrofits", "Needed upgrade (%)", "Median cost (USD)",
                   "Interquartile range (USD)"],
                  [["60 A", "58", "91", "2,900", "2,100-4,300"],
                   ["100 A", "187", "64", "2,300", "1,600-3,200"],
                   ["150 A", "96", "22", "1,700", "1,100-2,500"],
                   ["200 A", "69", "6", "1,200", "900-1,800"]])


def _kowalczyk_setpoints(rng: random.Random) -> str:
    return _table("Table 2. Comfort and backup use by thermostat pattern",
                  ["Pattern", "Homes", "Satisfied (%)", "Backup share of heat (%)"],
                  [["Steady setpoint", "41", "81", "4"], ["Setback of 1-3 K", "27", "74", "6"],
                   ["Setback over 3 K", "18", "61", "9"]])


def _agri_peaks(rng: random.Random) -> str:
    rows = []
    for hour in range(0, 24, 3):
        right = rng.uniform(2.1, 3.4) + (0.6 if hour in (6, 18) else 0)
        rows.append([f"{hour:02d}:00-{hour + 3:02d}:00", f"{right:.1f}",
                     f"{right * rng.uniform(2.0, 2.9):.1f}"])
    return _table("Table 2. Mean demand per home on the three coldest days (kW)",
                  ["Hours", "Right-sized cold-climate units", "Units relying on resistance backup"],
                  rows)


def _decker_switchover(rng: random.Random) -> str:
    return _table("Table 3. Heat pump share of annual heat by switchover temperature",
                  ["Switchover (°C)", "Homes", "Heat pump share (%)", "Emission reduction (%)"],
                  [["-5", "9", "71", "48"], ["-10", "22", "78", "55"], ["-12", "17", "85", "62"],
                   ["-15", "16", "92", "70"]])


def _meridian_fuels(rng: random.Random) -> str:
    return _table("Table 3. Program homes by previous heating fuel",
                  ["Previous fuel", "Homes", "Median rated kW", "Service upgrade (%)",
                   "Metered COP (subsample)"],
                  [["Oil", "512", "10.5", "16", "2.5"], ["Propane", "301", "8.8", "12", "2.7"],
                   ["Electric resistance", "327", "8.8", "11", "2.7"]])


def _ruiz_before_after(rng: random.Random) -> str:
    return _table("Table 3. Annual energy before and after the retrofit (whole building)",
                  ["", "Before (3-winter mean)", "After (2-winter mean)", "Change"],
                  [["Gas (MWh)", "742", "61", "-92 %"], ["Electricity (MWh)", "118", "271", "+130 %"],
                   ["Site energy (MWh)", "860", "332", "-61 %"],
                   ["Energy cost (index)", "100", "83", "-17 %"]])


_EXTRA_TABLES: dict[str, Callable[[random.Random], str]] = {
    "marsh2023": _marsh_sizing, "npeo2021": _npeo_models, "park2021": _park_bins,
    "greaves2022": _greaves_practices, "whitcombe2024": _whitcombe_costs,
    "kowalczyk2022": _kowalczyk_setpoints, "agri2023": _agri_peaks,
    "decker2022": _decker_switchover, "meridian2024": _meridian_fuels,
    "ruiz2023": _ruiz_before_after,
}


def _review_table(rng: random.Random) -> str:
    rows = ["Table 3. Field studies reviewed", "| Study | Year | Country/region | Homes | "
            "Equipment | Seasonal COP | Backup metered |", "|---|---|---|---|---|---|---|"]
    for i in range(1, 28):
        year = rng.randint(2008, 2018)
        low = rng.uniform(1.6, 2.6)
        rows.append(f"| R{i:02d} | {year} | {rng.choice(_REF_PLACES)} | {rng.randint(3, 120)} | "
                    f"{rng.choice(['single-speed', 'two-stage', 'variable-speed'])} | "
                    f"{low:.1f}-{min(3.2, low + rng.uniform(0.2, 0.8)):.1f} | "
                    f"{rng.choice(['yes', 'no', 'no', 'partly'])} |")
    return "\n".join(rows)


def _landing_page(rng: random.Random, source: Source) -> str:
    refs = _references(rng, source.year, 10, ["sorensen2019"])
    return "\n".join([
        _page_header(source),
        "Research article | First published: 3 November 2022 | Issue date: December 2022",
        "", "Abstract", source.abstract, "",
        "Keywords: air-to-water heat pump; field measurement; seasonal performance factor; "
        "cold climate; emitter temperature; backup heat",
        "", "Access options",
        "- Log in through your institution",
        "- Purchase this article: PDF, EUR 39.95 (24-hour access)",
        "- Subscribe to Nordic Journal of Building Physics",
        "", "Full text: available to subscribers. Figures 1-9 and Tables 1-6 are in the full text.",
        "Supplementary material: Table S1-S4 (subscribers only).",
        "", "Article metrics: 1,284 downloads; cited by 31 (registry count).",
        "", "References (first 10 of 58)"] + refs + [
        "", "Related articles",
        "- Hourly load profiles of air-to-water heat pumps in Nordic houses (2023)",
        "- Emitter upgrades before heat pump retrofits: a cost-benefit analysis (2021)",
        "- Domestic hot water and heat pump efficiency (2020)",
    ])


def _blog_page(rng: random.Random, source: Source) -> str:
    if source.key == "nhpa2022":
        body = [
            "The session on the Nordic field study was the best attended of the conference's "
            "second day. Presenting for the team, Maria Lindqvist walked through results from "
            "212 air-to-water heat pumps monitored in single-family houses across four climate "
            "zones, the largest data set of its kind so far.",
            "The headline numbers are in the paper: a median seasonal performance factor of 2.7 "
            "with backup and hot water included. What the talk added was the breakdown by "
            "climate zone, which several delegates had asked for.",
        ] + source.findings + [
            "Asked about sizing, Lindqvist said the houses with the lowest backup use had units "
            "chosen for their capacity at the local design temperature, not at the rating "
            "point. 'Most of the bad results were bad installations, not bad machines,' she "
            "said.",
            "Slides are available to association members. The paper itself appeared in the "
            "Nordic Journal of Building Physics in November.",
        ]
    else:
        body = [
            "Every cold-climate heat pump datasheet leads with a capacity figure, and almost "
            "every installer reads it as the capacity the unit will deliver on the coldest "
            "night. It is not.",
        ] + source.findings + [
            "Take a house with a design heat load of 9 kW at -25 °C. A unit with a nameplate "
            "of 10.5 kW that keeps 62 % of its capacity at that temperature delivers about "
            "6.5 kW, leaving 2.5 kW for backup heat on the design day. A 12.3 kW unit from a "
            "line that keeps 75 % delivers 9.2 kW and needs none.",
            "Ask manufacturers for extended capacity tables down to your design temperature, "
            "and check whether the figure is at maximum compressor speed or at a rated speed.",
            "Variable-speed units modulate down to 25-35 % of their maximum, so a unit sized "
            "for the design day does not short-cycle in October the way single-speed "
            "equipment did.",
        ]
    if source.key == "nhpa2022":
        table = _table("Results by climate zone (from the talk)",
                       ["Zone", "Typical design T (°C)", "Houses", "Median SPF",
                        "Backup share of heat (%)"],
                       [["1 (coastal south)", "-12", "61", "2.9", "3"],
                        ["2 (inland south)", "-17", "58", "2.8", "5"],
                        ["3 (central)", "-21", "52", "2.6", "8"],
                        ["4 (north)", "-25", "41", "2.4", "12"]])
        texts = ["Great summary, wish the slides were public.",
                 "Did they separate hot water from space heating in the zone breakdown?",
                 "Zone 4 looks a lot like our region. Useful numbers for our next program."]
        related = ["Heat pump sales in the Nordics: 2022 figures",
                   "Emitter upgrades: which radiators to replace first",
                   "Interview: twenty years of monitoring heat pumps",
                   "Our response to the building code consultation",
                   "Members' day 2023: call for speakers"]
    else:
        rows = []
        for model, keep in (("Line A 10.5 kW", 0.62), ("Line B 10.5 kW", 0.69),
                            ("Line C 12.3 kW", 0.75)):
            nominal = float(model.split()[2])
            rows.append([model] + [f"{nominal * (1 - (8.3 - t) / 33.3 * (1 - keep)):.1f}"
                                   for t in (8.3, -8.3, -15, -20, -25)])
        table = _table("Maximum capacity (kW) at outdoor temperature, three 10-12 kW lines",
                       ["Model", "+8.3 °C", "-8.3 °C", "-15 °C", "-20 °C", "-25 °C"], rows)
        texts = ["Same experience here: sizing at the rating point is the most common mistake "
                 "we see.",
                 "Some manufacturers only publish the -25 °C figure at a boost setting the unit "
                 "can't hold for long. Worth asking.",
                 "Good article. Utilities should require the design-temperature figure on "
                 "rebate forms."]
        related = ["Line sets in cold weather: insulation and routing",
                   "Why your heat pump needs a snow stand",
                   "Controls 101: staging backup heat properly",
                   "Load calculations that match the fuel bills",
                   "Ask the engineer: ducted or ductless for an old house?"]
    comments = [f"{rng.choice(_SURNAMES)}_{rng.randint(10, 99)}: {text}" for text in texts]
    return "\n".join([_page_header(source), ""] + body + ["", table] +
                      ["", f"Comments ({len(comments)})"] + comments +
                      ["", "Related posts"] + [f"- {title}" for title in related] +
                      ["", "Tags: heat pumps, field data, cold climate, sizing"])


def _guide_page(rng: random.Random, source: Source) -> str:
    lockouts = ["| Design temperature | Suggested auxiliary-heat lockout | Compressor cut-out |",
                "|---|---|---|"]
    for design in range(-15, -36, -3):
        lockouts.append(f"| {design} °C | {max(design + 5, -25)} °C or lower | "
                        f"manufacturer minimum (often {rng.choice([-25, -28, -30, -31])} °C) |")
    return "\n".join([
        _page_header(source), "",
        "Contents: 1 Heat-loss calculation | 2 Balance point | 3 Selecting capacity | "
        "4 Backup heat | 5 Controls and lockouts | 6 Commissioning checklist", "",
        "1 Heat-loss calculation",
        source.findings[0] + " Use the 99 % design dry-bulb temperature for the site, measured "
        "or documented insulation levels, and a blower-door result where one exists. For "
        "retrofits, fuel records from two winters give a useful check on the calculated load.",
        "", "2 Balance point",
        "Plot the building's heat load against outdoor temperature and the unit's maximum "
        "capacity curve. Where they cross is the thermal balance point; below it, backup heat "
        "or a second unit must make up the difference.",
        "", "3 Selecting capacity", source.findings[1] + " Use extended performance data at "
        "maximum compressor speed; nameplate figures at 8.3 °C overstate cold-weather capacity.",
        "", "4 Backup heat",
        "Backup can be electric resistance (in the air handler or baseboards), the existing "
        "boiler or furnace in a hybrid arrangement, or a second heat pump. Size it for the "
        "shortfall at the design temperature plus a margin for defrost.",
        "", "Worked example: a 1962 storey-and-a-half house at a -24 °C design temperature",
        _guide_example(rng),
        "", "5 Controls and lockouts", source.findings[2], "", "\n".join(lockouts), "",
        "6 Commissioning checklist",
        "- Refrigerant charge by weight, adjusted for line length",
        "- Airflow or water flow measured and recorded",
        "- Outdoor unit raised above expected snow depth, clear of roof run-off",
        "- Auxiliary-heat lockout and staging set and recorded",
        "- Thermostat type compatible with variable-speed operation",
        "- Owner or tenant walked through the controls",
        "", "Edition: 2nd, October 2023. Supersedes the 1st edition (2017).",
    ])


def _guide_example(rng: random.Random) -> str:
    rooms = [("Living room", 28), ("Kitchen", 14), ("Dining", 12), ("Hall and stairs", 9),
             ("Bedroom 1", 15), ("Bedroom 2", 12), ("Bedroom 3", 10), ("Bathroom", 6),
             ("Basement (conditioned)", 60)]
    rows, total = [], 0.0
    for room, area in rooms:
        fabric = area * rng.uniform(38, 52)
        air = area * rng.uniform(12, 20)
        total += fabric + air
        rows.append([room, str(area), f"{fabric:,.0f}", f"{air:,.0f}", f"{fabric + air:,.0f}"])
    rows.append(["Total", str(sum(a for _, a in rooms)), "", "", f"{total:,.0f}"])
    table = _table("Room-by-room heat loss at -24 °C outdoor, 21 °C indoor (W)",
                   ["Room", "Floor area (m²)", "Fabric", "Air leakage", "Total"], rows)
    return (table + f"\nDesign heat load {total / 1000:.1f} kW. A unit keeping 70 % of its "
            f"nameplate at -24 °C needs a nameplate of about {total / 700:.1f} kW to carry the "
            "load alone; with a smaller unit, size the backup for the difference.")


_PUBLISHERS = ["Northgate Scholarly Publishing", "Fjordland Academic", "Lakehead University Press",
               "Eastmoor Science Media"]


def _lookup_doi(source: Source, online: str | None = None) -> dict:
    online = online or source.date
    return {
        "doi": source.doi,
        "title": source.title,
        "authors": [f"{surname}, {initial}." for surname, initial
                    in re.findall(r"([A-Z][\w-]+), ([A-Z])\.", source.authors)],
        "container_title": re.split(r" \d", source.venue)[0].rstrip(","),
        "publisher": _PUBLISHERS[sum(map(ord, source.key)) % len(_PUBLISHERS)],
        "type": "proceedings-article" if "Proceedings" in source.venue else "journal-article",
        "published_online": online,
        "published_print": source.date if online != source.date else None,
        "issued": online,
        "is_open_access": source.key in ("bhrc2021", "npeo2021"),
        "references_count": 30 + len(source.key) * 2,
        "registry_updated": "2024-04-30",
    }


def _bhrc_pdf(rng: random.Random) -> str:
    source = SOURCES["bhrc2021"]
    table, pooled = _monthly_table(rng, source)
    pages = [
        f"[page 1]\n{source.authors}\n{source.title}\nApril 2021\nOpen access. Licensed CC BY 4.0.",
        "[page 2]\nSummary\n" + source.abstract + " The two homes whose units were sized at "
        "the design temperature stayed below 8 %. The results support sizing cold-climate heat "
        "pumps at the design temperature where the electrical service allows it.",
        "[page 3]\n1 Background\n" + " ".join(rng.sample(_INTRO_SENTENCES, 4)),
        "[page 4]\n2 Homes and monitoring\n" + " ".join(
            s.format(meter="heat meters on the refrigerant-to-air coil", gap="2.6")
            for s in rng.sample(_METHOD_SENTENCES, 4)) + "\n\n" + _site_table(rng, source),
        "[page 6]\n3 Results\n" + " ".join(source.findings) + "\n\n" + table +
        f"\nPooled heat-pump-only COP: {pooled:.2f}.",
        "[page 9]\n4 Discussion\n" + " ".join(rng.sample(_DISCUSSION_SENTENCES, 3)) +
        " Homes at the coldest sites relied on baseboard heaters for the hours below the "
        "units' cut-out temperature, which ranged from -28 to -31 °C.",
        "[page 11]\n5 Recommendations\n- Size at the design temperature where the electrical "
        "service allows.\n- Set backup lockouts explicitly at commissioning.\n- Meter backup heat "
        "separately in any future program evaluation.",
        "[page 12]\nReferences\n" + "\n".join(_references(rng, 2021, 9, ["glec2018"])),
    ]
    return (f"fetch_pdf {source.url}\n14 pages, text layer present; pages 5, 7-8, 10, 13-14 are "
            "figures or blank\n\n" + "\n\n".join(pages))


def build_research() -> Transcript:
    t = Transcript("research", seed=2021, system_prompt=RESEARCH_SYSTEM, tools=RESEARCH_TOOLS,
                   indent=2)
    rng = t.rng
    src = SOURCES
    pdf_url = "https://www.njbp.example/doi/pdf/10.5555/njbp.2022.0931"

    def search(query: str, keys: list[str], extra: list[dict] | None = None) -> Call:
        fillers = 8 - len(keys) - len(extra or [])
        return Call("web_search", {"query": query, "num_results": 8},
                    _search(rng, query, keys, fillers, extra))

    def read(key: str) -> Call:
        return Call("read_page", {"url": src[key].url}, _read_page(rng, src[key]))

    def lookup(key: str, online: str | None = None) -> Call:
        return Call("lookup_doi", {"doi": src[key].doi}, _lookup_doi(src[key], online))

    def paywalled_pdf() -> Call:
        return Call("fetch_pdf", {"url": pdf_url}, {
            "error": "http_403", "status": 403, "url": pdf_url, "message": PAYWALL_MESSAGE,
            "request_id": uuid4(rng)})

    t.user(prose(
        """
        I'm preparing a briefing for the Eastvale Housing Authority board on replacing oil and
        propane boilers with air-source heat pumps in our 340 older homes. Our design
        temperature is -24 °C. Please research the evidence and write a one-page report that
        answers four questions:
        1. What seasonal efficiency (seasonal COP or SPF) do cold-climate heat pumps actually
           achieve in field studies?
        2. How do capacity and efficiency fall off at very low temperatures?
        3. How much backup heat is needed, and what kind?
        4. Which installation factors make the biggest difference?

        Cite every claim.
        """
    ))
    t.turn(None, search("cold climate air source heat pump field monitoring seasonal COP",
                        ["glec2018", "marsh2023", "sorensen2019", "npeo2021", "meridian2024"]))
    t.user(prose(
        f"""
        One more thing before you go further: the board threw out last year's report for
        leaning on old field data, so only cite sources {RESEARCH_CONSTRAINT}. Older studies
        can guide your searching, but they must not appear in the report.
        """
    ))
    t.turn(prose(
        f"""
        Understood: every source I cite must be {RESEARCH_CONSTRAINT}. From the first search
        that rules out the 2018 field assessment and the 2019 review; Marsh et al. (2023), the
        2021 Northern Plains report and the 2024 Lakeshore evaluation qualify. Starting with
        Marsh et al.
        """
    ), read("marsh2023"))
    t.turn(None, read("npeo2021"))
    t.turn(None, search("cold climate heat pump laboratory test COP capacity -25 C",
                        ["hollis2022", "tran2023", "feld2020", "sorensen2019"]))
    t.turn(None, read("hollis2022"))
    t.turn(None, search(
        "Lindqvist 2022 air-to-water heat pumps Nordic single-family field performance",
        ["lindqvist2022", "nhpa2022"],
        [{"title": "Field performance of 212 air-to-water heat pumps in Nordic single-family "
                   "houses (PDF)", "url": pdf_url, "site": "www.njbp.example",
          "published": "2022-11-03",
          "snippet": "PDF. Lindqvist M, Berg S, Aalto J, Haugen K. Nordic Journal of Building "
                     "Physics 9(4):311-334..."}]))
    # lap 7: the first of three failures on the same URL
    t.turn(None, paywalled_pdf())
    t.turn(None, Call("read_page", {"url": src["lindqvist2022"].url},
                      _read_page(rng, src["lindqvist2022"])))
    t.turn(None, search("backup heat share electric resistance cold climate heat pump program "
                        "evaluation", ["meridian2024", "bhrc2021", "glec2018", "agri2023"]))
    t.turn(None, read("meridian2024"))
    t.turn(None, Call("fetch_pdf", {"url": src["bhrc2021"].url}, _bhrc_pdf(rng)))
    t.turn(None, search("defrost energy penalty field measurements heat pump cold climate",
                        ["park2021", "feld2020", "sorensen2019"]))
    t.turn(None, read("park2021"))
    t.turn(prose(
        """
        The ducted case-study paper (Feld et al.) shows an issue date of March 2021 but no
        online date. Checking before relying on it.
        """
    ), lookup("feld2020", online="2020-11-30"))
    t.turn(prose(
        """
        Feld et al. first appeared online on 30 November 2020, so it misses the 2021 cut-off
        whatever the issue date says; leaving it out. Next: installation practice.
        """
    ), search("heat pump installer survey sizing load calculation commissioning callbacks",
              ["greaves2022", "kowalczyk2022"]))
    t.turn(None, read("greaves2022"))
    # lap 17: second failure
    t.turn(prose(
        """
        Lindqvist et al. (2022) should break backup share down by climate zone in the full
        paper. Fetching it.
        """
    ), paywalled_pdf())
    t.turn(None, search("multifamily apartment air-to-water heat pump retrofit cold climate case "
                        "study", ["ruiz2023"]))
    t.turn(None, read("ruiz2023"))
    t.turn(prose(
        """
        The 2019 review cannot be cited, but its table of earlier studies may point to newer
        follow-up work.
        """
    ), read("sorensen2019"))
    t.turn(None, search("low ambient capacity retention heat pump sizing at design temperature",
                        ["tran2023", "cchpc2023", "hollis2022"]))
    t.turn(None, read("tran2023"))
    t.turn(None, read("cchpc2023"))
    t.turn(None, lookup("greaves2022"))
    t.turn(None, search("electrical service panel upgrade cost heat pump retrofit load management",
                        ["whitcombe2024"]))
    t.turn(None, read("whitcombe2024"))
    t.turn(None, search("social housing heat pump retrofit tenant comfort thermostat setback "
                        "backup", ["kowalczyk2022"]))
    t.turn(None, read("kowalczyk2022"))
    t.turn(None, search("winter peak demand residential heat pumps resistance backup study",
                        ["agri2023"]))
    t.turn(None, read("agri2023"))
    # lap 31: third failure
    t.turn(prose(
        """
        For a -24 °C design temperature the Nordic paper's results by climate zone are the best
        anchor. Getting the full text.
        """
    ), paywalled_pdf())
    t.turn(None, read("nhpa2022"))
    t.turn(None, search("hybrid heat pump existing boiler field results switchover temperature",
                        ["decker2022"]))
    t.turn(None, read("decker2022"))
    t.turn(None, lookup("hollis2022"))
    t.turn(None, lookup("marsh2023"))
    t.turn(None, lookup("park2021"))
    t.turn(None, search("Northern Plains Energy Office NPEO-2021-07 ductless heat pump report",
                        ["npeo2021"]))
    t.turn(None, lookup("decker2022"))
    t.answer(prose(
        f"""
        **Cold-climate air-source heat pumps: the field evidence** (Eastvale, design
        temperature -24 °C)

        Every source cited was {RESEARCH_CONSTRAINT}; older studies found on the way were used
        only to find newer work.

        **1. Seasonal efficiency in real homes.** Field studies find seasonal COPs between
        about 2.0 and 3.3. Forty-eight houses with design temperatures of -22 to -29 °C reached 2.3-3.3
        with backup included, median 2.8 [1]; 31 ductless systems in a colder climate reached
        2.4-3.1 [2]; 96 metered homes in a utility program averaged 2.6 (2.0-3.3) [3]. Nordic
        air-to-water systems had a median SPF of 2.7 [4], about 2.4 in the zone nearest -25 °C
        [5]; at design temperatures of -28 to -33 °C SPF was 2.2-2.8 [6].

        **2. Deep cold.** In the laboratory, COP was 1.9-2.5 at -15 °C and 1.4-1.8 at -25 °C;
        capacity at -25 °C was 58-81 % of the 8.3 °C rating, and two of six units shut down
        below -28 °C [7]. In homes, capacity at -25 °C was 52-68 % of rated [2] and hourly COP
        near -20 °C averaged 1.8 [1]. Defrost takes 4-12 % of winter electricity, mostly
        between -5 and +2 °C [8].

        **3. Backup heat.** Backup supplied a median 6 % of annual heat, but over 20 % where
        units covered less than 80 % of the design load [1]; 9 % across a program, 17 % where
        lockouts stayed at the -10 °C default [3]; 15-30 % at the coldest sites [6]. Keeping
        the existing boiler in a hybrid let the heat pump supply 78-92 % of heat and cut
        emissions by 55-70 % [9]. Resistance backup drives winter peaks, two to three times
        those of right-sized units [10]; steady thermostat setpoints halve its use [11].

        **4. Installation.** Size from a room-by-room heat-loss calculation so that capacity at
        the design temperature meets the load [12, 13]; only 38 % of installers always do this
        [14]. Set and record backup lockouts at commissioning: 22 % of program installs were
        misconfigured [3]. Check electrical capacity early: 14 % of homes needed a service
        upgrade [3], median USD 2,300, avoided by load management in 40 % of cases [15]. With
        radiators, bring supply water to 45-55 °C [5, 16]. Brief tenants [11].

        **For Eastvale.** With units sized for -24 °C, expect a seasonal COP of about 2.4-2.8
        and backup of roughly 5-12 % of heat [1, 3, 5]; hybrids suit homes with small
        electrical services [9, 15].

        **References**
        1. Marsh, Okonkwo and Lindahl (2023). Energy and Buildings Review 41(3).
        2. Northern Plains Energy Office (2021). Report NPEO-2021-07.
        3. Meridian Evaluation Group for Lakeshore Power & Light (2024). Program evaluation.
        4. Lindqvist, Berg, Aalto and Haugen (2022). Nordic Journal of Building Physics 9(4).
        5. Nordic Heat Pump Association (2022). Conference write-up of [4].
        6. Boreal Housing Research Centre (2021). Report BHRC-TR-2021-03.
        7. Hollis and Varga (2022). Journal of Building Thermal Systems 18(2).
        8. Park, Demir and Novak (2021). ICHPS 2021, paper 118.
        9. Decker and Lunde (2022). Applied Residential Energy 4(1).
        10. Aurora Grid Research Institute (2023). Winter peak impacts of residential heat pumps.
        11. Kowalczyk and Brennan (2022). Housing and Energy Research 15(2).
        12. Cold Climate Heat Pump Council (2023). Sizing guide, 2nd edition.
        13. Tran (2023). HVAC Practice Journal, March 2023.
        14. Greaves, Amari and Holt (2022). Building Services Practice 12(1).
        15. Whitcombe and Osei (2024). Energy Policy Letters 6.
        16. Ruiz, Petrov and Andersen (2023). Case Studies in Building Energy 7.

        Not accessed: the full text of [4]; the publisher says the {RESEARCH_FAILURE} or a
        purchase, so only its abstract and the write-up [5] were used.
        """
    ))
    return t


# =============================================================================================
# parallel: a health check across four regions with parallel tool calls
#
# Eight laps, most with two to four calls at once. One probe fails (the probe agent in
# ap-southeast-2 is unreachable); an assistant message carries both text and tool calls.
# =============================================================================================

PARALLEL_FAILURE = "PROBE_AGENT_UNREACHABLE"
PARALLEL_NOW = datetime(2024, 10, 8, 11, 5, tzinfo=UTC)
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "ap-southeast-2"]

PARALLEL_SYSTEM = prose(
    """
    You help the site reliability team of Larchmont, an online retailer, during incidents. You
    can probe services, read metrics, deploy history and dependency health, page on-call
    teams, update the public status page and open tickets.

    Run checks that do not depend on each other in parallel, in one step. Severity guide:
    SEV-1, checkout down or failing for more than 5 % of customers anywhere; SEV-2,
    customer-facing degradation in one region for more than 10 minutes; SEV-3, internal
    tooling or monitoring broken with no customer impact (ticket, no page). Page only for
    SEV-1 and SEV-2, and page the team that owns the cause, not the first team whose graph
    looks bad. Times are UTC; it is now 11:05.
    """
)

PARALLEL_TOOLS = [
    tool("http_check",
         "Run synthetic HTTP probes against a service from the probe agents in one region: 20 "
         "requests to the given path, reporting status codes and latency percentiles.",
         {"region": {"type": "string", "enum": REGIONS},
          "service": {"type": "string"},
          "path": {"type": "string", "default": "/healthz/deep"}},
         ["region", "service"]),
    tool("get_metrics",
         "Read a service metric in one region over a recent window: a summary and points at "
         "15-minute resolution. Metrics: latency_p95_ms, error_rate_pct, requests_per_min, "
         "orders_per_min.",
         {"region": {"type": "string", "enum": REGIONS},
          "service": {"type": "string"},
          "metric": {"type": "string",
                     "enum": ["latency_p95_ms", "error_rate_pct", "requests_per_min",
                              "orders_per_min"]},
          "window": {"type": "string", "default": "6h"}},
         ["region", "service", "metric"]),
    tool("get_recent_deploys",
         "List deploys and feature-flag changes in a region since a time, optionally for one "
         "service, with version, author, change summary and rollout stage.",
         {"region": {"type": "string", "enum": REGIONS},
          "service": {"type": "string"},
          "since": {"type": "string", "format": "date-time"}},
         ["region", "since"]),
    tool("get_dependency_status",
         "Health of a service's downstream dependencies in a region, as the service's own "
         "clients see them: latency, error rate and circuit-breaker state for each.",
         {"region": {"type": "string", "enum": REGIONS}, "service": {"type": "string"}},
         ["region", "service"]),
    tool("get_rollout_status",
         "Show a service's progressive rollout: the version in each stage and region, and "
         "when the next stage is scheduled.",
         {"service": {"type": "string"}},
         ["service"]),
    tool("page_oncall",
         "Page a team's primary on-call engineer and open an incident.",
         {"team": {"type": "string"},
          "severity": {"type": "string", "enum": ["SEV-1", "SEV-2"]},
          "summary": {"type": "string"}},
         ["team", "severity", "summary"]),
    tool("post_status_update",
         "Publish an update on the public status page for one component.",
         {"component": {"type": "string"},
          "status": {"type": "string",
                     "enum": ["operational", "degraded_performance", "partial_outage",
                              "major_outage"]},
          "message": {"type": "string"}},
         ["component", "status", "message"]),
    tool("create_ticket",
         "Open a ticket in a team's queue (for problems that do not need a page).",
         {"team": {"type": "string"}, "title": {"type": "string"},
          "body": {"type": "string"}, "priority": {"type": "string",
                                                   "enum": ["P2", "P3", "P4"]}},
         ["team", "title", "body", "priority"]),
]


def _probe(rng: random.Random, region: str, p50: float, p95: float, timeouts: int) -> dict:
    codes = {"200": 20 - timeouts}
    if timeouts:
        codes["504"] = timeouts
    p90 = p50 + (p95 - p50) * rng.uniform(0.7, 0.85)
    p99 = p95 * rng.uniform(1.05, 1.2)
    return {"region": region, "service": "checkout-api", "path": "/healthz/deep",
            "agent": f"probe-{region.replace('-', '')[:6]}-0{rng.randint(1, 4)}",
            "requests": 20, "status_codes": codes,
            "latency_ms": {"p50": round(p50), "p90": round(p90), "p95": round(p95),
                           "p99": round(p99), "max": round(p99 * rng.uniform(1.0, 1.1))},
            "timeouts": timeouts, "timeout_ms": 5000,
            "checked_at": iso_ms(at(PARALLEL_NOW, rng.uniform(1, 9)))}


def _series(rng: random.Random, region: str, service: str, metric: str, base: float,
            jump_at: datetime | None = None, jumped: float | None = None,
            unit: str = "") -> dict:
    def rounded(value: float) -> float | int:
        return round(value, 2) if base < 10 else int(round(value))

    points: dict[str, float | int] = {}
    start = PARALLEL_NOW - timedelta(hours=6)
    for i in range(24):
        moment = start + timedelta(minutes=15 * (i + 1))
        level = jumped if jump_at and moment >= jump_at else base
        points[f"{moment:%H:%M}"] = rounded(level * rng.uniform(0.92, 1.08))
    values = list(points.values())
    summary = {"min": min(values), "max": max(values), "last": values[-1],
               "same_time_last_week": rounded(base * rng.uniform(0.95, 1.05))}
    return {"region": region, "service": service, "metric": metric, "unit": unit,
            "window": "6h", "resolution": "15m", "summary": summary, "points": points}


def build_parallel() -> Transcript:
    t = Transcript("parallel", seed=1008, system_prompt=PARALLEL_SYSTEM, tools=PARALLEL_TOOLS,
                   indent=2)
    rng = t.rng
    jump = datetime(2024, 10, 8, 9, 14, tzinfo=UTC)
    t.user("Customers are reporting that checkout is slow in Europe since this morning. Check "
           "checkout-api in all four regions and tell me whether we need to page anyone.")
    t.turn(None,
           Call("http_check", {"region": "us-east-1", "service": "checkout-api"},
                _probe(rng, "us-east-1", 84, 191, 0)),
           Call("http_check", {"region": "us-west-2", "service": "checkout-api"},
                _probe(rng, "us-west-2", 91, 214, 0)),
           Call("http_check", {"region": "eu-west-1", "service": "checkout-api"},
                _probe(rng, "eu-west-1", 1310, 2840, 3)),
           Call("http_check", {"region": "ap-southeast-2", "service": "checkout-api"},
                {"error": PARALLEL_FAILURE, "region": "ap-southeast-2",
                 "message": "synthetic probe agent probe-apse2-03 did not answer: dial tcp "
                            "10.64.12.7:9443: i/o timeout (3 attempts over 30 s). No requests "
                            "were sent to checkout-api.",
                 "agent_last_seen": "2024-10-08T07:41:12.408Z"}))
    t.turn(prose(
        f"""
        eu-west-1 is degraded: p95 2.84 s against about 0.2 s in the US regions, and 3 of 20
        probes timed out with 504. The ap-southeast-2 check failed with {PARALLEL_FAILURE}:
        the probe agent itself is down, which tells us nothing about checkout there, so I'll
        read its metrics instead of probing again. In parallel: eu-west-1 latency and traffic,
        ap-southeast-2 latency, and what changed in eu-west-1 this morning.
        """
    ),
        Call("get_metrics", {"region": "eu-west-1", "service": "checkout-api",
                             "metric": "requests_per_min", "window": "6h"},
             _series(rng, "eu-west-1", "checkout-api", "requests_per_min", 5120)),
        Call("get_metrics", {"region": "eu-west-1", "service": "checkout-api",
                             "metric": "latency_p95_ms", "window": "6h"},
             _series(rng, "eu-west-1", "checkout-api", "latency_p95_ms", 205, jump, 2790, "ms")),
        Call("get_metrics", {"region": "ap-southeast-2", "service": "checkout-api",
                             "metric": "latency_p95_ms", "window": "6h"},
             _series(rng, "ap-southeast-2", "checkout-api", "latency_p95_ms", 232, unit="ms")),
        Call("get_recent_deploys", {"region": "eu-west-1", "since": "2024-10-08T00:00:00Z"}, {
            "region": "eu-west-1", "since": "2024-10-08T00:00:00Z",
            "changes": [
                {"at": "2024-10-08T06:02:44Z", "kind": "deploy", "service": "search-api",
                 "version": "5.31.2", "author": "deploy-bot", "summary": "ranking model refresh"},
                {"at": "2024-10-08T08:40:09Z", "kind": "flag", "service": "storefront-web",
                 "flag": "promo-banner-autumn", "change": "0% -> 100%", "author": "j.moreau"},
                {"at": "2024-10-08T09:12:31Z", "kind": "deploy", "service": "inventory-svc",
                 "version": "2.14.0", "previous": "2.13.4", "author": "deploy-bot",
                 "summary": "reservation audit trail (INV-2291)", "rollout_stage": 1},
                {"at": "2024-10-08T10:30:02Z", "kind": "deploy", "service": "email-worker",
                 "version": "1.8.0", "author": "deploy-bot", "summary": "template cache"},
            ],
            "checkout-api": "no deploys since 2024-10-03 (version 7.2.1)"}),
    )
    t.turn(None,
           Call("get_dependency_status", {"region": "eu-west-1", "service": "checkout-api"}, {
               "region": "eu-west-1", "service": "checkout-api",
               "dependencies": [
                   {"name": "inventory-svc", "p95_ms": 2410, "p95_ms_last_week": 118,
                    "error_rate_pct": 4.8, "circuit_breaker": "half-open", "timeouts_per_min": 37},
                   {"name": "payments-gateway", "p95_ms": 312, "p95_ms_last_week": 298,
                    "error_rate_pct": 0.1, "circuit_breaker": "closed"},
                   {"name": "pricing-svc", "p95_ms": 41, "p95_ms_last_week": 39,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
                   {"name": "redis-sessions", "p95_ms": 2, "p95_ms_last_week": 2,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
                   {"name": "orders-db (postgres)", "p95_ms": 9, "p95_ms_last_week": 8,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
               ]}),
           Call("get_metrics", {"region": "eu-west-1", "service": "checkout-api",
                                "metric": "error_rate_pct", "window": "6h"},
                _series(rng, "eu-west-1", "checkout-api", "error_rate_pct", 0.3, jump, 2.1, "%")),
           Call("get_dependency_status", {"region": "us-east-1", "service": "checkout-api"}, {
               "region": "us-east-1", "service": "checkout-api",
               "dependencies": [
                   {"name": "inventory-svc", "p95_ms": 109, "p95_ms_last_week": 112,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
                   {"name": "payments-gateway", "p95_ms": 287, "p95_ms_last_week": 301,
                    "error_rate_pct": 0.1, "circuit_breaker": "closed"},
                   {"name": "pricing-svc", "p95_ms": 37, "p95_ms_last_week": 38,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
                   {"name": "redis-sessions", "p95_ms": 2, "p95_ms_last_week": 2,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
                   {"name": "orders-db (postgres)", "p95_ms": 8, "p95_ms_last_week": 8,
                    "error_rate_pct": 0.0, "circuit_breaker": "closed"},
               ]}))
    t.turn(None,
           Call("get_metrics", {"region": "eu-west-1", "service": "inventory-svc",
                                "metric": "latency_p95_ms", "window": "6h"},
                _series(rng, "eu-west-1", "inventory-svc", "latency_p95_ms", 118, jump, 2380,
                        "ms")),
           Call("get_recent_deploys", {"region": "eu-west-1", "service": "inventory-svc",
                                       "since": "2024-10-08T00:00:00Z"}, {
               "region": "eu-west-1", "service": "inventory-svc",
               "changes": [{
                   "at": "2024-10-08T09:12:31Z", "kind": "deploy", "version": "2.14.0",
                   "previous": "2.13.4", "author": "deploy-bot", "approved_by": "a.kowalski",
                   "summary": "reservation audit trail (INV-2291): every stock reservation now "
                              "writes an audit row to inventory-audit-db before returning",
                   "rollback": "one command: deployctl rollback inventory-svc --region eu-west-1",
                   "owner_team": "inventory"}]}))
    t.turn(None,
           Call("get_rollout_status", {"service": "inventory-svc"}, {
               "service": "inventory-svc", "target_version": "2.14.0",
               "stages": [
                   {"stage": 1, "regions": ["eu-west-1"], "state": "complete",
                    "finished_at": "2024-10-08T09:14:02Z"},
                   {"stage": 2, "regions": ["us-east-1", "us-west-2"], "state": "scheduled",
                    "starts_at": "2024-10-08T14:00:00Z", "auto_promote": True},
                   {"stage": 3, "regions": ["ap-southeast-2"], "state": "scheduled",
                    "starts_at": "2024-10-09T02:00:00Z", "auto_promote": True}],
               "health_gate": "error_rate_pct < 5 for 30 min (passed at 09:44)"}),
           Call("get_metrics", {"region": "eu-west-1", "service": "checkout-api",
                                "metric": "orders_per_min", "window": "6h"},
                _series(rng, "eu-west-1", "checkout-api", "orders_per_min", 412, jump, 338)),
           Call("get_metrics", {"region": "ap-southeast-2", "service": "checkout-api",
                                "metric": "error_rate_pct", "window": "6h"},
                _series(rng, "ap-southeast-2", "checkout-api", "error_rate_pct", 0.2, unit="%")))
    t.turn(prose(
        """
        This is SEV-2: checkout in eu-west-1 has been degraded for almost two hours, orders are
        down about 18 % on last week, and the cause is inventory-svc 2.14.0, which blocks every
        reservation on an audit write. The 5 % error health gate passed, so stage 2 will take
        the same version to both US regions at 14:00. Paging inventory and updating the status
        page at the same time.
        """
    ),
        Call("page_oncall", {"team": "inventory", "severity": "SEV-2",
                             "summary": "eu-west-1 checkout p95 2.8 s since 09:14 UTC; cause "
                                        "inventory-svc 2.14.0 (INV-2291, synchronous audit "
                                        "write). Roll back in eu-west-1 and hold stage 2 "
                                        "(US, 14:00 UTC)."},
             {"incident": "INC-48213", "severity": "SEV-2", "team": "inventory",
              "paged": "m.okafor (primary)", "acknowledged": False,
              "escalates_to": "inventory secondary in 10 min",
              "channel": "#inc-48213", "created_at": "2024-10-08T11:06:41Z"}),
        Call("post_status_update", {"component": "Checkout (Europe)",
                                    "status": "degraded_performance",
                                    "message": "Checkout in Europe is slower than usual and "
                                               "some orders may fail to complete. We have "
                                               "found the cause and are fixing it."},
             {"ok": True, "component": "Checkout (Europe)", "status": "degraded_performance",
              "published_at": "2024-10-08T11:06:43Z",
              "url": "https://status.larchmont.example/incidents/7qk2m"}),
    )
    t.turn(None, Call("create_ticket", {
        "team": "observability",
        "title": "Probe agent probe-apse2-03 unreachable since 07:41 UTC",
        "body": f"http_check in ap-southeast-2 fails with {PARALLEL_FAILURE} (dial tcp "
                "10.64.12.7:9443: i/o timeout). checkout-api there is healthy by its own "
                "metrics (p95 about 230 ms), so no customer impact, but we are blind to "
                "synthetic checks in that region.",
        "priority": "P3"}, {"ticket": "OBS-3317", "team": "observability", "priority": "P3",
                            "status": "new", "url": "https://tickets.larchmont.example/OBS-3317"}))
    t.answer(prose(
        f"""
        Yes, and I have paged: **SEV-2, incident INC-48213, inventory on-call (m.okafor)**.

        - **eu-west-1: degraded since 09:14 UTC.** checkout-api p95 is about 2.8 s (205 ms
          last week), errors 2.1 % (0.3 %), orders per minute down about 18 % while traffic is
          normal, so this is not load. checkout-api
          has not changed since 3 October; its inventory-svc dependency went from 118 ms to
          2.4 s p95 with its circuit breaker half-open. Cause: inventory-svc 2.14.0, deployed
          to eu-west-1 at 09:12, which writes an audit row synchronously on every stock
          reservation (INV-2291).
        - **us-east-1 and us-west-2: healthy** (p95 about 190-215 ms, no errors; inventory-svc
          answers in 109 ms in us-east-1), but rollout stage 2 will put 2.14.0 in both at
          **14:00 UTC** automatically: the health gate only
          checks errors, and it passed. The page asks inventory to roll back eu-west-1
          (`deployctl rollback inventory-svc --region eu-west-1`) and hold stage 2.
        - **ap-southeast-2: healthy by its metrics** (p95 about 230 ms, errors 0.2 %, both
          flat). The synthetic
          check failed with {PARALLEL_FAILURE}: probe agent probe-apse2-03 has been down since
          07:41. That is SEV-3, so a ticket rather than a page: OBS-3317 for observability.

        The status page shows Checkout (Europe) as degraded performance. Worth a follow-up:
        the rollout health gate should include latency, not only errors.
        """
    ))
    return t


# =============================================================================================
# The manifest, the README, and writing or checking the files
# =============================================================================================


@dataclass
class Spec:
    """What the manifest says about one transcript, next to the function that builds it."""

    name: str
    build: Callable[[], Transcript]
    title: str
    description: str
    lessons: list[str]
    probes: dict[str, str]


SPECS = [
    Spec(
        "incident", build_incident,
        "Why did the nightly export fail?",
        "An incident investigation of 14 laps, almost every one a log or metrics search with a "
        "bulky result. One line in the lap-3 worker log matters: the export's database step "
        "timed out waiting for a lock held by a maintenance job (SQLSTATE 55P03, pid 39150). "
        "Everything else is routine noise until lap 12, when the agent acts on that line, and "
        "the final answer cites it. Lesson 02 (trimming) uses it to show plain trimming losing "
        "the one finding; lesson 03 (summarising) shows a roll-up summary keeping it.",
        ["02-trimming", "03-summarising"],
        {"goal": "the finance team's 06:00 reconciliation", "finding": "55P03"},
    ),
    Spec(
        "refund", build_refund,
        "A refund the payment processor declines",
        "A support agent of 9 laps: order lookup, return inspection, eligibility, then the "
        "refund to the original card fails with a permanent decline code (card_account_closed, "
        "retryable=false). The agent does not retry the dead card, reads the policy and "
        "escalates to billing with its reason, then writes to the customer. Small enough to "
        "count by hand in lesson 01 (budget); lesson 04 (scratchpad) records the failure as a "
        "DO NOT RETRY line kept by code.",
        ["01-budget", "04-scratchpad"],
        {"goal": "including the shipping I paid", "failure": REFUND_DECLINE},
    ),
    Spec(
        "coding", build_coding,
        "A one-cent bug, and a module the agent must not touch",
        "A coding agent of 13 laps fixing a rounding mismatch between the checkout summary and "
        "the card charge. The first user message forbids changes to the payments module, where "
        "the obvious fix would go. The run reads seven source files (most of 2,500-3,600 tokens, "
        "one of them twice), runs the tests, greps, edits twice and reviews the diff. Lesson 05 "
        "(age compression) shrinks the old file reads; lesson 03 shows the compaction trap: a "
        "summary that drops the constraint.",
        ["05-age-compression", "03-summarising"],
        {"goal": "charged one cent more than the order summary",
         "constraint": "modify the payments module"},
    ),
    Spec(
        "research", build_research,
        "Forty laps of research under a late constraint",
        "A research agent of 40 laps answering a housing authority's questions about heat "
        "pumps in cold climates. The goal is in the first user message; a second user message "
        "before lap 2 adds a constraint (cite only sources published in 2021 or later). "
        "fetch_pdf fails on the same paywalled URL at laps 7, 17 and 31 because the agent "
        "forgot the earlier failures. The final report honours the constraint. Lesson 06 "
        "(assembly) compares memory policies on it: whether the goal, the constraint and the "
        "failure survive to the last lap; lessons 02 and 04 use it for high/low-water trimming "
        "and for DO NOT RETRY.",
        ["06-assembly", "04-scratchpad", "02-trimming"],
        {"goal": "replacing oil and propane boilers", "constraint": RESEARCH_CONSTRAINT,
         "failure": RESEARCH_FAILURE},
    ),
    Spec(
        "parallel", build_parallel,
        "A health check across four regions, in parallel",
        "An on-call agent of 8 laps that calls two to four tools at once: probes, metrics, "
        "deploys and dependencies across four regions. One probe returns an error "
        "(PROBE_AGENT_UNREACHABLE); lap 2's assistant message has both text and tool calls. "
        "Lesson 02 (trimming) uses it to show that a turn group holds all the parallel calls "
        "and all their results; lesson 01 counts tool calls in the budget.",
        ["02-trimming", "01-budget"],
        {"goal": "checkout is slow in Europe", "failure": PARALLEL_FAILURE},
    ),
]

# Token counts measured with tiktoken's cl100k_base by the course's rule (ctxlab.count_messages:
# 3 per message, the tokens of every string field, 1 more for `name`, 3 per tool call plus its
# name and arguments, several calls in one message read as one multi_tool_use.parallel call, a
# tool result read as written by functions.NAME without its tool_call_id, 3 for reply priming;
# ctxlab.count_tools for the schemas, the typed listing the model reads). This script cannot measure them itself (standard library
# only): after changing any content, re-measure and update this table; the test suite compares
# it with ctxlab's own count.
MEASURED_TOKENS: dict[str, dict[str, int]] = {
    "incident": {"messages": 23673, "tool_results": 21790, "largest_message": 2966, "tools": 615},
    "refund": {"messages": 4866, "tool_results": 3622, "largest_message": 1152, "tools": 538},
    "coding": {"messages": 25961, "tool_results": 23220, "largest_message": 3631, "tools": 321},
    "research": {"messages": 44627, "tool_results": 41711, "largest_message": 2504, "tools": 260},
    "parallel": {"messages": 6250, "tool_results": 4570, "largest_message": 395, "tools": 601},
}


def _json_text(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent) + "\n"


def _jsonl_text(messages: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(message, ensure_ascii=False) + "\n" for message in messages)


def _occurrences(messages: list[dict[str, Any]], probe: str) -> list[int]:
    """Indices of the messages whose content or tool-call arguments contain ``probe``."""
    found = []
    for index, message in enumerate(messages):
        texts = [message.get("content") or ""]
        texts += [call["function"]["arguments"] for call in message.get("tool_calls", [])]
        if any(probe in text for text in texts):
            found.append(index)
    return found


def _manifest_entry(spec: Spec, transcript: Transcript) -> dict[str, Any]:
    messages = transcript.messages
    for name, probe in spec.probes.items():
        if not _occurrences(messages, probe):
            raise ValueError(f"{spec.name}: probe {name!r} ({probe!r}) occurs in no message")
    if not messages[1]["content"].count(spec.probes["goal"]):
        raise ValueError(f"{spec.name}: the goal probe is not in the first user message")
    entry: dict[str, Any] = {
        "title": spec.title,
        "description": spec.description,
        "lessons": spec.lessons,
        "laps": transcript.lap,
        "messages": len(messages),
        "tools": [t["function"]["name"] for t in transcript.tools],
        "probes": spec.probes,
        "probe_messages": {name: _occurrences(messages, probe)
                           for name, probe in spec.probes.items()},
    }
    if spec.name in MEASURED_TOKENS:
        entry["tokens"] = MEASURED_TOKENS[spec.name]
    return entry


README_HEAD = """\
# Transcripts

Five generated agent runs that the lessons replay, lap by lap, to show what each memory policy
keeps and loses. Each one is a complete, valid Chat Completions history: the system prompt, the
user's request, every model call with its tool calls, every tool result, and a final answer.

They were written for Context Window Lab and generated by `make_transcripts.py` in this folder.
The companies, people, hosts, orders, papers and web sites in them are invented; web addresses
use the reserved `.example` domain and DOIs the `10.5555` test prefix.

## Files

| file | what it holds |
| --- | --- |
| `<name>.jsonl` | the transcript: one message per line, JSON, UTF-8 |
| `<name>.tools.json` | the tool schemas the agent had, in the OpenAI `tools` format |
| `transcripts.json` | the manifest: title, description, lessons, laps, message count, tool names, probes, measured tokens |
| `make_transcripts.py` | the generator; `python data/make_transcripts.py` rewrites every file here |

Load them with `ctxlab.course.load_transcript(name)`, `ctxlab.course.load_tools(name)` and
`ctxlab.course.transcript_info(name)`.

## Message schema

Every message is an OpenAI Chat Completions message dict plus one course key, `step`, the lap.
Keys appear in a fixed order.

- `{"role": "system", "content": str, "step": 0}`, always first.
- `{"role": "user", "content": str, "step": k}`.
- `{"role": "assistant", "content": str | null, "tool_calls": [...], "step": k}`. `content` is
  `null` when the assistant only calls tools, a string when it says something (with or without
  tool calls). `tool_calls` is left out when there are none. Each call is
  `{"id": "call_<24 letters and digits>", "type": "function", "function": {"name": str,
  "arguments": str}}`, where `arguments` is a JSON-encoded object.
- `{"role": "tool", "tool_call_id": str, "content": str, "step": k}`. `content` is a string:
  plain text for logs, pages, files and test output, JSON text for structured results, and
  JSON such as `{"error": ..., "message": ...}` for failures.

Rules every file follows (the generator checks the ones it can, `ctxlab.validate_messages`
checks the rest):

- `step` is 0 for the system prompt and the first user message. Lap k is one assistant message
  (one model call) and the tool results answering it, all with `step` k. A user message that
  arrives before lap k's assistant message also has `step` k. Steps never decrease.
- Every tool call is answered by exactly one tool message; the answers come right after the
  assistant message that made the calls, before any other message. Call ids are unique within a
  transcript.
- The last message is an assistant message with a text answer and no tool calls.
- There is no `pinned` key (the lessons decide what to pin) and no `name` key.

## The transcripts
"""

README_PROBES = """\
## Probes

A probe is a short exact string that appears in exactly the messages that carry one fact, so a
test can ask whether the fact survived a memory policy: build the context for a lap, then look
for the probe in what was kept. `transcripts.json` lists each transcript's probes under
`probes` and, under `probe_messages`, the indices of the messages (0-based, counting the system
prompt) in which each one occurs, in a message's `content` or in a tool call's `arguments`.

| probe | meaning | transcripts |
| --- | --- | --- |
| `goal` | a piece of the first user message, the task itself | all |
| `constraint` | a rule the user set, which a summary must not lose | coding, research |
| `failure` | the error of the tool call that failed | refund, research, parallel |
| `finding` | the one early result the final answer depends on | incident |

Where the agent repeats a fact later (the research agent acknowledging the constraint, the
final answers citing the finding or the failure), it repeats the probe string exactly, so those
messages count as carrying the fact too.
"""

README_TAIL = """\
## How they were made

`make_transcripts.py` uses only the Python standard library and no network. The story of each
run (the request, the agent's reasoning, the decisive results, the final answer) is written by
hand in one function per transcript. The bulk around it (log lines, metric tables, search
results, web pages, source files, test output) is produced from templates filled in by
`random.Random` with a fixed seed per transcript, and where one result depends on another it is
computed from it: the coding agent's grep hits, edit summaries and diff come from the source
files it reads, and the test output from the test file.

```
python data/make_transcripts.py          # rewrite every file in data/, byte for byte the same
python data/make_transcripts.py --check  # exit 1 and name the files that differ
```

Run `--check` in the tests to catch hand edits or drift. The token counts cannot be measured
without the tokenizer, so the generator carries them as a table (`MEASURED_TOKENS`); after
changing any content, re-measure with `ctxlab.count_messages` and `ctxlab.count_tools` and update
it.

## Real recorded runs: `real/`

The folder `real/` holds fourteen short agent runs recorded against the real OpenAI API, taken
from the tests of an MIT-licensed open-source project; its `README.md` gives the source, the
commit, the licence and how they were converted. The library's tests use them to check that
ctxlab accepts, counts and fits what the API accepted; the lessons do not use them.

## Licence

The five transcripts above were written for Context Window Lab and are released under the same
licence as the rest of the project (MIT); nothing in them is copied from another source. The
files in `real/` keep their own MIT licence, whose text is in `real/LICENSE.pydantic-ai`.
"""


def _readme(entries: dict[str, dict[str, Any]]) -> str:
    parts = [README_HEAD]
    for spec in SPECS:
        entry = entries[spec.name]
        probes = ", ".join(f"`{name}`: `{value}`" for name, value in spec.probes.items())
        parts.append(f"### `{spec.name}`: {spec.title}\n\n{spec.description}\n\n"
                     f"Lessons: {', '.join(spec.lessons)}. Tools: "
                     f"{', '.join(f'`{name}`' for name in entry['tools'])}. Probes: {probes}.\n")
    parts.append("## Sizes\n\n"
                 "Tokens are measured, not estimated: tiktoken's `cl100k_base`, counted by the "
                 "course's rule (`ctxlab.count_messages`): 3 tokens per message, the tokens of "
                 "every string field, 1 more when `name` is set, 3 per tool call plus the tokens of "
                 "its name and arguments (several calls in one message are read as one "
                 "`multi_tool_use.parallel` call), a tool result read as written by `functions.NAME` "
                 "without its `tool_call_id`, and 3 for priming the reply; `step` is not counted. Tool "
                 "schemas are counted apart (`ctxlab.count_tools`: the typed listing the model reads, "
                 "not their JSON), because they are sent with every request.\n")
    rows = ["| transcript | messages | laps | tokens | of which tool results | largest message "
            "| tool schemas |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for spec in SPECS:
        entry = entries[spec.name]
        tokens = entry.get("tokens")
        if tokens:
            share = 100 * tokens["tool_results"] / tokens["messages"]
            rows.append(f"| {spec.name} | {entry['messages']} | {entry['laps']} | "
                        f"{tokens['messages']:,} | {tokens['tool_results']:,} ({share:.0f} %) | "
                        f"{tokens['largest_message']:,} | {tokens['tools']:,} |")
        else:
            rows.append(f"| {spec.name} | {entry['messages']} | {entry['laps']} | not measured "
                        "| | | |")
    parts.append("\n".join(rows) + "\n")
    parts.append(README_PROBES)
    parts.append(README_TAIL)
    return "\n".join(parts)


def render_all() -> dict[str, str]:
    """Every file this script writes, by file name, as text."""
    files: dict[str, str] = {}
    manifest: dict[str, dict[str, Any]] = {}
    for spec in SPECS:
        transcript = spec.build()
        files[f"{spec.name}.jsonl"] = _jsonl_text(transcript.messages)
        files[f"{spec.name}.tools.json"] = _json_text(transcript.tools)
        manifest[spec.name] = _manifest_entry(spec, transcript)
    files["transcripts.json"] = _json_text(manifest)
    files["README.md"] = _readme(manifest)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of writing; exit 1 on drift")
    args = parser.parse_args(argv)
    files = render_all()
    if args.check:
        stale = []
        for name, text in files.items():
            path = DATA_DIR / name
            if not path.exists() or path.read_bytes() != text.encode("utf-8"):
                stale.append(name)
        if stale:
            print("out of date: " + ", ".join(stale) +
                  "\nrun `python data/make_transcripts.py` to regenerate", file=sys.stderr)
            return 1
        print(f"all {len(files)} files up to date")
        return 0
    for name, text in files.items():
        (DATA_DIR / name).write_bytes(text.encode("utf-8"))
    print(f"wrote {len(files)} files to {DATA_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
