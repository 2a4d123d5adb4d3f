"""``j1 serve``: a judge behind HTTP for RL trainers (OpenRLHF's remote reward API) and other clients.

``protocol`` (pure parsing and reward arithmetic) and ``tasks`` need no web framework; ``app``,
``batcher`` and ``process`` (its socket, signals and watchdog) are the server, which needs the ``serve``
extra (fastapi, uvicorn).
"""
