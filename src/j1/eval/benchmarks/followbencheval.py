"""FollowBenchEval: its pairwise version (205 pairs, used by EvalPlanner and J1) has no public release we
could find, so ``--benchmark followbencheval`` takes the generic pairwise form (``j1.eval.benchmarks.pairform``;
category from ``category``, else ``level``). FollowBench's own files (instructions and targets, no response
pairs) are not judge data and fail with the missing field named.
"""

from __future__ import annotations

from j1.eval.benchmarks.base import register
from j1.eval.benchmarks.pairform import parse_row

register("followbencheval")(parse_row)
