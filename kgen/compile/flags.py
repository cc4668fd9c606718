"""Which extra nvcc flags (`kgen compile --flag`, the loop's compile flags) may be passed.

An allow-list, not a deny-list: nvcc has many spellings for adding include paths, pre-included
files, option files and host-compiler options (-I, --include-path, -isystem, --pre-include,
-include, -idirafter, -iquote, -imacros, --options-file/-optf, @file, -Xcompiler ..., -ccbin),
and a list of what is refused would miss the next one. What is allowed changes code generation
only and reads no file: optimization and register limits, math modes, macros, the language
standard, warnings, and a few ptxas options. kgen sets the target, the output and -lineinfo
itself. Each flag is one argument in its joined form (`-maxrregcount=64`, `-Xptxas=-v`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgen.errors import UsageError

_BOOL = r"=(?:true|false)"
_ALLOWED = [re.compile(p) for p in (
    r"-O[0-3]", r"--optimize=[0-3]", r"-G", r"--device-debug", r"-lineinfo",
    r"--generate-line-info",
    r"-{1,2}maxrregcount=\d{1,3}", r"-{1,2}use_fast_math", r"--use-fast-math",
    rf"-{{1,2}}ftz{_BOOL}", rf"-{{1,2}}prec-div{_BOOL}", rf"-{{1,2}}prec-sqrt{_BOOL}",
    rf"-{{1,2}}fmad{_BOOL}", r"-{1,2}extra-device-vectorization", r"-{1,2}restrict",
    r"-{1,2}expt-relaxed-constexpr", r"-{1,2}expt-extended-lambda", r"--extended-lambda",
    r"-{1,2}std=c\+\+(?:14|17|20)", r"-w", r"--disable-warnings",
    r"-{1,2}Wno-deprecated-gpu-targets",
    r"-{1,2}(?:resource-usage|res-usage)", r"--display-error-number", r"--no-display-error-number",
    r"-{1,2}diag-suppress=\d+(?:,\d+)*", r"-{1,2}diag-warn=\d+(?:,\d+)*",
    r"-{1,2}diag-error=\d+(?:,\d+)*", r"--Werror=(?:all-warnings|cross-execution-space-call)",
    r"-D[A-Za-z_]\w{0,63}(?:=[\w.+\-]{0,64})?", r"-U[A-Za-z_]\w{0,63}",
)]
# ptxas options that only steer code generation or what ptxas reports.
_PTXAS = re.compile(r"-v|--verbose|-O[0-3]|--warn-on-spills|--warn-on-local-memory-usage|"
                    r"--warn-on-double-precision-use|-(?:dlcm|dscm)=(?:ca|cg|cs|cv|wb|wt)|"
                    r"--maxrregcount=\d{1,3}|--allow-expensive-optimizations" + _BOOL +
                    r"|--def-load-cache=(?:ca|cg|cs|cv)|--disable-optimizer-constants")
_PTXAS_FLAG = re.compile(r"(?:-Xptxas|--ptxas-options)=(?P<items>.+)")


def check_flags(flags: Sequence[str]) -> None:
    """UsageError naming the first flag kgen does not pass to nvcc."""
    for flag in flags:
        if not _allowed(flag):
            raise UsageError(f"nvcc flag {flag[:80]!r} is not allowed: --flag takes only flags "
                             "that change code generation (-O, -maxrregcount=N, "
                             "-use_fast_math, --ftz=, -DNAME[=VALUE], -std=c++17, "
                             "-Xptxas=-v, ...); include paths, pre-included files, option "
                             "files and host-compiler options are refused (README: compile "
                             "isolation)")


def _allowed(flag: str) -> bool:
    if any(p.fullmatch(flag) for p in _ALLOWED):
        return True
    m = _PTXAS_FLAG.fullmatch(flag)
    return m is not None and all(_PTXAS.fullmatch(item) for item in m.group("items").split(","))
