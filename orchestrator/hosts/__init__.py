"""The host a command works on: choose it, name its identity, record and copy snapshots."""
