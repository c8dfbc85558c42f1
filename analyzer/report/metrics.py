"""Prometheus metrics of a database, as `mcptap view` serves them at /metrics (the text exposition
format, written by prometheus_client): frames and bytes by direction and server, findings by code
and severity, and a latency histogram of answered requests by method and server. Counted from
the database when asked (a scrape), so they grow as a recorder commits and an analysis stores.
docs/grafana-dashboard.json is a dashboard on these names."""

from __future__ import annotations

import sqlite3

from mcptap.store import metricreads
from mcptap.wire.textsafe import printable

BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""The latency histogram's bucket bounds in seconds."""
NAMES = ("mcptap_frames_total", "mcptap_frame_bytes_total", "mcptap_findings_total", "mcptap_request_latency_seconds")


def _label(value) -> str:
    return printable(str(value)) if value is not None else ""


def exposition(conn: sqlite3.Connection) -> tuple[bytes, str]:
    """(the metrics as text, its content type)."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.core import CollectorRegistry, CounterMetricFamily, HistogramMetricFamily

    class Database:
        def collect(self):
            frames = CounterMetricFamily("mcptap_frames", "Frames recorded, by direction (c2s: to the server) and server",
                                         labels=["server", "direction"])
            size = CounterMetricFamily("mcptap_frame_bytes", "Bytes of the frames recorded, by direction and server",
                                       labels=["server", "direction"])
            for server, direction, count, total in metricreads.frames_by_direction(conn):
                frames.add_metric([_label(server), _label(direction)], count)
                size.add_metric([_label(server), _label(direction)], total)
            findings = CounterMetricFamily("mcptap_findings", "Findings of the analysed sessions, by code and severity",
                                           labels=["server", "code", "severity"])
            for server, code, severity, count in metricreads.findings_by_code(conn):
                findings.add_metric([_label(server), _label(code), _label(severity)], count)
            latency = HistogramMetricFamily("mcptap_request_latency_seconds",
                                            "Seconds from a request to its answer, by method and server",
                                            labels=["server", "method"])
            series: dict[tuple, tuple[list[int], float]] = {}
            for server, method, bucket, count, total in metricreads.latency_buckets(conn, BOUNDS):
                counts, seconds = series.setdefault((_label(server), _label(method)), ([0] * (len(BOUNDS) + 1), 0.0))
                counts[bucket] += count
                series[(_label(server), _label(method))] = (counts, seconds + (total or 0.0))
            for labels, (counts, seconds) in series.items():
                running, buckets = 0, []
                for bound, count in zip((*map(str, BOUNDS), "+Inf"), counts):
                    running += count
                    buckets.append((bound, running))
                latency.add_metric(list(labels), buckets, seconds)
            yield from (frames, size, findings, latency)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Database())
    return generate_latest(registry), CONTENT_TYPE_LATEST
