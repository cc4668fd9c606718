"""The isolated GPU worker: load a cubin, launch it per its contract, validate, time.

The parent side (kgen) never creates a CUDA context; each candidate runs in a fresh spawned worker.
"""
