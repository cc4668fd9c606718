"""Run a builtin kernel on the CPU: the rendered .cu, compiled by g++ against the stand-in headers
in tests/emu/ (threads as coroutines) with AddressSanitizer, launched per its own contract. No GPU,
no nvcc: the kernel's index math, edge guards, reductions, tie rules and stream-K hand-offs run as
written, on small sizes.

The memory-bound and SIMT gemm kernels run block by block, their threads in lockstep from barrier
to barrier; so do the mma.sync gemm kernels (float16/bfloat16 mma, float32 3xTF32), their PTX
wrappers between `kgen:mma` markers swapped for tests/emu/mma_sync.h. The Hopper gemm kernel (its
PTX wrappers between `kgen:ptx` markers, swapped for tests/emu/hopper.h) runs with every thread
of the grid at once: mbarriers, TMA with its swizzle and zero fill, wgmma from decoded
descriptors, clusters."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgen.contract import SMS, Launch, TensorMapArg
from kgen.loop.candidate import parse_contract
from kgen.spec import OpSpec

EMU = Path(__file__).resolve().parent / "emu"
HAVE_GXX = shutil.which("g++") is not None
CTYPES = {"float32": "float", "float16": "__half", "bfloat16": "__nv_bfloat16",
          "int64": "long long"}
EMULATED_SMS = 3  # a small GPU, so grid-stride loops go round
PTX_BEGIN = "// ---- kgen:ptx begin"
PTX_END = "// ---- kgen:ptx end ----"
MMA_BEGIN = "// ---- kgen:mma begin"  # the mma.sync templates' wrappers: tests/emu/mma_sync.h
MMA_END = "// ---- kgen:mma end ----"


def to_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Values as the bytes a kernel of this dtype reads (bfloat16: float32 rounded to nearest)."""
    if dtype == "bfloat16":
        u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return values.astype({"float32": np.float32, "float16": np.float16, "int64": np.int64}[dtype])


def from_bits(raw: bytes, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32) \
            .astype(np.float64)
    kind = {"float32": np.float32, "float16": np.float16, "int64": np.int64}[dtype]
    out = np.frombuffer(raw, kind)
    return out if dtype == "int64" else out.astype(np.float64)


def stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """The values the kernel actually sees, as float64 (after rounding to the dtype)."""
    return from_bits(to_bits(values, dtype).tobytes(), dtype).reshape(values.shape)


def _main(launches: Sequence[Launch], spec: OpSpec, dtype: str, values: dict[str, int],
          offset: int, clusters: Sequence[int | None]) -> str:
    """A main() that reads every tensor from argv files, runs the launches in turn (in one
    process, so a static `__device__` workspace one writes is there for the next), writes the
    outputs back. Launch n's grid and block come from KGEN_GXn, ...; `clusters[n]` set:
    launch_async with clusters of that many CTAs."""
    tensors = {t.name: t for t in spec.tensors}
    params = {p.name for p in spec.params}
    lines = []
    for i, t in enumerate(spec.tensors):
        ctype = CTYPES[spec.tensor_dtype(t, dtype)]
        lines.append(f"  {ctype}* {t.name} = ({ctype}*)load(argv[{i + 1}], {offset} * "
                     f"sizeof({ctype}));")
    for n, (launch, cluster) in enumerate(zip(launches, clusters, strict=True)):
        call = []
        for i, arg in enumerate(launch.arguments()):
            if isinstance(arg, TensorMapArg):
                rows, cols = (f"atol(getenv(\"KGEN_{d}\"))" for d in tensors[arg.tensor].shape)
                box = arg.box_dims(values)
                lines.append(f"  CUtensorMap map{n}_{i} = emu_tensor_map({arg.tensor}, {rows}, "
                             f"{cols}, sizeof(*{arg.tensor}), {box[0]}, {box[1]}, "
                             f"{arg.swizzle}, {'true' if arg.optional else 'false'});")
                call.append(f"map{n}_{i}")
            elif arg in tensors:
                call.append(arg)
            elif arg in params:
                call.append(f"(float)atof(getenv(\"KGEN_{arg}\"))")
            else:
                call.append(f"atoi(getenv(\"KGEN_{arg}\"))")
        body = f"[&] {{ {launch.kernel}({', '.join(call)}); }}"
        smem = f"atol(getenv(\"KGEN_SMEM{n}\"))"
        start = (f"emu::launch(grid, block, {smem}, {body});" if cluster is None else
                 f"emu::launch_async(grid, block, {cluster}, {smem}, {body});")
        lines.append(f"  {{\n    dim3 grid{{(unsigned)atoi(getenv(\"KGEN_GX{n}\")), "
                     f"(unsigned)atoi(getenv(\"KGEN_GY{n}\")), 1}};\n"
                     f"    dim3 block{{(unsigned)atoi(getenv(\"KGEN_BX{n}\")), "
                     f"(unsigned)atoi(getenv(\"KGEN_BY{n}\")), 1}};\n    {start}\n  }}")
    writes = "\n".join(f"  save(argv[{i + 1}], {t.name});"
                       for i, t in enumerate(spec.tensors) if t.role == "output")
    return f"""
// The file's bytes after `pad` bytes of slack at the front (so the data can start misaligned);
// AddressSanitizer watches the end of each buffer exactly.
static void* load(const char* path, long pad) {{
  FILE* f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc(n + pad);
  if (fread(buf + pad, 1, n, f) != (size_t)n) exit(4);
  fclose(f);
  return buf + pad;
}}
static void save(const char* path, void* p) {{
  FILE* f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  f = fopen(path, "wb");
  fwrite(p, 1, n, f);
  fclose(f);
}}
int main(int argc, char** argv) {{
  (void)argc;
{chr(10).join(lines)}
{writes}
  return 0;
}}
"""


