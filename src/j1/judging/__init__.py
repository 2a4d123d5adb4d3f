"""Judging one pair or response with a judge: what a judge is (``judges``: the shipped and trained judge
folders, their manifest ``judge.json``, loading one), the settings that build one (``settings``:
``JudgeSettings``, what ``j1.load_judge`` takes; ``spec``: the judge flags every judging command shares, which
give them), asking it and reading its verdicts (``judge``), asking it about one request (``ask``: ``j1 judge``'s
body), fitting a prompt to its context (``limits``) and its chat template with an assistant prefill (``chat``).

It may import the layers below it: ``j1.formats``, ``j1.backends``, ``j1.runs``, ``j1.pairs``, ``j1.models``,
``j1.device`` and ``j1.schema``; never the commands above it (eval, train, probe, demo, serve, cli).
"""
