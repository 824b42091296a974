"""Benchmarks that close the loop: P2P copies, NCCL all-reduce, inference load, comparison, decode roofline.

Kept import-light on purpose: GPU worker processes import ``rigaudit.tools.bench._nccl_worker`` and must not
pay for pydantic or an HTTP client. Import the concept modules directly:

- ``rigaudit.tools.bench.p2p`` (records, report ``rigaudit.p2p/1``), ``rigaudit.tools.bench.links`` (link limits from NVML)
- ``rigaudit.tools.bench.nccl`` / ``rigaudit.tools.bench.nccl_parse`` (all-reduce, ``rigaudit.nccl/1``)
- ``rigaudit.tools.bench.loadgen`` (streaming load generator), ``rigaudit.tools.bench.results`` (``rigaudit.bench/1``),
  ``rigaudit.tools.bench.external`` (sglang / vLLM summaries), ``rigaudit.tools.bench.compare``
- ``rigaudit.tools.bench.roofline``, ``rigaudit.tools.bench.model_config`` (decode bound, parameter counts)
- ``rigaudit.tools.bench.gpu`` (backend choice), ``rigaudit.tools.bench.errors``
"""
