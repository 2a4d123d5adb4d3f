"""``j1 attack``: how easily is a judge fooled? Master keys, injected verdicts and padded wrong answers
against correct answers, each judged in both orders (``attacks``: the pure builders and rates;
``runner``: judging and resuming; ``report``: report.md and its plot).

It may import judging, formats, pairs, backends, runs, schema and eval's run steps, items and reports (an
attack run is a judging run, as j1 eval's); ``j1 score`` (``j1.eval.rescore``) and the cli import it.
"""
