"""Changing a machine: apply a plan, the approval gate, rollback, the sections they append."""
