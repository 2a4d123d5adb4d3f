"""j1 judges inside other frameworks' training loops: ``trl`` (GRPOTrainer reward functions) and ``verl``
(J1 training on verl: the batch reward function and the pair-keeping sampler).

Each module imports its framework only where used; ``j1 serve`` covers trainers that call a remote
reward model over HTTP (OpenRLHF).

It may import the API (``j1.api``), the rewards, formats, train's named options and serve's pure protocol;
only a user's training script and the cli's ``j1 export verl`` import it.
"""
