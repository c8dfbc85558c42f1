"""Readers of what nobody recorded with mcptap, and the export: frame-log JSONL, mitmproxy dumps and HAR files."""
