"""The isolated GPU worker (installed as kgen.sandbox): load a cubin, launch it per its contract,
validate, time. It imports only the standard library, torch, cupy and kgen's shared types.

The parent side (kgen.gpu) never creates a CUDA context; each candidate runs in a fresh worker.
"""