# `extern __shared__ T name[];` (dynamic shared memory) -> a pointer into the emulator's buffer.
_DYNAMIC_SMEM = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?(\w+(?: \w+)?) (\w+)\[\];")
_PTX_BLOCK = re.compile(re.escape(PTX_BEGIN) + r".*?" + re.escape(PTX_END), re.DOTALL)
_MMA_BLOCK = re.compile(re.escape(MMA_BEGIN) + r".*?" + re.escape(MMA_END), re.DOTALL)
_CLUSTER = re.compile(r"^#define CLUSTER_M (\d+)$", re.MULTILINE)
_AT_LAUNCH = re.compile(r"^#define CLUSTER_AT_LAUNCH 1$", re.MULTILINE)


def cluster_of(source: str, launch: Launch, values: dict[str, int]) -> int | None:
    """None for a lockstep kernel; for one with a `kgen:ptx` block (the Hopper template), the
    CTAs per cluster: the launch's `cluster=` where it gives one, else what the kernel compiles
    in (none where it leaves the cluster to the launch)."""
    if PTX_BEGIN not in source:
        return None
    if launch.cluster:
        return launch.cluster_dims(values)[0]
    found = _CLUSTER.search(source)
    return int(found.group(1)) if found and not _AT_LAUNCH.search(source) else 1


