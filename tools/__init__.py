"""Hosts, readers, parsers, actions and benchmarks: everything that touches a machine.

Nothing here knows about agents or the orchestrator.
"""
