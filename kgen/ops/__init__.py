"""Op specs from their sources: a shipped op's name, or a user's spec.yaml."""

from kgen.ops.specfile import available_ops, load_op

__all__ = ["available_ops", "load_op"]
