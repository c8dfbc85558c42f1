"""Tests of the readers (mcptap.readers): mcptap import of frame logs."""
