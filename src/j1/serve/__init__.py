"""``j1 serve``: a judge behind HTTP for RL trainers (OpenRLHF's remote reward API) and other clients.

``protocol`` (prompt stripping and reward arithmetic) and ``tasks`` need no web framework; ``bodies`` (the
request and answer models, pydantic), ``app``, ``batcher`` and ``process`` (its socket, signals and
watchdog) are the server, which needs the ``serve`` extra (fastapi, uvicorn).

It may import the API (``j1.api``: the judge it serves), judging, formats, pairs, backends and the group
reward (``j1.rewards.group``); only the cli imports it.
"""
