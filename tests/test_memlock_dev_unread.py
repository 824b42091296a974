"""A container's locked-memory limit where its /dev could not be listed (the fourth review's open item): whether the
host's RDMA NICs are passed in decides medium or low, and it is unread, so the verdict is unknown and says what
would tell. Before, an unread /dev counted as RDMA reachable and the verdict was a confident medium."""

from __future__ import annotations

from pathlib import Path

from rigaudit.agents.investigators.container import INVESTIGATOR as CONTAINER
from tests.hostgen import ARCHETYPES, faults
from tests.hostgen.cache import snapshot
from tests.support.investigators import audit_snapshot
from tests.support.mutate import light_copy, unlist_tree

LIMITED_WITH_RDMA = faults.rdma_passed_in(faults.memlock(ARCHETYPES["docker-h100-bm"]))


def test_an_unlisted_dev_leaves_the_limits_severity_unknown_and_names_what_would_tell(tmp_path: Path) -> None:
    root = light_copy(snapshot(LIMITED_WITH_RDMA), tmp_path / "snap")
    unlist_tree(root, "/dev")
    found = audit_snapshot(CONTAINER, root, evidence_read=True)["container.memlock"]
    assert found.status == "unknown"
    assert "65536" in found.observed and "ls /dev/infiniband" in found.observed


def test_a_listed_dev_with_infiniband_is_still_medium() -> None:
    found = audit_snapshot(CONTAINER, snapshot(LIMITED_WITH_RDMA))["container.memlock"]
    assert (found.status, found.severity) == ("problem", "medium")
