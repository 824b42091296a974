"""GPUs given to a container through CDI (the Container Device Interface of the NVIDIA Container Toolkit).

With CDI (``podman run --device nvidia.com/gpu=all``, Docker 25+ ``--device nvidia.com/gpu=all``, containerd/CRI-O)
the runtime passes exactly the device nodes and libraries the host's spec lists (``/etc/cdi/nvidia.yaml`` or
``/var/run/cdi/nvidia.yaml``, written by ``nvidia-ctk cdi generate``); no nvidia-container-runtime hook looks at the
host at container start. A spec generated before a node existed (nvidia_uvm loaded after it was written) leaves the
node out of every container started from it until the spec is generated again. NVIDIA documents CDI as the way to give
Podman GPUs. Told from inside by the runtime (Podman) or by the loader entry the spec's ``update-ldcache`` hook writes
(``/etc/ld.so.conf.d/00-nvcr-*.conf``); the spec itself is the host's and is not read from here.
"""

from __future__ import annotations

from rigaudit.agents.facts.platform import Platform
from rigaudit.tools.core.record import Record
from rigaudit.tools.hosts.probe import Probe
from rigaudit.tools.schema.finding import CommandAction, Fix

LDCONF = "/etc/ld.so.conf.d"
HOOK_PREFIX = "00-nvcr-"
SPEC = "/etc/cdi/nvidia.yaml"


class CdiUse(Record):
    given: bool
    how: str


async def read_cdi(probe: Probe, platform: Platform) -> CdiUse:
    """Whether the container the audit runs in got its GPUs through CDI (False outside a container)."""
    if not platform.in_container:
        return CdiUse(False, "not a container")
    listing = await probe.list_dir(LDCONF)
    hook = sorted(e for e in listing.entries or () if e.startswith(HOOK_PREFIX))
    if hook:
        return CdiUse(True, f"{LDCONF}/{hook[0]} (written by the CDI spec's update-ldcache hook)")
    if platform.container_runtime == "podman":
        return CdiUse(True, "a Podman container (NVIDIA documents CDI as the way to give Podman GPUs)")
    return CdiUse(False, f"no {HOOK_PREFIX}*.conf in {LDCONF}, not Podman")


def regenerate_spec_fix(cdi: CdiUse, missing: str) -> Fix:
    """The fix of a node a CDI container lacks: the host's spec, generated again now that the node exists."""
    return Fix(
        kind="restart",
        where="container_host",
        summary=f"Generate the host's CDI spec again so that it lists {missing}, then recreate the container",
        actions=(
            CommandAction(
                description=f"on the host, with the NVIDIA modules loaded: nvidia-ctk cdi generate --output={SPEC} (the "
                f"spec lists only the nodes present when it was generated; this container got its GPUs by CDI: "
                f"{cdi.how}); where the toolkit's nvidia-cdi-refresh unit is installed, enable it so the spec follows "
                "driver and module changes",
                argv=("nvidia-ctk", "cdi", "generate", f"--output={SPEC}"),
            ),
            CommandAction(description="recreate the container with --device nvidia.com/gpu=all and start the server"),
        ),
        risk="low",
        verify=f"grep -c nvidia-uvm {SPEC} on the host; ls -l /dev/nvidia-uvm inside the new container",
        revert=f"restore the previous {SPEC}",
        persist=f"{SPEC} (generated after the modules load at boot)",
    )
