"""``j1 demo``: the whole J1 loop on data that ships with j1, as one resumable run folder.

``spec`` (DemoSpec, the command's flags), ``shipped`` (the shipped pairs and recipe: a leaf the spec reads),
``budget`` (the time budget: pure), ``runner`` (the stages), ``report`` (report.md and report.json).

The top of the library: it may import every domain package (judging, eval, train, data, runs, ...) through
their typed doors; only ``j1.cli`` imports it. Its spec imports leaves only (``shipped``, constants).
"""
