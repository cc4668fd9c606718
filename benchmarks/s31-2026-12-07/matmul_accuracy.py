"""How often does a float32 gemm miss KernelBench's float32 tolerance (atol = rtol = 1e-4) at
tests/data/kernelbench/l1_matmul.py's size (M=2048, K=1024, N=4096)? The builtin author's
kernels for that problem (bound by `same_as: gemm`, launched from model_new.py as KernelBench
would) and cuBLAS (torch, TF32 off), over many seeds, each against float64 (kgen's check) and
against cuBLAS's own float32 output (KernelBench's check: ModelNew against Model).

    python benchmarks/s31-2026-12-07/matmul_accuracy.py --seeds 12
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click
import torch

from kgen.arch import local_gpu
from kgen.author import space
from kgen.author.families import BoundGemm
from kgen.compile import compile_source
from kgen.loop.candidate import parse_contract
from kgen.loop.modelnew import render
from kgen.ops.kernelbench import load_problem

PROBLEM = Path(__file__).resolve().parents[2] / "tests/data/kernelbench/l1_matmul.py"
TOL = 1e-4


def model_new(arch, template: str, changes: dict[str, int]):
    """ModelNew for l1_matmul with the builtin kernel `template` (default fields + changes)."""
    spec = load_problem(PROBLEM)
    p = dataclasses.replace(space.default(arch, "float32", template), **changes)
    source = BoundGemm(spec).render(p, "float32", arch)
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    compiled = compile_source(source, arch)
    assert compiled.ok, compiled.summary
    scope: dict = {}
    exec(compile(render(spec, contract, compiled.cubin, arch.name, source, "accuracy"),
                 "<model_new>", "exec"), scope)
    return scope["ModelNew"]().cuda()


def judge(got: torch.Tensor, want: torch.Tensor) -> tuple[int, float]:
    """Outputs over atol + rtol |want|, and the largest |err| / tolerance."""
    ratio = (got.double() - want.double()).abs() / (TOL + TOL * want.double().abs())
    return int((ratio > 1).sum()), float(ratio.max())


@click.command()
@click.option("--seeds", default=12)
def main(seeds: int) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    arch = local_gpu()[1]
    kernels = {"simt sk=3 (default)": ("simt", {}), "simt sk=0": ("simt", {"sk": 0}),
               "tf32x3": ("tf32x3", {})}
    models = {name: model_new(arch, t, c) for name, (t, c) in kernels.items()}
    rows: dict[str, list[tuple[int, float, int, float]]] = {"cuBLAS": []}
    rows.update({name: [] for name in models})
    with torch.no_grad():
        for seed in range(seeds):
            torch.manual_seed(seed)
            a = torch.randn(2048, 1024, device="cuda")
            b = torch.randn(1024, 4096, device="cuda")
            exact = a.double() @ b.double()
            cublas = a @ b
            rows["cuBLAS"].append((*judge(cublas, exact), 0, 0.0))
            for name, m in models.items():
                c = m(a, b)
                torch.cuda.synchronize()
                rows[name].append((*judge(c, exact), *judge(c, cublas)))
    print(f"{torch.cuda.get_device_name()}; {seeds} seeds, each 8,388,608 outputs; over: outputs "
          f"past atol=rtol={TOL}; max: the largest |err| / tolerance")
    for name, r in rows.items():
        fails64 = sum(1 for x in r if x[0])
        line = (f"{name:22s} vs float64: {fails64}/{seeds} seeds fail, over "
                f"{sum(x[0] for x in r)}, max {' '.join(f'{x[1]:.2f}' for x in r)}")
        if name != "cuBLAS":
            failsc = sum(1 for x in r if x[2])
            line += (f"\n{'':22s} vs cuBLAS:  {failsc}/{seeds} seeds fail, over "
                     f"{sum(x[2] for x in r)}, max {' '.join(f'{x[3]:.2f}' for x in r)}")
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
