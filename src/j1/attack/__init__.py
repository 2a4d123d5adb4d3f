"""``j1 attack``: how easily is a judge fooled? Master keys, injected verdicts and padded wrong answers
against correct answers, each judged in both orders (``attacks``: the pure builders and rates;
``runner``: judging and resuming; ``report``: report.md and its plot)."""
