"""Property-based tests of every reader of user files (issue 26): whatever a file holds, a reader
returns, or raises ValueError (RowError) whose message names the file (and the line, for a row);
never a TypeError, KeyError, AttributeError or UnicodeDecodeError.

The rows are good rows with fields dropped or replaced by arbitrary JSON, blank or non-JSON lines,
and arbitrary bytes, so the fuzzing reaches the field checks behind the JSON parse.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=int(__import__("os").environ.get("J1_FUZZ_EXAMPLES", 60)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6) | st.sampled_from(["A", "B", "AB", "BA", "tie", "#### 4", "\\boxed{2}"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)

# Values of the wrong type that are truthy, so ``x or default`` does not hide them.
WRONG = st.sampled_from([1, -1, 2.5, True, "x", [1], ["x"], {"a": 1}, [[1]], [{"a": 1}]])
VALUE = (JSON | WRONG).map(copy.deepcopy)  # a fresh copy: mutated() edits values in place

PAIR = {"id": "p1", "prompt": "2+2?", "chosen": "4", "rejected": "5", "kind": "k", "source": "s", "meta": {}}
TRAIN_ROW = {"pair_id": "p1", "order": "AB", "prompt": "2+2?", "response_a": "4", "response_b": "5", "label": "A",
             "label_shown": "A", "kind": "k", "source": "s"}
ROLLOUT = {"pair_id": "p", "order": "AB", "label": "A", "completion": "<think>t</think><answer>[[A]]</answer>"}
JUDGMENT = {"item": "i1", "category": "c", "pairs": [["A", "B", "A"]], "slot": "AB", "texts": ["x"]}
MATH = {"question": "1+1?", "answer": "#### 2"}
CHAT = {"messages": [{"role": "user", "content": "hi"}], "prompt": "p"}
ALPACA = {"instruction": "hi", "instances": [{"input": "y"}]}  # the self-instruct seed tasks' layout


def _paths(value, prefix=()) -> list[tuple]:
    """Every place inside a JSON value: dict keys and list indices, nested ones included."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [p for k, v in items for p in [(*prefix, k), *_paths(v, (*prefix, k))]]


@st.composite
def mutated(draw, good: dict) -> dict:
    """``good`` with one to three places (top-level fields or inside nested ones) set to arbitrary JSON
    or removed, and maybe an extra ``meta``/``schema_version`` field."""
    row = json.loads(json.dumps(good))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(row) + [("meta",), ("schema_version",)]
        *parents, last = draw(st.sampled_from(paths))
        holder = row
        for key in parents:
            holder = holder[key]
        if isinstance(holder, dict) and draw(st.booleans()) and draw(st.booleans()):
            holder.pop(last, None)
        elif isinstance(holder, dict) or last < len(holder):
            holder[last] = draw(VALUE)
    return row


@st.composite
def file_bytes(draw, good: dict) -> bytes:
    """A JSONL file of one to three rows: mostly mutated rows (a reader stops at its first bad line, so
    junk is kept rare enough for the field checks to be reached), sometimes a good row, a JSON value
    that is not a row, a blank, non-JSON or non-UTF-8 line."""
    row = mutated(good).map(json.dumps)
    junk = st.one_of(st.just(json.dumps(good)), JSON.map(json.dumps), st.sampled_from(["", "{", "not json", '{"a": 1']))
    line = st.one_of(row, row, row, junk).map(str.encode) | st.binary(max_size=12).filter(lambda b: b"\n" not in b)
    lines = draw(st.lists(line, min_size=1, max_size=3))
    return b"\n".join(lines) + (b"\n" if draw(st.booleans()) else b"")


def _check(read, path: Path, content: bytes) -> None:
    """``read(path)`` returns, or raises ValueError naming ``path`` (and a line, when it names one)."""
    path.write_bytes(content)
    try:
        read(path)
    except ValueError as exc:
        message = str(exc)
        assert str(path) in message, message
        assert re.search(re.escape(str(path)) + r"(:\d+)?(:|\b)", message), message


