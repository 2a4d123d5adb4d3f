"""The eval's progress bar (issues 26 and 53): counted in tokens and shown in prompts, so it moves while a
batch decodes and its ETA holds for batched work, and every prompt counts exactly once. On the embedded
model, greedy: a short answer ends with its end-of-sequence token while a long one in the same batch runs
to the length limit."""

from __future__ import annotations

import pytest

from j1.backends import SamplingParams
from j1.eval.runner import TokenProgress

SHORT = [{"role": "user", "content": "What is 2+2? Answer with a number only."}]
LONG = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]
PARAMS = SamplingParams(n=1, temperature=0.0, max_new_tokens=24)


class Bar:
    """tqdm's part the runner uses: ``update``; ``n`` as tqdm counts it."""

    def __init__(self, **kwargs):
        self.total = kwargs.get("total")
        self.n = 0
        self.steps: list[int] = []

    def update(self, k):
        self.n += k
        self.steps.append(k)

    def close(self):
        pass


@pytest.mark.parametrize("engine", ["j1.decode", "generate"])
def test_local_stream_reports_each_step_and_each_prompt_as_it_ends(embedded_backend, monkeypatch, engine):
    # share_prefill off: the backend decodes with transformers' generate, whose steps come through its
    # stopping criteria; on a GPU that is the static-cache generate path.
    monkeypatch.setattr(embedded_backend, "share_prefill", engine == "j1.decode")
    assert embedded_backend.engine == engine
    events, tokens = [], {0: 0, 1: 0, 2: 0}

    def wrote(prompts):
        events.append(("step", len(prompts)))
        for i in prompts:
            tokens[i] += 1

    for i, comps in embedded_backend.stream([LONG, SHORT, LONG], PARAMS, on_finish=lambda i: events.append(("end", i)),
                                            on_tokens=wrote):
        events.append(("yield", i, comps[0].finish_reason, comps[0].completion_tokens))
    yields = sorted(e[1:] for e in events if e[0] == "yield")
    assert [y[:2] for y in yields] == [(0, "length"), (1, "stop"), (2, "length")]  # one batch: the short one ends first
    # the prompt that stopped is reported before the batch yields anything; those cut by the limit are not
    ends = [e for e in events if e[0] == "end"]
    assert ends == [("end", 1)] and events.index(ends[0]) < min(k for k, e in enumerate(events) if e[0] == "yield")
    # a token per step for each live sample: 24 for each long one, the short one's tokens and its end token
    assert tokens == {0: 24, 1: yields[1][2], 2: 24}
    steps = [e[1] for e in events if e[0] == "step"]
    assert len(steps) == 24 and steps[0] == 3 and steps[-1] == 2


def test_judge_stream_moves_the_bar_by_tokens_before_the_batch_ends(embedded_backend, tmp_path, monkeypatch):
    from j1.eval import runner
    from j1.eval.items import Item
    from j1.runs.atomic import JsonlAppender

    out_path = tmp_path / "judgments.jsonl"
    bars = []

    def make_bar(**kwargs):
        bars.append(Bar(**kwargs))
        bars[-1].lines = []  # lines written to judgments.jsonl at each step of the bar
        real = bars[-1].update

        def update(k):
            bars[-1].lines.append(len(out_path.read_text().splitlines()) if out_path.exists() else 0)
            real(k)

        bars[-1].update = update
        return bars[-1]

    monkeypatch.setattr(runner, "tqdm", make_bar)
    item = Item("i", "c", "p", {"A": "a", "B": "b"}, [("A", "B", "A")])
    work = [runner.Work(item, slot, messages) for slot, messages in (("AB", LONG), ("BA", SHORT), ("x", LONG))]
    with JsonlAppender(out_path) as out:
        assert runner.judge_stream(embedded_backend, work, PARAMS, out, max_errors=0) == 0
    (bar,) = bars
    assert bar.total == 3 * 24 and bar.n == bar.total == 3 * 24  # each prompt's budget counted once
    assert len(out_path.read_text().splitlines()) == 3
    assert len(bar.steps) > 3 and bar.steps[0] == 3  # one token for each of the 3 prompts at the first step
    assert all(lines == 0 for lines in bar.lines)  # all of it before the batch wrote its first line


def test_the_eta_of_a_batch_holds():
    # 20 prompts decoded together, 10 tokens each at most; one stops after 3 tokens. At step 5 of 10 the
    # bar stands at half the batch, so a rate-based ETA says about as long again. Counting finished
    # prompts said 1/20 done: an ETA of 19 times the time so far (the "1/20 [00:47<15:04]" of issue 53).
    progress = TokenProgress(Bar(), budget=10)
    for step in range(1, 6):
        progress.tokens([p for p in range(20) if p != 7 or step <= 3])
        if step == 3:
            progress.finish(7)
    done = progress.bar.n / 10  # in prompts
    assert done == pytest.approx(10.5)  # 19 prompts x 5 tokens + 10 for the finished one, over 10 a prompt
    eta_in_elapsed = (20 - done) / done
    assert eta_in_elapsed == pytest.approx(0.905, abs=1e-3)  # about the 5 steps left of the 5 done
    for _ in range(5):
        progress.tokens([p for p in range(20) if p != 7])
    for p in range(20):
        progress.finish(p)
    assert progress.bar.n == 200
