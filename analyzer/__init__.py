"""mcptap: record MCP sessions byte for byte and analyze them offline (see README.md)."""

__version__ = "0.1.0"
