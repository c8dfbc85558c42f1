"""The analysis of one session: classification, the MCP revisions' tables, the session core, policy, progress, latency, and the rules."""
