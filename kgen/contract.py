"""The launch contract a candidate carries in `// kgen:` comments, as values (parsed in
`kgen.loop.candidate`); the worker launches by it.

  // kgen: op=gemm dtype=float16
  // kgen: launch gemm_f16 grid=(cdiv(N,128),cdiv(M,128)) block=(256) smem=49152 args=(A,B,C,M,N,K)

Hopper and later kernels add: `cluster=(2,1,1)` (thread-block clusters, launched with the extended
launch API), `when=(K % 8 == 0)` (the launch runs only at sizes where the condition holds, so a
file can carry a fallback kernel), the `SMS` symbol (the GPU's multiprocessor count, for persistent
grids), and tensor-map arguments `tmap(A, box=(64, 128), swizzle=128)`: kgen builds a CUtensorMap
for tensor A on the host (element type from the dtype, dims and strides from the spec's shape, box
x-first) and passes it by value, for a `const __grid_constant__ CUtensorMap` parameter. With
`optional=1`, at sizes where A's strides cannot make a tensor map (TMA needs 16-byte strides) kgen
passes 128 zero bytes instead, and the kernel must take another path there.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from typing import Any

from kgen import expr

SMS = "SMS"  # the symbol for the local GPU's multiprocessor count in launch expressions
SWIZZLES = (0, 32, 64, 128)  # bytes; 0 = no swizzle
MAX_BOX = 256  # elements per box dimension (cuTensorMapEncodeTiled)


@dataclass(frozen=True)
class TensorMapArg:
    """`tmap(A, box=(64, 128), swizzle=128)`: a CUtensorMap over tensor A, box x-first."""

    tensor: str
    box: tuple[str, ...]  # expressions, innermost (x) first
    swizzle: int = 0
    optional: bool = False  # zeros where the strides cannot make a map, instead of an error

    def box_dims(self, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate(b, sizes) for b in self.box)


def parse_arg(text: str) -> str | TensorMapArg:
    """One entry of args=(...): a tensor, size or param name, or a tmap(...); ValueError if bad."""
    text = text.strip()
    if not text.startswith("tmap"):
        return text
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse {text!r}") from exc
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "tmap" and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)):
        raise ValueError(f"{text!r}: write tmap(TENSOR, box=(x, y...), swizzle=0|32|64|128)")
    keywords = {k.arg: k.value for k in node.keywords}
    if set(keywords) - {"box", "swizzle", "optional"} or "box" not in keywords:
        raise ValueError(f"{text!r}: tmap takes box=(...) and optionally swizzle= and "
                         "optional=1")
    box_node = keywords["box"]
    items = box_node.elts if isinstance(box_node, ast.Tuple) else [box_node]
    swizzle = keywords.get("swizzle")
    value = swizzle.value if isinstance(swizzle, ast.Constant) else 0
    if not isinstance(value, int) or value not in SWIZZLES:
        raise ValueError(f"{text!r}: swizzle must be one of {', '.join(map(str, SWIZZLES))} "
                         "(bytes)")
    optional = keywords.get("optional")
    flag = optional.value if isinstance(optional, ast.Constant) else 0
    if flag not in (0, 1):
        raise ValueError(f"{text!r}: optional is 0 or 1")
    return TensorMapArg(node.args[0].id, tuple(ast.unparse(i) for i in items), value, flag == 1)


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[str, ...]
    block: tuple[str, ...]
    smem: str
    args: tuple[str, ...]
    line: int  # where it was declared, for error messages
    cluster: tuple[str, ...] = ()  # thread-block cluster dims, x first; () = no cluster
    when: str = ""  # an expression; the launch runs only where it is nonzero ("" = always)

    def dims(self, sizes: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """(grid, block, dynamic shared bytes) for these sizes (SMS among them if used)."""
        grid = tuple(expr.evaluate(g, sizes) for g in self.grid)
        block = tuple(expr.evaluate(b, sizes) for b in self.block)
        return grid, block, expr.evaluate(self.smem, sizes)

    def cluster_dims(self, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(expr.evaluate(c, sizes) for c in self.cluster)

    def runs_at(self, sizes: dict[str, int]) -> bool:
        return not self.when or expr.evaluate(self.when, sizes) != 0

    def arguments(self) -> tuple[str | TensorMapArg, ...]:
        return tuple(parse_arg(a) for a in self.args)


@dataclass(frozen=True)
class Contract:
    op: str
    dtype: str
    launches: tuple[Launch, ...]
    choices: str = ""  # free text the author gives about its key choices (tile=..., warps=...)

    def launches_at(self, sizes: dict[str, int]) -> tuple[Launch, ...]:
        """The launches that run at these sizes, in order."""
        return tuple(launch for launch in self.launches if launch.runs_at(sizes))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Contract:
        launches = tuple(Launch(d["kernel"], tuple(d["grid"]), tuple(d["block"]), d["smem"],
                                tuple(d["args"]), int(d["line"]), tuple(d.get("cluster", ())),
                                d.get("when", "")) for d in data["launches"])
        return cls(data["op"], data["dtype"], launches, data.get("choices", ""))
