"""The one fix of CUDA forward compatibility where NVIDIA does not support it (GeForce): drop the compat path.

``driver.library_mismatch`` judges the compat libcuda; ``runtime.cuda_driver_compat`` defers to it while that
library is the cause (the same severity, layer and actions, moot after it). Once the path is gone the server loads
the host driver's libcuda, and a runtime of the driver's CUDA major version runs on it by minor-version
compatibility (``MINOR_COMPAT``), newer PTX JIT excepted: only a newer major needs another driver.
"""

from __future__ import annotations

from rigaudit.agents.facts.deliberate import MINOR_COMPAT, MINOR_COMPAT_MIN, minor_compatible
from rigaudit.tools.schema.finding import CommandAction, Edge, Fix, Where

LIBRARY_CHECK = "driver.library_mismatch"


def after_drop(runtime: tuple[int, int] | None, driver: tuple[int, int] | None, version: str | None) -> str:
    """What the server's CUDA runtime (the compat library's CUDA) meets on the host driver once the path is dropped."""
    if runtime is None or driver is None:
        return "Whether the image's CUDA then runs on the host driver is its CUDA version against the driver's."
    cuda, drv = f"CUDA {runtime[0]}.{runtime[1]}", f"CUDA {driver[0]}.{driver[1]}"
    if runtime[0] > driver[0]:
        return (
            f"The image's {cuda} is of a newer major version than the host driver's {drv}: it also needs a driver of "
            f"CUDA {runtime[0]}."
        )
    if runtime <= driver:
        return f"The image's {cuda} is within the host driver's {drv}."
    least = MINOR_COMPAT_MIN.get(runtime[0], "?")
    held = minor_compatible(runtime[0], version)
    driver_words = f"the {version} driver" if version else "the host driver"
    if held is False:
        return f"The {version} driver is below {least}, the least of CUDA {runtime[0]}.x's minor-version compatibility."
    return (
        f"Once it is dropped, the image's {cuda} runs on {driver_words} ({drv}) by CUDA minor-version compatibility "
        f"(CUDA {runtime[0]}.x on drivers >= {least}, {MINOR_COMPAT.source}), PTX JIT of newer PTX excepted: no other "
        "driver and no other image is needed for the server to start."
    )


def drop_compat_fix(
    compat_path: str, kernel: str | None, where: Where, runtime: tuple[int, int] | None, driver: tuple[int, int] | None
) -> Fix:
    """Stop loading the compat libcuda: remove its folder from the loader's path; a newer major also needs a driver."""
    folder = compat_path.rsplit("/", 1)[0]
    actions = [
        CommandAction(
            description=f"remove {folder} from LD_LIBRARY_PATH and from /etc/ld.so.conf.d (then ldconfig) in the "
            "server's image or environment, then restart the server; do not install other driver libraries"
        )
    ]
    if runtime is not None and driver is not None and runtime[0] > driver[0]:
        actions.append(
            CommandAction(
                description=f"CUDA {runtime[0]}.{runtime[1]} is of a newer major version than the driver's CUDA "
                f"{driver[0]}.{driver[1]}: install a host driver of CUDA {runtime[0]} (or run an image of CUDA "
                f"{driver[0]}.x) and reboot"
            )
        )
    libcuda = f"libcuda.so.{kernel}" if kernel else "libcuda"
    return Fix(
        kind="restart",
        where=where,
        summary="Drop the CUDA forward-compatibility path (LD_LIBRARY_PATH / ld.so.conf.d): not supported on GeForce; "
        f"the server then loads the host driver's {libcuda}",
        actions=tuple(actions),
        risk="low",
        verify=f"grep libcuda /proc/PID/maps of the server shows the host driver's {libcuda}; python -c 'import "
        "torch; torch.cuda.init()' raises nothing",
        revert="restore the previous LD_LIBRARY_PATH / ld.so.conf.d entry",
    )


def deferred(fix: Fix) -> Fix:
    """``fix`` as a check that defers to driver.library_mismatch gives it: moot once that step is planned."""
    edge = Edge(kind="moot_after", check=LIBRARY_CHECK, why="the same compat libcuda, the same fix")
    return fix.model_copy(update={"edges": (edge,), "summary": f"see {LIBRARY_CHECK}: {fix.summary}"})
