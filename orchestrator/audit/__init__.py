"""Auditing a host: run the investigators, merge, re-diagnose a recording, diff two sides."""
