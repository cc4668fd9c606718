"""A run's configuration: what run.json keeps, and how --resume reads it back as data.

run.json may have been edited by anyone, so on resume every field is type-checked; a prompt set
is used only if kgen ships it or the user names it again now; the API key is sent only to an
endpoint named in this invocation (option or environment); --unsafe-no-sandbox comes only from
the command line; and `kgen fix` reads the saved input file only if it is still the run's
attempt 1.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen.errors import UsageError
from kgen.loop.loop import Budget
from kgen.loop.prompts import list_prompt_sets
from kgen.loop.rundir import RunDir, redact_text
from kgen.models import ENDPOINT_ENV
from kgen.models.openai_backend import safe_url

KEY_ENV = ("KGEN_API_KEY", "OPENAI_API_KEY")


@dataclass(frozen=True)
class RunConfig:
    """Everything needed to repeat or resume a run; never holds an API key."""

    mode: str  # "generate" or "fix"
    arch: str | None
    op: str | None = None
    op_file: str | None = None
    kernelbench: str | None = None  # a KernelBench problem file instead of --op/--op-file
    dtype: str | None = None
    input_path: str | None = None  # fix: the file to mend
    backend: str | None = None  # builtin | openai | scripted | a plugin; None = choose
    model: str | None = None
    base_url: str | None = None
    prompt_set: str = "default"
    rounds: int = 8
    candidates: int = 1
    patience: int = 3
    wall_seconds: float | None = None
    tokens: int | None = None
    no_gpu: bool = False
    unsafe_no_sandbox: bool = False
    fresh_workers: bool = False  # a new GPU worker per candidate instead of the warm pool
    profile: bool = True  # a passing candidate: profiled with Nsight Compute where ncu works
    sanitize: bool = True  # a failing one: re-run under compute-sanitizer where it is installed
    compile_baseline: bool = True  # KernelBench: the best kernel timed against torch.compile too

    def budget(self) -> Budget:
        return Budget(self.rounds, self.candidates, self.patience, self.wall_seconds, self.tokens)


@dataclass(frozen=True)
class ResumeOptions:
    """What the user gives with --resume; each replaces the saved value."""

    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    prompt_set: str | None = None
    unsafe_no_sandbox: bool = False
    skip_corrupt: bool = False
    op_file: str | None = None  # the run's own files, named again (run.json cannot name them)
    kernelbench: str | None = None


_TEXT = ("arch", "op", "op_file", "kernelbench", "dtype", "input_path", "backend", "model",
         "base_url")
_COUNTS = {"rounds": 1, "candidates": 1, "patience": 0}


def saved_config(config: RunConfig) -> RunConfig:
    """What run.json keeps: absolute paths (resume from anywhere), no credentials in the URL."""
    def absolute(path: str | None) -> str | None:
        return str(Path(path).resolve()) if path and Path(path).exists() else path

    return dataclasses.replace(config, input_path=absolute(config.input_path),
                               op_file=absolute(config.op_file),
                               kernelbench=absolute(config.kernelbench),
                               prompt_set=config.prompt_set if config.prompt_set in
                               list_prompt_sets() else absolute(config.prompt_set) or "default",
                               base_url=safe_url(config.base_url) if config.base_url else None)


def load_config(run_dir: RunDir) -> RunConfig:
    """The saved configuration, every field checked (run.json is data, maybe hostile)."""
    saved = run_dir.meta()["config"]
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    known = {k: v for k, v in saved.items() if k in fields}
    check_config(known, run_dir.path / "run.json")
    return RunConfig(**known)


def check_config(saved: Mapping[str, Any], where: Path) -> None:
    """UsageError naming the first field of run.json's config that has the wrong type."""
    def bad(key: str, want: str) -> UsageError:
        return UsageError(f"{where}: config.{key} must be {want} (got {saved[key]!r:.60}); "
                          "it is not a run directory kgen can resume")

    if saved.get("mode") not in ("generate", "fix"):
        raise UsageError(f"{where}: config.mode must be generate or fix; it is not a run "
                         "directory kgen can resume")
    for key in _TEXT:
        if saved.get(key) is not None and not isinstance(saved[key], str):
            raise bad(key, "text or null")
    if not isinstance(saved.get("prompt_set", "default"), str):
        raise bad("prompt_set", "text")
    for key, least in _COUNTS.items():
        value = saved.get(key, least)
        if type(value) is not int or not least <= value <= 100_000:
            raise bad(key, f"a whole number from {least} to 100000")
    if saved.get("tokens") is not None and (type(saved["tokens"]) is not int
                                            or saved["tokens"] < 0):
        raise bad("tokens", "a whole number >= 0 or null")
    seconds = saved.get("wall_seconds")
    if seconds is not None and (type(seconds) not in (int, float) or not math.isfinite(seconds)
                                or seconds < 0):
        raise bad("wall_seconds", "a number >= 0 or null")
    for key in ("no_gpu", "unsafe_no_sandbox", "fresh_workers", "profile", "sanitize",
                "compile_baseline"):
        if type(saved.get(key, False)) is not bool:
            raise bad(key, "true or false")


