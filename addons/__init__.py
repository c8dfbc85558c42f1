"""mcptap's capture front-ends: the stdio tee and the mitmproxy addon. They write through
the store (`mcptap.store`) and hold no analysis logic (see architecture.md)."""
