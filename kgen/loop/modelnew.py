"""model_new.py for a KernelBench run: `ModelNew(Model)` that launches the run's best kernel, in a
file KernelBench's own evaluator can exec() unchanged.

Why these choices: ModelNew subclasses the problem's Model, so the constructor, the parameters
and buffers (created by Model.__init__ in the same order: the same weights given the same seed)
and the forward signature are Model's own. The problem's source is copied in (KernelBench exec()s
ModelNew's source from a string, so nothing beside the file can be found), and so is the binary
kgen validated, loaded through the CUDA driver with ctypes (kgen/loop/modelnew_runtime.py): no
compiler or cupy at evaluation time, and what runs is what was validated. The sizes of a
KernelBench problem are fixed, so grid, block, cluster, shared memory and tensor-map boxes are
computed here, once, but for expressions over the GPU's SM count, which the file computes on the
GPU that runs it. Tensor maps themselves are built on every forward (they hold the tensors'
addresses) and cluster launches go through cuLaunchKernelEx, as kgen's worker does them.
"""

from __future__ import annotations

import ast
import base64
from pathlib import Path

from kgen import expr
from kgen.contract import SMS, Contract, Launch, TensorMapArg
from kgen.dtypes import DTYPES
from kgen.spec import Entry, OpSpec, Tensor

RUNTIME = Path(__file__).with_name("modelnew_runtime.py")
_BEGIN, _END = "# ---- kgen:constants begin", "# ---- kgen:constants end"


def render(spec: OpSpec, contract: Contract, binary: bytes, arch: str, source: str,
           origin: str) -> str:
    """The text of model_new.py; `origin` says where the kernel comes from and what was checked."""
    future, problem = _split_future(spec.reference.text)
    header = (f'"""ModelNew for the KernelBench problem {Path(spec.reference.file).name}, '
              f"written by kgen.\n\n{origin}\n\nModelNew subclasses the problem's Model (same "
              "constructor, parameters, buffers and forward\nsignature); its forward launches "
              f"the embedded {arch} binary through the CUDA driver (ctypes),\nso it needs only "
              'torch and the NVIDIA driver. The kernel source is in _KGEN_SOURCE.\n"""\n')
    parts = [header, "from __future__ import annotations", *future, "",
             "# ---- the KernelBench problem, as given " + "-" * 40, problem.rstrip(), "",
             "# ---- kgen: the validated kernel and how it is launched " + "-" * 24,
             _runtime(_constants(spec, contract, binary, arch)), _source(source),
             _model_new(spec)]
    return "\n".join(parts) + "\n"


def _split_future(text: str) -> tuple[list[str], str]:
    """`from __future__` lines must come first in a file: take them out of the problem."""
    lines = text.splitlines()
    future = {n.lineno for n in ast.parse(text).body
              if isinstance(n, ast.ImportFrom) and n.module == "__future__"}
    kept = [line for i, line in enumerate(lines, start=1) if i not in future]
    return [lines[i - 1] for i in sorted(future)
            if "annotations" not in lines[i - 1]], "\n".join(kept)


def _constants(spec: OpSpec, contract: Contract, binary: bytes, arch: str) -> str:
    entry = spec.test_sizes[0]
    dtype = contract.dtype
    scalars: dict[str, tuple[str, float | int]] = {
        s: ("int", v) for s, v in spec.sizes_of(entry).items()}
    scalars |= {p.name: (DTYPES[p.dtype].ctype, v) for p, v in
                zip(spec.params, spec.params_at(entry).values(), strict=True)}
    encoded = base64.b64encode(binary).decode()
    chunks = "\n".join(f'    "{encoded[i:i + 96]}"' for i in range(0, len(encoded), 96))
    lines = [f"_KGEN_ARCH = {arch!r}",
             f"_KGEN_BINARY = _kgen_base64.b64decode(\n{chunks}\n)  # {len(binary)} bytes",
             f"_KGEN_INPUTS = {[_tensor(spec, t, entry, dtype) for t in spec.inputs]!r}",
             "_KGEN_WEIGHTS = " + repr([(t.name, t.attribute, *_tensor(spec, t, entry, dtype)[1:])
                                        for t in spec.weights]),
             f"_KGEN_OUTPUTS = {[_tensor(spec, t, entry, dtype) for t in spec.outputs]!r}",
             f"_KGEN_SCALARS = {scalars!r}",
             f"_KGEN_RETURNS_TUPLE = {len(spec.outputs) > 1}", "", "",
             _launch_table(contract, entry)]
    return "\n".join(lines)


def _uses_sms(text: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == SMS for node in ast.walk(expr.parse(text)))


