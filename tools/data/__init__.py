"""Snapshots shipped with rigaudit for ``audit --demo``."""
