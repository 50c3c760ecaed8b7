"""Peer benchmarks: MemoryHub and another memory system on the same workload, in the same run."""
