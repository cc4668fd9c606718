"""Op specs from their sources: a shipped op, a user's spec.yaml, or a KernelBench problem."""

from kgen.ops.specdump import spec_yaml
from kgen.ops.specfile import available_ops, build_spec, load_op

__all__ = ["available_ops", "build_spec", "load_op", "spec_yaml"]
