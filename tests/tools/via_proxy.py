"""Run an MCP client through `mcptap proxy`, for the conformance suite's client scenarios (runs in mcptap's
environment, from the repository's root). Usage: via_proxy.py DB WIRE -- CLIENT... URL: the suite appends the
URL of the server it started; this starts `mcptap proxy --db DB` in front of that URL's origin, with a
byte-logging relay in front of the proxy, runs the client against the relay instead, and writes what
crossed the relay into WIRE (JSON: each connection's bytes each way, in hex). Exits with the client's status."""

import json
import subprocess
import sys
from urllib.parse import urlsplit

from tests.support.http_helpers import Relay, mcptap_proxy

CLIENT_TIMEOUT_S = 60


def main() -> int:
    db, wire, separator, *client = sys.argv[1:]
    assert separator == "--", "usage: via_proxy.py DB WIRE -- CLIENT... URL"
    url = client.pop()
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    with mcptap_proxy(db, origin) as proxy:
        relay = Relay(int(proxy.url.rsplit(":", 1)[1]))
        try:
            status = subprocess.run([*client, f"http://127.0.0.1:{relay.port}{url[len(origin):]}"],
                                    stdin=subprocess.DEVNULL, timeout=CLIENT_TIMEOUT_S).returncode
        finally:
            stopped = proxy.stop()
            relay.close()
            with open(wire, "w", encoding="utf-8") as out:
                json.dump([{way: bytes(data).hex() for way, data in c.items()} for c in relay.connections], out)
    if stopped != 0:
        print(f"via_proxy.py: mcptap proxy exited {stopped}: {proxy.errors[-2000:]}", file=sys.stderr)
    return status or stopped


if __name__ == "__main__":
    sys.exit(main())
