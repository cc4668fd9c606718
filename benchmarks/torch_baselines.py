"""torch eager and torch.compile of each op's baseline, for `make bench`'s ops table.

Run as `python -m benchmarks.torch_baselines DTYPE OP ...` in its own process (inductor's start-up
is paid once for all ops, not once per sandboxed worker); prints one JSON line: op -> eager and
compiled median ms at each of the op's bench sizes (or why torch.compile failed), timed by the
worker's own timing loop (L2 flushed before each launch), with the worker's torch settings.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def measure(name: str, dtype: str, budget_s: float) -> dict[str, Any]:
    import torch

    from kgen.ops import load_op
    from kgen.sandbox import reference
    from kgen.sandbox.launch import torch_dtype
    from kgen.sandbox.timing import time_callable
    from kgen.sandbox.validate import make_inputs

    spec = load_op(name)
    out: dict[str, Any] = {"eager_ms": [], "compiled_ms": []}
    for entry in spec.bench_sizes:
        own = {k: v.to("cuda") for k, v in make_inputs(spec, entry, dtype, 1).items()}
        eager, make_compiled = reference.baseline(spec, own, entry, torch_dtype(dtype))
        out["eager_ms"].append(time_callable(eager, budget_s))
        compiled_ms = None
        if "note" not in out:  # once torch.compile has failed for an op, it is not retried
            try:
                compiled = make_compiled()
                compiled()  # the first call compiles (again, for a new shape)
                torch.cuda.synchronize()
                compiled_ms = time_callable(compiled, budget_s)
            except Exception as exc:  # report it in the table's notes; eager still counts
                out["note"] = f"torch.compile failed: {type(exc).__name__}: {exc}"[:200]
        out["compiled_ms"].append(compiled_ms)
        del own
        torch.cuda.empty_cache()
    return out


def main(argv: list[str]) -> None:
    from kgen.sandbox.worker import _setup_torch  # the worker's settings: no TF32, no grad

    _setup_torch()
    dtype, names = argv[0], argv[1:]
    results = {name: measure(name, dtype, 0.3) for name in names}
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
