"""The local eval's progress bar moves as each judged prompt ends, not only when its batch ends
(issue 26), and counts every prompt exactly once. On the embedded model, greedy: a short answer ends
with its end-of-sequence token while a long one in the same batch runs to the length limit."""

from __future__ import annotations

from j1.backends import SamplingParams

SHORT = [{"role": "user", "content": "What is 2+2? Answer with a number only."}]
LONG = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]
PARAMS = SamplingParams(n=1, temperature=0.0, max_new_tokens=24)


def test_local_stream_reports_each_prompt_as_it_ends(embedded_backend):
    events = []
    for i, comps in embedded_backend.stream([LONG, SHORT, LONG], PARAMS, on_finish=lambda i: events.append(("end", i))):
        events.append(("yield", i, comps[0].finish_reason))
    yields = [e for e in events if e[0] == "yield"]
    assert sorted(e[1] for e in yields) == [0, 1, 2]
    assert [e[2] for e in sorted(yields)] == ["length", "stop", "length"]  # one batch: the short one ends first
    # the prompt that stopped is reported before the batch yields anything; those cut by the limit are not
    assert events[0] == ("end", 1) and [e for e in events if e[0] == "end"] == [("end", 1)]


def test_judge_stream_moves_the_bar_before_the_batch_ends(embedded_backend, tmp_path, monkeypatch):
    from j1.atomic import JsonlAppender
    from j1.eval import runner
    from j1.eval.items import Item

    out_path = tmp_path / "judgments.jsonl"
    steps = []  # lines already written to judgments.jsonl at each step of the bar

    class Bar:
        def __init__(self, **kwargs):
            self.total = kwargs["total"]

        def update(self, n):
            steps.append((n, len(out_path.read_text().splitlines())))

        def close(self):
            pass

    monkeypatch.setattr(runner, "tqdm", Bar)
    item = Item("i", "c", "p", {"A": "a", "B": "b"}, [("A", "B", "A")])
    work = [runner.Work(item, slot, messages) for slot, messages in (("AB", LONG), ("BA", SHORT), ("x", LONG))]
    with JsonlAppender(out_path) as out:
        assert runner.judge_stream(embedded_backend, work, PARAMS, out, max_errors=0) == 0
    assert sum(n for n, _ in steps) == 3 == len(out_path.read_text().splitlines())  # each prompt once
    assert steps[0] == (1, 0)  # the short prompt moved the bar while its batch was still decoding
