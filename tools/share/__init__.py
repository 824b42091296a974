"""Share bundles: a snapshot with its identifying values replaced, safe for a public bug report.

``share_bundle(snapshot_dir, out_tar_gz)`` writes one; ``rigaudit snapshot --share`` is its command.
"""

from rigaudit.tools.share._pseudonyms import KIND_LABELS
from rigaudit.tools.share.bundle import ShareError, ShareSummary, share_bundle

__all__ = ["KIND_LABELS", "ShareError", "ShareSummary", "share_bundle"]
