"""Investigators (one per area) and the brains that turn their evidence into findings."""
