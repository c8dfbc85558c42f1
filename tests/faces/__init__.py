"""Tests of the faces: the command line, the report formats (table, JSON, SARIF, HTML), the pandas
API, the notebooks, replay and serve."""
