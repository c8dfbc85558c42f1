"""The references `mcptap help TOPIC` prints from the installed package: the display filter
language (filters.md, shipped here; docs/filters.md is the same text), the finding codes (from the
rule registry, as docs/rules.md) and the formats (from the format registry)."""

from __future__ import annotations

from importlib import resources

from mcptap.errors import MCPTapError

class UnknownTopic(MCPTapError):
    """No help topic of that name."""


def filters() -> str:
    return resources.files(__package__).joinpath("filters.md").read_text(encoding="utf-8")


def findings() -> str:
    from mcptap.report import ruledocs

    return ruledocs.markdown()


def formats() -> str:
    from mcptap.report import formats as registry

    out = ["# Formats", "",
           "`--format NAME` of `export` and `import --from` (what a database holds), and of `analyze` (its report) and `audit` (its security reading).", ""]
    for holds, title in ((registry.FRAMES, "Sessions (export, import)"), (registry.ANALYSIS, "Reports (analyze)"),
                         (registry.AUDIT, "Security readings (audit)")):
        out += [f"## {title}", "", "| format | extensions | reads | writes | extra | what |", "| --- | --- | --- | --- | --- | --- |"]
        for fmt in registry.formats(holds):
            out.append(f"| `{fmt.name}` | {' '.join(f'`{e}`' for e in fmt.extensions)} | "
                       f"{'yes' if fmt.reader else ''} | "
                       f"{'yes' if fmt.writer else ''} | {f'`mcptap[{fmt.extra}]`' if fmt.extra else ''} | {fmt.summary} |")
        out.append("")
    return "\n".join(out)


TOPICS = {
    "filters": ("the display filter language of show, export, analyze, report and view", filters),
    "findings": ("every finding code: group, severity, what it means, the spec it rests on", findings),
    "formats": ("the formats export, import and analyze read and write", formats),
}


def text(topic: str) -> str:
    """The reference of one topic, as Markdown."""
    if topic not in TOPICS:
        raise UnknownTopic(f"no help topic {topic!r}; known: {', '.join(TOPICS)}")
    return TOPICS[topic][1]()
