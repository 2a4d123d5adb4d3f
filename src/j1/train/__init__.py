"""J1 training: data units, the pair-keeping sampler, the TRL GRPO trainer and the format warm-up.

Heavy modules (TRL, transformers) are imported by the submodules that need them, not here.
"""
