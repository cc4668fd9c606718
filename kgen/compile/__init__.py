"""The compile stage: untrusted source -> cubin for one explicit arch, with diagnostics as records.

Public face: `compile_source`, `CompileResult`, `Diagnostic`, `ResourceUsage`, `summarize`.
Inside: nvcc (running it), cache, includes (the include policy), isolation (bubblewrap), logparse
(reading the log), rules/toolrules (placing and collapsing records), summary (text for the model),
scan (source and PTX scanning), cudaknow (header and intrinsic facts), binary (what a binary holds).
"""

from kgen.compile.nvcc import Limits, compile_source
from kgen.compile.records import CompileResult, Diagnostic, ResourceUsage
from kgen.compile.summary import summarize

__all__ = ["CompileResult", "Diagnostic", "Limits", "ResourceUsage", "compile_source",
           "summarize"]
