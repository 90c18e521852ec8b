"""The incident transcript: why did the nightly export fail?"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from .common import (
    UTC,
    Call,
    Timeline,
    Transcript,
    at,
    hex_id,
    iso_ms,
    prose,
    py_log_time,
    thousands,
    tool,
    uuid4,
)

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
