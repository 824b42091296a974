"""Changing a machine: apply a plan, the approver, rollback, the sections they append."""
