"""Training-pair synthesis: sources, math verification, noise filters, chat/math pairs, the mix.

It may import formats, pairs, backends, judging, runs, schema and train's data units (``mix`` writes
training rows); the commands above it (eval's pair readers, demo, cli) import it.
"""
