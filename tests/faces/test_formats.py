"""The format registry (analyzer/report/formats.py): every writer takes one signature, and the
commands offer the registry's formats, not lists of their own."""

import inspect

import pytest

from mcptap.report import formats

WRITTEN = [f for f in formats.REGISTRY.values() if f.writer]


@pytest.mark.parametrize("fmt", WRITTEN, ids=lambda f: f"{f.holds}-{f.name}")
def test_every_writer_takes_its_source_where_it_writes_and_the_callers_options(fmt):
    params = list(inspect.signature(fmt.write_function()).parameters.values())
    assert [p.kind for p in params] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3
    assert params[2].name == "options" and params[2].default is not inspect.Parameter.empty


def test_analyze_offers_the_analysis_formats_of_the_registry_and_text():
    from mcptap.cli.analyze import ReportFormat

    assert [f.value for f in ReportFormat] == ["text", *formats.names(formats.ANALYSIS)]
    assert "junit" in formats.names(formats.ANALYSIS) and "har" in formats.names(formats.FRAMES)


def test_an_unknown_format_is_refused_naming_the_registrys():
    with pytest.raises(formats.UnknownFormat, match="known: jsonl, otlp, har, parquet$"):
        formats.get("nope", formats.FRAMES)
