"""Judging one pair or response with a judge: what a judge is (``judges``: the shipped and trained judge
folders, their manifest ``judge.json``, loading one), its settings (``spec``: the judge flags every judging
command shares), asking it and reading its verdicts (``judge``), fitting a prompt to its context
(``limits``) and its chat template with an assistant prefill (``chat``).

It may import the layers below it: ``j1.formats``, ``j1.backends``, ``j1.runs``, ``j1.pairs``, ``j1.models``,
``j1.device`` and ``j1.schema``; never the commands above it (eval, train, probe, demo, serve, cli).
"""
