"""Retrieval benchmarks for MemoryHub: datasets, metrics, baselines and runners."""
