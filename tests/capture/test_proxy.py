"""`mcptap proxy` in this process (analyzer/proxy.py): what it hands mitmproxy."""

from __future__ import annotations

import asyncio

from mcptap import proxy


def _bare_chain() -> list[str]:
    """The addons of a DumpMaster made as `mcptap proxy` makes it, before it adds its own."""
    from mitmproxy import options
    from mitmproxy.tools.dump import DumpMaster

    async def make() -> list[str]:
        master = DumpMaster(options.Options(), with_termlog=True, with_dumper=False)
        return [type(addon).__name__ for addon in master.addons.chain]

    return asyncio.run(make())


def test_the_proxy_adds_its_recorder_to_mitmproxy_and_no_other_addon(tmp_path):
    """mitmproxy offers every event of every flow to every addon: one more addon is a cost on each
    message (bench/proxy.py), so saying where the proxy listens is the recorder's own hook."""
    from mitmproxy import ctx

    bare = _bare_chain()
    seen = {}

    def ready(host: str, port: int) -> None:
        seen["chain"] = [type(addon).__name__ for addon in ctx.master.addons.chain]
        seen["where"] = (host, port)
        asyncio.get_running_loop().call_soon(ctx.master.shutdown)

    status = proxy.run("http://127.0.0.1:9", str(tmp_path / "p.db"), listen="127.0.0.1:0", on_ready=ready)
    assert status == 0
    assert seen["where"][0] == "127.0.0.1" and seen["where"][1] > 0
    assert seen["chain"] == bare + ["McpTap"]