def build(source: str, spec: OpSpec, dtype: str, work: Path, misaligned: bool,
          launches: Sequence[Launch], values: dict[str, int]) -> Path:
    """The emulator binary for this source and these launches (cached by content under
    `work`)."""
    clusters = [cluster_of(source, launch, values) for launch in launches]
    main = _main(launches, spec, dtype, values, 1 if misaligned else 0, clusters)
    if any(c is not None for c in clusters):
        source = _PTX_BLOCK.sub('#include "hopper.h"', source)
    source = _MMA_BLOCK.sub('#include "mma_sync.h"', source)  # lockstep, warps exchanging lanes
    text = _DYNAMIC_SMEM.sub(r"\1* \2 = reinterpret_cast<\1*>(emu::smem_base());",
                             source) + main
    headers = b"".join(h.read_bytes() for h in sorted(EMU.glob("*.h")))
    key = hashlib.sha256(text.encode() + headers).hexdigest()[:16]
    binary = work / f"emu-{key}"
    if binary.exists():
        return binary
    path = work / f"{key}.cpp"
    path.write_text(text)
    done = subprocess.run(["g++", "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined",
                           "-fno-sanitize-recover=undefined", "-Wno-unknown-pragmas", "-Wno-psabi",
                           "-include", str(EMU / "kgen_emu.h"), "-I", str(EMU), "-x", "c++",
                           str(path), "-o", str(binary)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return binary


def run(source: str, spec: OpSpec, dtype: str, sizes: dict, inputs: dict[str, np.ndarray],
        work: Path, misaligned: bool = False, sms: int = EMULATED_SMS) -> dict[str, np.ndarray]:
    """Launch the kernel per its contract at `sizes` on a GPU of `sms` SMs (the contract's SMS);
    the outputs as float64 (int64 as is)."""
    contract, problems = parse_contract(source, spec)
    assert contract is not None, problems
    values = {**spec.sizes_of(sizes), SMS: sms}
    launches = contract.launches_at(values)  # a kernel per class of sizes, or several in turn
    assert launches, "no launch line runs at these sizes"
    files = []
    for t in spec.tensors:
        path = work / f"run-{os.getpid()}-{t.name}.bin"
        tdtype = spec.tensor_dtype(t, dtype)
        if t.role == "output":
            count = int(np.prod(spec.shape(t, sizes)))
            path.write_bytes(np.zeros(count * (8 if tdtype == "int64" else 4 if tdtype ==
                                               "float32" else 2), np.uint8).tobytes())
        else:
            path.write_bytes(to_bits(inputs[t.name], tdtype).tobytes())
        files.append(str(path))
    # one process runs them all, each reading what the one before wrote
    binary = build(source, spec, dtype, work, misaligned, launches, values)
    env = {"ASAN_OPTIONS": "detect_leaks=0:detect_stack_use_after_return=0",
           f"KGEN_{SMS}": str(sms),  # for a kernel that takes SMS as an argument
           **{f"KGEN_{k}": str(v) for k, v in spec.sizes_of(sizes).items()},
           **{f"KGEN_{k}": repr(float(v)) for k, v in spec.params_at(sizes).items()}}
    for n, launch in enumerate(launches):
        grid, block, smem = launch.dims(values)
        env.update({f"KGEN_GX{n}": str(grid[0]), f"KGEN_GY{n}": str(grid[1] if len(grid) > 1
                                                                     else 1),
                    f"KGEN_SMEM{n}": str(smem), f"KGEN_BX{n}": str(block[0]),
                    f"KGEN_BY{n}": str(block[1] if len(block) > 1 else 1)})
    done = subprocess.run([str(binary), *files], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {t.name: from_bits(Path(f).read_bytes(), spec.tensor_dtype(t, dtype))
            .reshape(spec.shape(t, sizes))
            for t, f in zip(spec.tensors, files, strict=True) if t.role == "output"}


def judge(source: str, spec: OpSpec, dtype: str, sizes: dict, inputs: dict, refs: dict,
          work: Path, arrays: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Run the kernel on `inputs` (kgen's own draw, torch tensors; `arrays` instead, where given,
    is what the kernel reads) and judge its outputs as the worker does (check_after_run: kgen's
    tolerances, guard bands and checks) against `refs`; Rejected where the worker would reject
    it. The outputs, as `run` gives them."""
    import torch

    from kgen.sandbox.launch import allocate
    from kgen.sandbox.validate import check_after_run

    arrays = arrays or {k: v.double().numpy() for k, v in inputs.items()}
    outs = run(source, spec, dtype, sizes, arrays, work)
    buffers = allocate(spec, sizes, dtype, device="cpu")
    for name, value in inputs.items():
        buffers[name].data.copy_(value)
    for name, out in outs.items():
        buffers[name].data.copy_(torch.from_numpy(out))
    check_after_run(spec, dtype, sizes, buffers, inputs, refs, "here")
    return outs


def gemm_excess(source: str, spec: OpSpec, dtype: str, m: int, n: int, k: int, work: Path,
                misaligned: bool = False, sms: int = EMULATED_SMS) -> float:
    """A gemm kernel on fresh normal inputs against numpy in float64 (of the inputs as stored in
    the dtype): the largest error beyond the spec's tolerance, 0 where every element is within
    (NaN counts as infinitely far)."""
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    (c,) = run(source, spec, dtype, {"M": m, "N": n, "K": k}, {"A": a, "B": b}, work,
               misaligned, sms).values()
    ref = stored(a, dtype) @ stored(b, dtype)
    tol = spec.dtypes[dtype]
    excess = np.abs(c - ref) - (tol.atol + tol.rtol * np.abs(ref))
    return float(np.nan_to_num(excess, nan=np.inf).max(initial=0.0).clip(min=0.0))
