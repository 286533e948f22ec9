"""Presenting reports: one module per output format (text, JSON, SARIF)."""