def _readers():
    from j1.cli.reward_cmd import read_rollouts
    from j1.data.sources import load_chat_prompts, load_math_problems
    from j1.eval.scoring import read_judgments
    from j1.schema import iter_jsonl, read_pairs, read_train_rows
    from j1.train.data import load_pairs

    return {
        "iter_jsonl": (lambda p: list(iter_jsonl(p)), PAIR),
        "read_pairs": (read_pairs, PAIR),
        "read_train_rows": (read_train_rows, TRAIN_ROW),
        "load_pairs (pair file)": (load_pairs, PAIR),
        "load_pairs (mix rows)": (load_pairs, TRAIN_ROW),
        "read_rollouts": (lambda p: read_rollouts(str(p), "pav"), ROLLOUT),
        "read_judgments": (read_judgments, JUDGMENT),
        "load_math_problems": (lambda p: load_math_problems(str(p)), MATH),
        "load_chat_prompts (messages)": (lambda p: load_chat_prompts(str(p)), CHAT),
        "load_chat_prompts (instruction)": (lambda p: load_chat_prompts(str(p)), ALPACA),
    }


READERS = _readers()


@pytest.mark.parametrize("reader", sorted(READERS))
@FUZZ
@given(data=st.data())
def test_reader_raises_only_value_errors_naming_the_file(reader, data, tmp_path):
    read, good = READERS[reader]
    _check(read, tmp_path / "in.jsonl", data.draw(file_bytes(good)))


def _pair_store(path: Path) -> None:
    from j1.data.store import PairStore

    with PairStore(path, "math"):
        pass


@FUZZ
@given(data=st.data())
def test_a_resumed_pair_file_is_read_the_same_way(data, tmp_path):
    # The synthesis output a rerun resumes from (users move and edit these files too).
    out = tmp_path / "pairs.jsonl"
    content = data.draw(file_bytes({**PAIR, "kind": "math"}))
    for side in tmp_path.glob("pairs.*"):
        side.unlink()
    _check(_pair_store, out, content)


@FUZZ
@given(content=st.one_of(JSON.map(json.dumps).map(str.encode), st.binary(max_size=20)))
def test_json_and_parquet_files(content, tmp_path):
    from j1.schema import read_json_rows

    for suffix in (".json", ".parquet"):
        _check(lambda p: list(read_json_rows(p)), tmp_path / f"in{suffix}", content)


def _bench_rows():
    """(benchmark, a good row of its published schema): the first row of each fixture under tests/fixtures/eval."""
    from j1.eval.benchmarks import BENCHMARKS
    from j1.schema import read_json_rows

    names = {"judgebench": "judgebench.jsonl", "rmbench": "rmbench.json", "rewardbench": "rewardbench.jsonl",
             "ppe": "ppe_preference.jsonl", "followbencheval": "followbencheval.jsonl", "llmbar": "llmbar.json",
             "mtbench_human": "mtbench_human.jsonl", "pandalm": "pandalm.json", "autoj": "autoj.jsonl",
             "hh_rlhf": "hh_rlhf_helpful.jsonl", "generic": "generic.jsonl"}
    rows = {}
    for bench, file in names.items():
        if bench in BENCHMARKS:
            rows[bench] = next(row for _, row in read_json_rows(FIXTURES / "eval" / file))
    rows["ppe (correctness)"] = next(row for _, row in read_json_rows(FIXTURES / "eval" / "ppe_math_correctness.jsonl"))
    return rows


BENCH_ROWS = _bench_rows()


@pytest.mark.parametrize("bench", sorted(BENCH_ROWS))
@FUZZ
@given(data=st.data())
def test_benchmark_loaders(bench, data, tmp_path):
    from j1.eval.benchmarks import get_benchmark, load_items

    benchmark = get_benchmark(bench.split()[0])
    # a file named like the published one: some loaders read the benchmark's part from the name
    path = tmp_path / ("ppe_math_correctness.jsonl" if "correctness" in bench else "data.jsonl")
    _check(lambda p: load_items(benchmark, str(p)), path, data.draw(file_bytes(BENCH_ROWS[bench])))
