"""The HTTP capture: the mitmproxy addon, its script for mitmdump, its guard of Origin and Host, and its recorder process."""
