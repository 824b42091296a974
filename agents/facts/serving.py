"""What the serving processes actually use: tensor parallelism, the GPUs they were given.

A configuration is a fault only against what the server does with it: P2P matters to a tensor-parallel server, MIG
slices are deliberate when servers run on them, a small /dev/shm hurts multi-process serving.
"""

from __future__ import annotations

from collections.abc import Sequence

_TP_FLAGS = ("--tensor-parallel-size", "--tp-size", "--tp_size", "--tp", "-tp", "--num-shard", "--num_shard")


def tensor_parallel(argv: Sequence[str]) -> int | None:
    """The tensor-parallel size on a server's command line (vLLM, SGLang, TGI, TensorRT-LLM), or None if not given."""
    for i, arg in enumerate(argv):
        flag, sep, value = arg.partition("=")
        if flag not in _TP_FLAGS:
            continue
        text = value if sep else (argv[i + 1] if i + 1 < len(argv) else "")
        if text.isdecimal() and int(text) > 0:
            return int(text)
    return None


def largest_tp(argvs: Sequence[Sequence[str]]) -> int | None:
    sizes = [tp for argv in argvs if (tp := tensor_parallel(argv)) is not None]
    return max(sizes) if sizes else None
