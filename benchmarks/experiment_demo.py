"""A whole `kgen experiment` on the local GPU with the chat-server model: a real local HTTP server
speaking chat completions (tests/chat_server.py) answers from a script of replies per op, built
from each shipped op's reference kernels, so every cell runs the real openai path, nvcc, the
sandboxed warm workers and the report. It shows the machinery and the metrics, not a model's
skill: the replies are scripted.

Two scripted "models" on one server: `careful` answers with the op's reference kernels in order
(the naive one first, then the faster ones); `hasty` first sends a kernel that does not compile,
then the op's fastest reference kernel. Every shipped op with a reference kernel for its first
dtype is in the grid (gemm today; six and more once the op library lands), 2 samples each.

    python -m benchmarks.experiment_demo --out runs/experiment-demo [--workers 2] [--ops gemm]
        [--ray auto]

needs the `openai` package (on a machine without registries: scripts/fetch-device-deps.sh here,
then scripts/device-check.sh experiment there). Writes the experiment folder (report.md,
report.json, plots/, cells/) to --out.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from chat_server import ChatServer, Response, completion  # noqa: E402

from kgen.ops import available_ops, load_op  # noqa: E402

_OP = re.compile(r"## Operation: (\S+) \((\w+)\)")
_DONE = re.compile(r"## History \((\d+) attempt")


def reference_replies(op: str) -> tuple[str, list[str]]:
    """(dtype, the op's reference kernels for its first dtype, simplest first)."""
    spec = load_op(op)
    dtype = next(iter(spec.dtypes))
    sources = [p.read_text() for p in spec.reference_kernels()]
    return dtype, [s for s in sources if f"dtype={dtype}" in s.split("\n", 1)[0]]


def broken(source: str) -> str:
    """The kernel with an undeclared name in its first body: a compile error."""
    at = source.index("{", source.index("__global__")) + 1
    return source[:at] + "\n  int kgen_demo_typo = undeclared_in_this_kernel;" + source[at:]


def scripts(ops: list[str]) -> dict[str, dict[str, list[str]]]:
    """model -> op -> the replies, in the order the attempts get them."""
    out: dict[str, dict[str, list[str]]] = {"careful": {}, "hasty": {}}
    for op in ops:
        _, kernels = reference_replies(op)
        out["careful"][op] = kernels
        out["hasty"][op] = [broken(kernels[0]), kernels[-1]]
    return out


def responder(script: dict[str, dict[str, list[str]]]):
    """Answer by the request's model, the op in its prompt and how many attempts came before."""
    def answer(body) -> Response:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        found = _OP.search(text)
        done = _DONE.search(text)
        replies = script.get(body.get("model"), {}).get(found.group(1) if found else "", [])
        if not replies:
            return completion("I cannot help with that op.")
        source = replies[min(int(done.group(1)) if done else 0, len(replies) - 1)]
        return completion(f"Here is the kernel.\n\n```cuda\n{source}```\n", usage=(1500, 700))
    return answer


def grid_text(ops: list[str], base_url: str, samples: int, arch: str | None,
              gpu: bool) -> str:
    models = [{"name": name, "backend": "openai", "model": name, "base_url": base_url,
               "parameters": {"max_retries": 2, "timeout": 60}, "concurrency": 8,
               "price_per_mtok": {"prompt": 0.5, "completion": 1.5}}
              for name in ("careful", "hasty")]
    return json.dumps({"name": "experiment-demo", "description": "scripted chat-server replies "
                       "from the reference kernels", "models": models, "ops": ops,
                       "samples": samples, "budget": {"rounds": 3, "patience": 1}, "gpu": gpu,
                       **({"archs": [arch]} if arch else {})}, indent=2)


@click.command()
@click.option("--out", default="runs/experiment-demo", show_default=True,
              type=click.Path(file_okay=False, path_type=Path))
@click.option("--ops", help="Comma-separated ops (default: every shipped op with a reference "
                            "kernel for its first dtype).")
@click.option("--samples", default=2, show_default=True, type=click.IntRange(1, 20))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 8),
              help="Warm GPU workers per GPU (2 on one GPU shows the scheduler feeding both).")
@click.option("--jobs", type=click.IntRange(1, 64), help="Cells at once.")
@click.option("--arch", help="Target (default: the local GPU's).")
@click.option("--compile-only", is_flag=True, help="No GPU: a smoke test of the script.")
@click.option("--ray", "ray_address", metavar="ADDRESS|auto",
              help="Run the cells as Ray tasks (kgen experiment run --ray).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="The chat server's port (0: any free one). The endpoint is part of each "
                   "cell's identity: resuming a cut experiment needs the port it ran with.")
def main(out: Path, ops: str | None, samples: int, workers: int, jobs: int | None,
         arch: str | None, compile_only: bool, ray_address: str | None, port: int) -> None:
    from kgen.cli import main as kgen

    chosen = ops.split(",") if ops else [op for op in available_ops()
                                         if reference_replies(op)[1]]
    script = scripts(chosen)
    out.mkdir(parents=True, exist_ok=True)
    with ChatServer(models=("careful", "hasty"), port=port) as server:
        server.push(*[responder(script)] * 10_000)
        grid = out.parent / f"{out.name}.yaml"
        grid.write_text(grid_text(chosen, server.base_url, samples, arch, not compile_only))
        click.echo(f"ops: {', '.join(chosen)}; server {server.base_url}; grid {grid}", err=True)
        args = ["experiment", "run", str(grid), "--out", str(out), "--workers", str(workers)]
        args += ["--jobs", str(jobs)] if jobs else []
        args += ["--ray", ray_address] if ray_address else []
        kgen.main(args, standalone_mode=False)


if __name__ == "__main__":
    main()
