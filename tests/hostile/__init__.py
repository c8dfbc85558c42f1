"""Hostile input to every reader and listener, capture that never dies on a byte, redaction
everywhere, bounded output."""
