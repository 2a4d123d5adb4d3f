"""``j1 probe``: how much a judge's preference depends on a pair's content, read from its logits.

``spec`` (ProbeSpec), ``texts`` (the forced answer start and the formats probed: a leaf the spec reads),
``stats`` (pure statistics over per-pair readings), ``runner`` (the prompts, the logit readings and
``run_probe``).

It may import judging, formats, pairs, train's data units, eval's helpers, backends, runs and models;
only the commands above it import it (cli, ``j1.label``). Its spec imports leaves only.
"""