def _running(contract: Contract, entry: Entry) -> list[Launch]:
    """The launch lines that may run at the problem's sizes: those whose `when` holds there, and
    those whose `when` depends on the SM count (decided in model_new.py, on the GPU)."""
    return [launch for launch in contract.launches
            if not launch.when or _uses_sms(launch.when) or launch.runs_at(entry)]


def _launch_table(contract: Contract, entry: Entry) -> str:
    """Python source of `_kgen_launches(SMS)`: the launches that run at the problem's sizes on a
    GPU of SMS multiprocessors, as (kernel, grid, block, dynamic shared bytes, arguments,
    cluster), an argument a name or ("tmap", tensor, box x-first, swizzle, optional), the
    cluster () for a plain launch.
    The sizes are fixed, so every expression is computed here, except those over SMS, which
    only the GPU that runs the file knows: those are written out as Python, the sizes put in.
    (The expressions are kgen.expr's checked subset: integers, + - * // %, cdiv, min, max,
    comparisons, and/or/not; each has kgen's value in Python, cdiv given and and/or made 0 or
    1 as kgen.expr makes them.)"""
    def python(text: str) -> str:
        return ast.unparse(_Sized(entry).visit(ast.Expression(expr.parse(text))))

    def value(text: str) -> str:
        return f"int({python(text)})" if _uses_sms(text) else str(expr.evaluate(text, entry))

    def three(texts: tuple[str, ...]) -> str:
        x, y, z = (*texts, "1", "1")[:3]
        return f"({value(x)}, {value(y)}, {value(z)})"

    def argument(arg: str | TensorMapArg) -> str:
        if isinstance(arg, str):
            return repr(arg)
        box = _tuple([value(b) for b in arg.box])
        return f"('tmap', {arg.tensor!r}, {box}, {arg.swizzle}, {arg.optional})"

    body = []
    for launch in _running(contract, entry):
        args = _tuple([argument(a) for a in launch.arguments()])
        cluster = three(launch.cluster) if launch.cluster else "()"
        append = (f"launches.append(({launch.kernel!r}, {three(launch.grid)}, "
                  f"{three(launch.block)}, {value(launch.smem)}, {args}, {cluster}))")
        if launch.when and _uses_sms(launch.when):
            body += [f"    if {python(launch.when)}:", f"        {append}"]
        else:
            body.append(f"    {append}")
    return "\n".join([
        "def _kgen_launches(SMS: int) -> list:",
        '    """The launches that run at the problem\'s sizes on a GPU of SMS multiprocessors."""',
        "    launches: list = []", *body, "    return launches", ""])


def _tuple(items: list[str]) -> str:
    """Python source of a tuple of these item sources, as repr writes one."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


class _Sized(ast.NodeTransformer):
    """An expression with the problem's sizes put in, cdiv renamed to the runtime's, and each
    `a and b` / `a or b` made int(all((a, b))) / int(any((a, b))): Python's would be one of
    its operands, kgen.expr's is 1 or 0, and both are used in arithmetic."""

    def __init__(self, sizes: Entry) -> None:
        self.sizes = sizes

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.sizes:
            return ast.copy_location(ast.Constant(self.sizes[node.id]), node)
        if node.id == "cdiv":
            return ast.copy_location(ast.Name("_kgen_cdiv", node.ctx), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        values = [self.visit(v) for v in node.values]
        combine = "all" if isinstance(node.op, ast.And) else "any"
        call = ast.Call(ast.Name(combine, ast.Load()), [ast.Tuple(values, ast.Load())], [])
        return ast.copy_location(ast.Call(ast.Name("int", ast.Load()), [call], []), node)


def _tensor(spec: OpSpec, t: Tensor, entry: Entry, dtype: str
            ) -> tuple[str, tuple[int, ...], str]:
    return t.name, spec.shape(t, entry), spec.tensor_dtype(t, dtype)


def _runtime(constants: str) -> str:
    """The runtime module's code after its docstring and future import, constants filled in."""
    text = RUNTIME.read_text()
    body = text[text.index("import base64 as _kgen_base64"):]
    start, end = body.index(_BEGIN), body.index(_END) + len(_END)
    return body[:start] + constants + body[end:]


def _source(source: str) -> str:
    lines = "\n".join(f"    {line + chr(10)!r}" for line in source.splitlines())
    return f"\n_KGEN_SOURCE = (\n{lines}\n)\n"


def _model_new(spec: OpSpec) -> str:
    names = [t.name for t in spec.inputs]
    args = ", ".join(names)
    call = f"({args},)" if len(names) == 1 else f"({args})"
    return (f"\n\nclass ModelNew(Model):\n"
            f'    """Model with its forward done by kgen\'s kernel."""\n\n'
            f"    def forward(self{', ' if names else ''}{args}):\n"
            f"        return _kgen_forward(self, {call})\n")
