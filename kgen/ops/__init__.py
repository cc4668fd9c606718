"""Op specs from their sources: a shipped op, a user's spec.yaml, or a KernelBench problem."""

from pathlib import Path

from kgen.errors import UsageError
from kgen.ops.specdump import spec_yaml
from kgen.ops.specfile import available_ops, build_spec, load_op
from kgen.spec import OpSpec

__all__ = ["available_ops", "build_spec", "load_op", "spec_from", "spec_yaml"]


def spec_from(source: str) -> OpSpec:
    """A shipped op's name, a spec.yaml (or its folder), or a KernelBench problem (.py)."""
    from kgen.ops.kernelbench import load_problem

    if source in available_ops():
        return load_op(source)
    path = Path(source)
    if path.is_dir() and (path / "spec.yaml").is_file():
        path = path / "spec.yaml"
    if path.suffix == ".py" and path.is_file():
        return load_problem(path)
    if path.is_file():
        return load_op(path=path)
    raise UsageError(f"{source!r} is neither a shipped op ({', '.join(available_ops())}) nor a "
                     "spec.yaml nor a KernelBench problem file")
