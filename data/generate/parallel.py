"""The parallel transcript: a health check across four regions with parallel tool calls."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from .common import (
    UTC,
    Call,
    Transcript,
    at,
    iso_ms,
    prose,
    tool,
)

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
