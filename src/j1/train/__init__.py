"""J1 training: data units (``data``), the pair-keeping sampler (``sampler``), the named options
(``options``), the advantages and the answer span (pure: ``advantages``, ``answer_span``), the TRL GRPO
trainer (``trl_grpo``, ``shared_prompt``), the ``j1 train`` recipe (``recipe``) and the format warm-up
(``warmup``).

Heavy modules (TRL, transformers) are imported by the submodules that need them, not here.
"""
