"""Random sampling of the builtin templates' space: the baseline the search is measured against.

Uniform over every valid configuration of every template for the arch and dtype, without
replacement, in an order fixed by the seed (so a resumed run continues the same sequence); it reads
nothing of the feedback, unlike kgen.author.search.
"""

from __future__ import annotations

import random

from kgen.arch import Arch
from kgen.author.families import GEMM, Family
from kgen.author.search import Proposal, read_attempt
from kgen.loop.attempt import Attempt


def propose_random(arch: Arch, dtype: str, history: tuple[Attempt, ...], seed: int,
                   family: Family = GEMM) -> Proposal:
    """The next untried configuration in this seed's random order of the whole space."""
    pool = [p for t in family.templates(arch, dtype) for p in family.space(arch, dtype, t)]
    random.Random(seed).shuffle(pool)
    tried = {s.params for a in history if (s := read_attempt(a, family)) is not None}
    for params in pool:
        if params not in tried:
            return Proposal(params, f"random sample (seed {seed}) of {len(pool)} valid "
                                    f"configurations; {len(tried)} tried so far")
    return Proposal(None, f"the search space is exhausted: all {len(pool)} valid configurations "
                          "have been tried")
