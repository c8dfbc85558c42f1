"""Prometheus metrics (the text exposition format, written by prometheus_client): frames and bytes
by direction and server, findings by code and severity, and a latency histogram of answered
requests by method and server. One set of names for both places that serve them: `mcptap view`
counts a database when scraped (`exposition`), `mcptap proxy` what it records as it goes
(analyzer/report/livemetrics.py). docs/grafana-dashboard.json is a dashboard on these names."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from mcptap.store import metricreads
from mcptap.wire.textsafe import printable

BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""The latency histogram's bucket bounds in seconds."""
NAMES = ("mcptap_frames_total", "mcptap_frame_bytes_total", "mcptap_findings_total", "mcptap_request_latency_seconds")


def _label(value) -> str:
    return printable(str(value)) if value is not None else ""


def families(frames: Iterable[tuple], findings: Iterable[tuple], latency: Iterable[tuple]) -> list:
    """The metric families of counts: `frames` (server, direction, frames, bytes), `findings`
    (server, code, severity, findings), `latency` (server, method, bucket, requests, latency sum),
    `bucket` the index in BOUNDS of the first bound a latency is at most (len(BOUNDS): above all)."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    counted = CounterMetricFamily("mcptap_frames", "Frames recorded, by direction (c2s: to the server) and server",
                                  labels=["server", "direction"])
    size = CounterMetricFamily("mcptap_frame_bytes", "Bytes of the frames recorded, by direction and server",
                               labels=["server", "direction"])
    for server, direction, count, total in frames:
        counted.add_metric([_label(server), _label(direction)], count)
        size.add_metric([_label(server), _label(direction)], total)
    found = CounterMetricFamily("mcptap_findings", "Findings of the analysed sessions, by code and severity",
                                labels=["server", "code", "severity"])
    for server, code, severity, count in findings:
        found.add_metric([_label(server), _label(code), _label(severity)], count)
    histogram = HistogramMetricFamily("mcptap_request_latency_seconds",
                                      "Seconds from a request to its answer, by method and server",
                                      labels=["server", "method"])
    series: dict[tuple, tuple[list[int], float]] = {}
    for server, method, bucket, count, total in latency:
        key = (_label(server), _label(method))
        counts, seconds = series.setdefault(key, ([0] * (len(BOUNDS) + 1), 0.0))
        counts[bucket] += count
        series[key] = (counts, seconds + (total or 0.0))
    for labels, (counts, seconds) in series.items():
        running, buckets = 0, []
        for bound, count in zip((*map(str, BOUNDS), "+Inf"), counts):
            running += count
            buckets.append((bound, running))
        histogram.add_metric(list(labels), buckets, seconds)
    return [counted, size, found, histogram]


def text(collect) -> tuple[bytes, str]:
    """(the exposition of the families `collect()` returns, its content type)."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.core import CollectorRegistry

    class Collector:
        def collect(self):
            yield from collect()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return generate_latest(registry), CONTENT_TYPE_LATEST


def exposition(conn: sqlite3.Connection) -> tuple[bytes, str]:
    """(the metrics of the whole database as text, its content type)."""
    return text(lambda: families(metricreads.frames_by_direction(conn), metricreads.findings_by_code(conn),
                                 metricreads.latency_buckets(conn, BOUNDS)))
