"""What changed between two audits of a host, or of two hosts: findings and values read.

``diff_findings(a, b)`` compares findings by check id; ``diff_snapshots(a_dir, b_dir)`` compares
the values two snapshots read. ``rigaudit diff`` and ``rigaudit apply`` (before/after) use both.
"""

from rigaudit.tools.diffing.document import DIFF_SCHEMA, SideInfo, diff_document
from rigaudit.tools.diffing.findings import CHANGE_KINDS, ChangeKind, FindingChange, FindingsDiff, diff_findings, verdict
from rigaudit.tools.diffing.fold import fold_changes
from rigaudit.tools.diffing.headline import headline
from rigaudit.tools.diffing.values import Presence, ValueChange, ValueKind, ValuesDiff, diff_snapshots

__all__ = [
    "CHANGE_KINDS",
    "DIFF_SCHEMA",
    "ChangeKind",
    "FindingChange",
    "FindingsDiff",
    "Presence",
    "SideInfo",
    "ValueChange",
    "ValueKind",
    "ValuesDiff",
    "diff_document",
    "diff_findings",
    "diff_snapshots",
    "fold_changes",
    "headline",
    "verdict",
]