def resumed_config(saved: RunConfig, now: ResumeOptions, run_dir: RunDir,
                   env: Mapping[str, str] | None = None) -> RunConfig:
    """The saved configuration with what is given now; UsageError where run.json asks for
    something only the user may decide (code to load, where a key goes)."""
    env = os.environ if env is None else env
    if now.prompt_set is None and saved.prompt_set not in list_prompt_sets():
        raise UsageError(f"run.json names the prompt set {saved.prompt_set!r:.120}, which kgen "
                         "does not ship; a run directory is data, not code: to use those "
                         f"templates, name them yourself with --prompt-set {saved.prompt_set:.120}")
    base_url = now.base_url or saved.base_url
    named_now = now.base_url or any(env.get(k) for k in ENDPOINT_ENV if k != "KGEN_MODEL")
    if saved.base_url and not named_now and any(env.get(k) for k in KEY_ENV):
        raise UsageError(f"run.json names the endpoint {saved.base_url!r:.120}; kgen sends your "
                         "API key only to an endpoint named in this invocation: add --base-url "
                         f"{saved.base_url:.120} (or set KGEN_BASE_URL) to continue there")
    if now.base_url is None and named_now:
        base_url = None  # the environment's endpoint, as the user set it now
    for key, flag in (("op_file", "--op-file"), ("kernelbench", "--kernelbench")):
        _named_again(getattr(saved, key), getattr(now, key), flag)
    config = dataclasses.replace(saved, backend=now.backend or saved.backend,
                                 model=now.model or saved.model, base_url=base_url,
                                 prompt_set=now.prompt_set or saved.prompt_set,
                                 unsafe_no_sandbox=now.unsafe_no_sandbox)
    if config.mode == "fix":
        _same_input(config.input_path, run_dir)
    return config


def _named_again(saved: str | None, given: str | None, flag: str) -> None:
    """An op file or KernelBench problem is code kgen runs (a problem file in the probe, a spec's
    reference file in the worker) and text it sends to the model: run.json alone cannot name
    one. The user names it again, and it must be the file the run started with."""
    if saved is None:
        if given is not None:
            raise UsageError(f"{flag} {given}: this run was not started with {flag}")
        return
    if given is None:
        raise UsageError(f"run.json names {flag} {saved!r:.120}; a run directory is data, not "
                         f"code: to resume with that file, name it yourself: {flag} {saved:.120}")
    if Path(given).resolve() != Path(saved).resolve():
        raise UsageError(f"{flag} {given} is not the file this run started with ({saved:.120})")


def _same_input(input_path: str | None, run_dir: RunDir) -> None:
    """`kgen fix --resume` reads the saved input file only if it is still the run's attempt 1,
    so a run.json cannot point kgen (and the model) at another file."""
    seed = run_dir.attempt_dir(1) / "kernel.cu"
    path = Path(str(input_path))
    try:
        same = path.is_file() and seed.is_file() and redact_text(
            path.read_bytes().decode("utf-8", errors="replace")) == seed.read_bytes().decode(
            "utf-8", errors="replace")
    except OSError:
        same = False
    if not same:
        raise UsageError(f"run.json's input file {str(input_path)[:200]!r} is not the file this "
                         "run started from (it changed, or run.json was edited); start a new "
                         "run: kgen fix FILE")
