"""The dependency rules (README: Layout), read from the imports of every module (function-level
and `if TYPE_CHECKING:` imports included: a cycle of types is a cycle too): no cycles; the worker
imports only the standard library, torch, cupy and the shared types; compile/ stays below the
other stages; nothing imports the CLI; the shared vocabulary at the top level depends on nothing
but itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Top-level modules that are entry points, not shared vocabulary.
ENTRY_POINTS = {"kgen.cli", "kgen.__main__", "kgen.doctor"}
# What the worker may import besides the standard library and the shared types: the GPU stack
# (numpy is cupy's own scalar type for kernel arguments).
WORKER_THIRD_PARTY = {"torch", "cupy", "numpy"}


def module_files() -> dict[str, Path]:
    """Module name -> file, for kgen/ and the worker (sandbox/, installed as kgen.sandbox)."""
    found = {}
    for base, package in ((ROOT / "kgen", "kgen"), (ROOT / "sandbox", "kgen.sandbox")):
        for path in base.rglob("*.py"):
            if "sandbox" in path.relative_to(base).parts and package == "kgen":
                continue  # kgen/sandbox is a link to sandbox/, read once under its own name
            parts = [package, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module `name` imports at run time, anywhere in the file."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return out


def graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the graph's own modules, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in edges:
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        todo += [n for n in edges.get(node, ()) if n in edges]
    return seen


def shared_types() -> set[str]:
    """The modules directly in kgen/ (not packages, not entry points), and kgen itself."""
    plain = {name for name, path in FILES.items()
             if path.parent == ROOT / "kgen" and path.name != "__init__.py"}
    return (plain - ENTRY_POINTS) | {"kgen"}


FILES = module_files()
EDGES = graph()


def test_the_cycle_finder_finds_a_cycle_and_its_members():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_every_module_is_read():
    assert {"kgen.compile.nvcc", "kgen.loop.session", "kgen.sandbox.worker",
            "kgen.gpu.client", "kgen.author.search", "kgen.cli"} <= set(EDGES)


def test_no_import_cycles():
    cycle = find_cycle(EDGES)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_worker_imports_only_the_stdlib_the_gpu_stack_and_shared_types():
    allowed = shared_types()
    for module in reachable(EDGES, "kgen.sandbox.worker"):
        for target in EDGES[module]:
            top = target.split(".")[0]
            if target in EDGES:
                assert target.startswith("kgen.sandbox") or target in allowed, \
                    f"{module} imports {target}"
            else:
                assert top in sys.stdlib_module_names or top in WORKER_THIRD_PARTY, \
                    f"{module} imports {target}"


def test_shared_types_depend_only_on_each_other_and_the_stdlib():
    """They may use torch inside a function (the reference evaluator), never at import time."""
    allowed = shared_types()
    for module in allowed:
        for target in EDGES[module]:
            top = target.split(".")[0]
            assert target in allowed or (top != "kgen" and (
                top in sys.stdlib_module_names or top in WORKER_THIRD_PARTY)), \
                f"shared module {module} imports {target}"
    code = (f"import sys, {', '.join(sorted(allowed))}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'cupy', 'numpy', 'yaml', 'jinja2', 'openai', 'rich', 'click')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.parametrize("stage", ["kgen.gpu", "kgen.models", "kgen.author", "kgen.loop",
                                   "kgen.cli"])
def test_compile_imports_no_later_stage(stage):
    for module, targets in EDGES.items():
        if module.startswith("kgen.compile"):
            bad = [t for t in targets if t == stage or t.startswith(stage + ".")]
            assert not bad, f"{module} imports {bad}"


def test_nothing_imports_the_cli():
    for module, targets in EDGES.items():
        if module.startswith("kgen.cli") or module == "kgen.__main__":
            continue
        assert not [t for t in targets if t == "kgen.cli" or t.startswith("kgen.cli.")], module
