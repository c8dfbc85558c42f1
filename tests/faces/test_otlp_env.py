"""Where live telemetry goes (analyzer/report/otlp_env.py): the option and the OTEL_EXPORTER_OTLP_*
variables as the OpenTelemetry exporter configuration reads them."""

from __future__ import annotations

import pytest

from mcptap.report import otlp_env

BASE = "http://127.0.0.1:4318"


def test_nothing_set_asks_for_nothing():
    assert otlp_env.resolve(None, {}) is None
    assert not otlp_env.wanted(None, {"OTEL_EXPORTER_OTLP_HEADERS": "a=b"})


@pytest.mark.parametrize("option, env, traces, metrics", [
    (BASE, {}, f"{BASE}/v1/traces", f"{BASE}/v1/metrics"),
    (BASE + "/", {}, f"{BASE}/v1/traces", f"{BASE}/v1/metrics"),
    (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE}, f"{BASE}/v1/traces", f"{BASE}/v1/metrics"),
    (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:1/custom"}, "http://h:1/custom", "http://h:1/custom/v1/metrics"),
    (None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:1/v1/traces"}, "http://h:1/v1/traces", "http://h:1/v1/metrics"),
    (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:2/x"},
     f"{BASE}/v1/traces", "http://m:2/x"),
    ("http://o:3", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4/x"}, "http://o:3/v1/traces", "http://o:3/v1/metrics"),
])
def test_the_urls_of_each_signal(option, env, traces, metrics):
    config = otlp_env.resolve(option, env)
    assert (config.traces.url, config.metrics.url) == (traces, metrics)


def test_headers_timeout_protocol_and_compression_per_signal_over_the_general_ones():
    config = otlp_env.resolve(BASE, {"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1",
                                     "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "only=metrics",
                                     "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
                                     "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
                                     "OTEL_EXPORTER_OTLP_COMPRESSION": "none"})
    assert config.traces.headers == {"api-key": "a b", "x": "1"}
    assert config.metrics.headers == {"only": "metrics"}
    assert config.traces.timeout_s == 2.5 and config.traces.json and not config.metrics.json
    assert not config.traces.gzip and not config.metrics.gzip


def test_the_sdk_disabled_variable_turns_the_variables_off_not_the_option():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_SDK_DISABLED": "true"}
    assert otlp_env.resolve(None, env) is None
    assert otlp_env.resolve("http://o:3", env).traces.url == "http://o:3/v1/traces"


@pytest.mark.parametrize("option, env", [
    ("ftp://x", {}),
    ("http://", {}),
    ("http://h:99999", {}),
    (BASE, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}),
    (BASE, {"OTEL_EXPORTER_OTLP_TIMEOUT": "-1"}),
    (BASE, {"OTEL_EXPORTER_OTLP_TIMEOUT": "nan"}),
    (BASE, {"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}),
    (BASE, {"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}),
    (None, {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": BASE}),
])
def test_a_value_that_cannot_be_used_is_a_value_error(option, env):
    with pytest.raises(ValueError):
        otlp_env.resolve(option, env)


def test_a_value_that_can_be_used_beside_them_is_not(  # the neighbour of the cases above
):
    assert otlp_env.resolve(BASE, {"OTEL_EXPORTER_OTLP_TIMEOUT": "1", "OTEL_EXPORTER_OTLP_HEADERS": "a=",
                                   "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}) is not None
