"""End to end: real clients and servers of both SDKs through the tee and the proxy, in both eras."""
