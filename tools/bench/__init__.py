"""Benchmarks that close the loop: P2P copies, NCCL all-reduce, inference load, comparison, decode roofline.

Kept import-light on purpose: GPU worker processes import ``tools.bench._nccl_worker`` and must not
pay for pydantic or an HTTP client. Import the concept modules directly:

- ``tools.bench.p2p`` (records, report ``rigaudit.p2p/1``), ``tools.bench.links`` (link limits from NVML)
- ``tools.bench.nccl`` / ``tools.bench.nccl_parse`` (all-reduce, ``rigaudit.nccl/1``)
- ``tools.bench.loadgen`` (streaming load generator), ``tools.bench.results`` (``rigaudit.bench/1``),
  ``tools.bench.external`` (sglang / vLLM summaries), ``tools.bench.compare``
- ``tools.bench.roofline``, ``tools.bench.model_config`` (decode bound, parameter counts)
- ``tools.bench.gpu`` (backend choice), ``tools.bench.errors``
"""
