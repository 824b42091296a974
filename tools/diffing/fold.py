"""Fold value changes that differ only in a number: one line for 7 GPUs' NVML values, 128 CPUs' files.

Two hosts with 1 and 2 GPUs differ in every per-GPU value of the second; listed one by one they
bury what else changed. Changes of the same kind and presence whose references are the same but for
their numbers (PCI addresses, GPU indices, CPU numbers), and whose details match, fold into one
change whose reference has ``*`` for the numbers and whose detail counts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rigaudit.tools.diffing.values import ValueChange

_BDF = re.compile(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b")
_NUMBER = re.compile(r"\d+")
MIN_FOLD = 3
"""Fewer alike changes than this stay one line each."""


def shape(ref: str) -> str:
    """``ref`` with ``*`` for each PCI address and number: ``nvml:nvmlDeviceGetPowerUsage(*)``."""
    return _NUMBER.sub("*", _BDF.sub("*", ref))


_NVML_GPU = re.compile(r"^nvml:nvmlDevice\w+\((\d+)")


def _key(change: ValueChange, by_gpu: set[tuple[str, str]]) -> tuple[str, str, str, str, bool]:
    detail = change.detail if change.change == "changed" else change.detail.split(",")[-1].strip()
    gpu = _NVML_GPU.match(change.ref)
    if gpu is not None and change.change != "changed" and (change.change, gpu[1]) in by_gpu:
        return (change.kind, change.change, f"nvml: GPU {gpu[1]}'s calls", detail, change.volatile)
    return (change.kind, change.change, shape(change.ref), detail, change.volatile)


def fold_changes(changes: Sequence[ValueChange], min_fold: int = MIN_FOLD) -> list[ValueChange]:
    """``changes`` in their order, each group of at least ``min_fold`` alike ones as one change; NVML
    calls of a GPU that only one side has fold into one change per GPU."""
    per_gpu: dict[tuple[str, str], int] = {}
    for change in changes:
        if change.change != "changed" and (gpu := _NVML_GPU.match(change.ref)) is not None:
            per_gpu[(change.change, gpu[1])] = per_gpu.get((change.change, gpu[1]), 0) + 1
    by_gpu = {key for key, count in per_gpu.items() if count >= min_fold}
    groups: dict[tuple[str, str, str, str, bool], list[ValueChange]] = {}
    for change in changes:
        groups.setdefault(_key(change, by_gpu), []).append(change)
    out: list[ValueChange] = []
    done: set[tuple[str, str, str, str, bool]] = set()
    for change in changes:
        key = _key(change, by_gpu)
        members = groups[key]
        if len(members) < min_fold:
            out.append(change)
        elif key not in done:
            done.add(key)
            out.append(ValueChange(change.kind, key[2], change.change, f"{len(members)} alike: {key[3]}", change.volatile))
    return out


__all__ = ["MIN_FOLD", "fold_changes", "shape"]
