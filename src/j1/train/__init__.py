"""J1 training: data units (``data``), the pair-keeping sampler (``sampler``), the named options
(``options``), the advantages and the answer span (pure: ``advantages``, ``answer_span``), the TRL GRPO
trainer (``trl_grpo``, ``shared_prompt``), the ``j1 train`` recipe (``recipe``) and the format warm-up
(``warmup``).

Heavy modules (TRL, transformers) are imported by the submodules that need them, not here.

It may import backends, judging (the judge folders, the prefill, the context), formats, pairs, rewards, data's
pair reader, runs, schema, models and device; demo, probe, data's mix, rewards' spec, the integrations and the
cli import it.
"""
