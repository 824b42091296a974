"""Share bundles: a snapshot with its identifying values replaced, safe for a public bug report.

``share_bundle(snapshot_dir, out_tar_gz)`` writes one; ``rigaudit snapshot --share`` is its command.
``unpack_bundle(bundle, dest)`` unpacks one (``rigaudit diff``), bounded: a bundle is untrusted input.
"""

from rigaudit.tools.share._pseudonyms import KIND_LABELS
from rigaudit.tools.share._unpack import BundleError, unpack_bundle
from rigaudit.tools.share.bundle import ShareError, ShareSummary, share_bundle

__all__ = ["KIND_LABELS", "BundleError", "ShareError", "ShareSummary", "share_bundle", "unpack_bundle"]
