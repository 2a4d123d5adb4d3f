"""j1 judges inside other frameworks' training loops: ``trl`` (GRPOTrainer reward functions).

Each module imports its framework only where used; ``j1 serve`` covers trainers that call a remote
reward model over HTTP (OpenRLHF).
"""
