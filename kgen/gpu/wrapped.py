"""One worker launch wrapped by a tool (ncu, compute-sanitizer), inside the same bubblewrap
sandbox and time bound as every worker: `TOOL ARGS... python -m kgen.sandbox.worker --mode MODE
WORKDIR`. The parent reads back what the tool wrote and what the worker recorded (PROBE_FILE)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgen import process
from kgen.gpu.client import MAX_OUTPUT, worker_command, worker_env
from kgen.gpu.sandbox import gpu_sandbox
from kgen.wire import PROBE_FILE, EvalRequest

LOG_FILE = "tool.log"  # the tool's own output (--log-file), apart from the worker's


@dataclass(frozen=True)
class Wrapped:
    """How a wrapped run ended: the tool's log, the process output, the worker's record."""

    log: str
    output: str
    probe: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    timed_out: bool = False
    returncode: int | None = None

    @property
    def text(self) -> str:
        """Everything the tool said: its log file, else (no --log-file) the process output."""
        return self.log or self.output


def run(tool: Sequence[str], request: EvalRequest, binary: bytes, mode: str, *,
        timeout_s: float, unsafe: bool = False, env: Mapping[str, str] | None = None) -> Wrapped:
    """Run `tool` around one worker in profile or sanitize mode; never raises for the kernel.

    `tool` may use the placeholder `{log}` for the path of its log file; `env` is added to the
    worker's environment (CUDA_VISIBLE_DEVICES: the GPU that judged the candidate)."""
    folder = Path(tempfile.mkdtemp(prefix=f"kgen-{mode}-"))
    try:
        request.write(folder, binary)
        log = folder / LOG_FILE
        args = [a.replace("{log}", str(log)) for a in tool]
        prefix = [] if unsafe else gpu_sandbox(folder)
        done = process.run_limited([*prefix, *args, *worker_command(folder, mode=mode)],
                                   cwd=folder, timeout=timeout_s,
                                   env={**worker_env(folder), **(env or {})},
                                   max_output=MAX_OUTPUT)
        try:
            probe = json.loads(_read(folder / PROBE_FILE) or "{}")
        except ValueError:  # a worker killed mid-write
            probe = {}
        return Wrapped(_read(log), done.output, probe if isinstance(probe, dict) else {},
                       done.seconds, done.timed_out, done.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path, limit: int = 4 * 1024 * 1024) -> str:
    """A file's text (head and tail past `limit`), or "" when there is none."""
    if not path.is_file():
        return ""
    data = path.read_bytes()
    if len(data) > limit:
        data = data[:limit // 2] + b"\n[... truncated ...]\n" + data[-limit // 2:]
    return data.decode("utf-8", errors="replace")
