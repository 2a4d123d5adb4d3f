"""Judge evaluation (``j1 eval`` / ``j1 score``): benchmark loaders, the runner, metrics and reports.

It may import judging, formats, pairs, backends, runs, schema, data's pair reader and, for ``j1 score`` of an
attack run, ``j1.attack.runner``; the commands above it (attack, probe, demo, label, cli) import it.
"""
