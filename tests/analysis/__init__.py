"""Tests of the analysis (mcptap.analysis): classification, the session core, every rule, the native
scanner, the golden reports."""
