"""Wire codecs: the JSON wire parser, the frame-log format, SSE, line framing, bounded decoding, text safety. They import nothing of mcptap's but its errors."""
