"""Run folders: what every command that writes a run records, and how it writes files.

``runinfo`` (``RunFolder``: run.json with config, versions and revision; resuming), ``spec`` (the run flags
every command shares: ``--output_dir``, ``--resume``, ``--seed``, bootstrap), ``atomic`` (write to a
temporary file, then rename).

A floor of the library: it imports nothing of j1 outside this package, so every command may import it.
"""
