"""Benchmarks as a person runs them: P2P, NCCL, inference load, A/B of fixes, comparisons, explain."""
