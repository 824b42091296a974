"""Realistic host snapshot fixtures, generated from declarative descriptions (see tests/hostgen/README.md).

``write(ARCHETYPES["hgx-h100-jammy"], tmp_path / "snap")`` writes a snapshot (format v1) that
``rigaudit audit --snapshot`` reads; ``faults`` holds helpers that return a changed copy of a description.
"""

from tests.hostgen.archetypes import ALL as ARCHETYPES
from tests.hostgen.build import Built, build, write
from tests.hostgen.spec import HostSpec

__all__ = ["ARCHETYPES", "Built", "HostSpec", "build", "write"]
