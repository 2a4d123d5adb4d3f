"""The generic pairwise form (``j1.eval.benchmarks.pairform``): ``prompt``, ``chosen``, ``rejected``, in every
form ``j1.data.pairs_io`` reads, and ``j1 synth mix`` rows."""

from __future__ import annotations

from j1.eval.benchmarks.base import register
from j1.eval.benchmarks.pairform import parse_row

register("generic")(parse_row)
