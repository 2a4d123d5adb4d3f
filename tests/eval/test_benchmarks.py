"""Each loader on the real dev slices (../shared/data) and on the fixtures written in each
benchmark's published schema; malformed rows fail with file:line and the field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from j1.eval.benchmarks import BENCHMARKS, get_benchmark, load_items
from j1.schema import RowError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def load(name, data, **kw):
    return load_items(get_benchmark(name), str(data), **kw)


def test_registry_has_every_benchmark_of_the_issue():
    assert set(BENCHMARKS) == {"judgebench", "rmbench", "rewardbench", "ppe", "followbencheval", "llmbar",
                               "mtbench_human", "pandalm", "autoj", "hh_rlhf", "generic", "rewardbench2"}
    with pytest.raises(ValueError, match="unknown benchmark 'nope'.*judgebench"):
        get_benchmark("nope")


# ---- real dev slices ----------------------------------------------------------------------------

def test_judgebench_dev(shared_data):
    items = load("judgebench", shared_data / "judgebench_dev.jsonl")
    assert len(items) == 100
    # SOURCES.md: stratified mmlu-pro / livebench-math / livebench-reasoning / livecodebench = 62/13/10/15
    assert Counter(it.category for it in items) == {"knowledge": 62, "math": 13, "reasoning": 10, "coding": 15}
    labels = Counter(it.pairs[0][2] for it in items)
    assert labels == {"B": 55, "A": 45}
    assert len({it.id for it in items}) == 100
    # the dev slice holds only the Claude split; the GPT-4o split (the J1 paper's) is held out
    assert len(load("judgebench", shared_data / "judgebench_dev.jsonl", split="claude")) == 100
    with pytest.raises(RowError, match="no judgebench items in split 'gpt-4o'"):
        load("judgebench", shared_data / "judgebench_dev.jsonl", split="gpt-4o")


def test_rmbench_dev(shared_data):
    items = load("rmbench", shared_data / "rmbench_dev.jsonl")
    assert len(items) == 160
    # chat 26, code 46, safety-refuse 57 + safety-response 31 = safety 88
    assert Counter(it.category for it in items) == {"chat": 26, "code": 46, "safety": 88}
    it = items[0]
    assert len(it.pairs) == 9 and it.pairs[1] == ("c0", "r1", "A") and len(it.responses) == 6
    assert len({i.id for i in items}) == 160  # chat and code ids collide; domain-prefixed ids do not


def test_llmbar_dev_and_processed(shared_data):
    items = load("llmbar", shared_data / "llmbar_dev.jsonl")
    assert len(items) == 83
    assert Counter(it.category for it in items)["Adversarial/Neighbor"] == 27
    assert Counter(it.pairs[0][2] for it in items) == {"B": 48, "A": 35}
    processed = load("llmbar", shared_data / "llmbar_processed_dev.jsonl")
    assert Counter(it.category for it in processed) == {"MT-Bench": 42, "FairEval": 13, "LLMEval^2": 40}


def test_pandalm_dev(shared_data):
    items = load("pandalm", shared_data / "pandalm_dev.jsonl")
    assert len(items) == 204
    assert {it.pairs[0][2] for it in items} == {"A", "B", "tie"}
    assert all(len(it.meta["votes"]) == 3 for it in items)


def test_autoj_dev(shared_data):
    items = load("autoj", shared_data / "autoj_pairwise_dev.jsonl")
    assert len(items) == 187
    # label 0 -> A (59), 1 -> B (75), 2 -> tie (53)
    assert Counter(it.pairs[0][2] for it in items) == {"A": 59, "B": 75, "tie": 53}
    assert len(load("autoj", shared_data / "autoj_pairwise_dev.jsonl", ties="drop")) == 187 - 53


def test_hh_rlhf_dev(shared_data):
    items = load("hh_rlhf", shared_data / "hh_rlhf_harmless_dev.jsonl")
    assert len(items) == 200 and {it.category for it in items} == {"harmless"}
    assert all(it.prompt.startswith("Human:") and "\n\nAssistant:" not in it.responses["A"] for it in items)


def test_followbench_dev_is_not_pairwise(shared_data):
    # FollowBench's own files hold instructions, not response pairs: a clear error names the field.
    with pytest.raises(RowError, match=r"followbench_dev.jsonl:1: missing field 'prompt'"):
        load("followbencheval", shared_data / "followbench_dev.jsonl")


def test_limit_takes_first_rows_in_file_order(shared_data):
    path = shared_data / "llmbar_dev.jsonl"
    first = json.loads(path.open().readline())
    items = load("llmbar", path, limit=3)
    assert len(items) == 3 and items[0].prompt == first["input"] and items[0].id == "1"


# ---- fixtures in the published schemas ----------------------------------------------------------

def test_rewardbench_fixture():
    items = load("rewardbench", FIX / "rewardbench.jsonl")
    assert len(items) == 10 and items[0].id == "1000"
    assert {it.category for it in items} >= {"math-prm", "hep-python", "alpacaeval-easy"}
    assert all(it.pairs == [("A", "B", "A")] for it in items)


def test_rewardbench_unknown_subset(tmp_path):
    bad = tmp_path / "rb.jsonl"
    bad.write_text(json.dumps({"prompt": "p", "chosen": "c", "rejected": "r", "subset": "made-up"}) + "\n")
    with pytest.raises(RowError, match=r"rb.jsonl:1: field 'subset' is 'made-up'"):
        load("rewardbench", bad)


def test_ppe_preference_fixture():
    items = load("ppe", FIX / "ppe_preference.jsonl")  # ties dropped by default
    assert [it.pairs[0][2] for it in items] == ["A", "B"]
    kept = load("ppe", FIX / "ppe_preference.jsonl", ties="keep")
    assert [it.pairs[0][2] for it in kept] == ["A", "B", "tie", "tie"]  # "tie (bothbad)" is a tie too


def test_ppe_correctness_fixtures():
    items = load("ppe", FIX / "ppe_math_correctness.jsonl")
    # row 1: pairs (0,1): response_1 right -> A; (3,2) sorted to (2,3): response_3 right -> A;
    # row 2: (0,1): response_2 right -> B
    assert [(it.id, it.pairs[0][2]) for it in items] == [("m1:0-1", "A"), ("m1:2-3", "A"), ("m2:0-1", "B")]
    assert items[1].responses == {"A": "6*7=42", "B": "36"}
    assert {it.category for it in items} == {"math"}
    parquet = load("ppe", FIX / "ppe_mmlu_pro_correctness.parquet")
    assert [it.id for it in parquet] == [it.id for it in items] and parquet[0].category == "mmlu-pro"
    # --limit counts rows: the first row's two conflict pairs
    assert len(load("ppe", FIX / "ppe_math_correctness.jsonl", limit=1)) == 2


def test_judgebench_gpt4o_split_fixture():
    gpt = load("judgebench", FIX / "judgebench.jsonl", split="gpt-4o")
    assert [it.id for it in gpt] == ["jb-0", "jb-1", "jb-2"]
    assert [it.category for it in gpt] == ["knowledge", "math", "coding"]
    assert len(load("judgebench", FIX / "judgebench.jsonl")) == 5
    with pytest.raises(ValueError, match="--split 'gpt4'"):
        load("judgebench", FIX / "judgebench.jsonl", split="gpt4")


def test_a_missing_split_names_those_there_are(tmp_path):
    # A file: its rows are in parts, and a part with no rows names the parts it has.
    rows = [json.loads(x) for x in (FIX / "judgebench.jsonl").read_text().splitlines()]
    gpt = tmp_path / "gpt_only.jsonl"
    gpt.write_text("".join(json.dumps(r) + "\n" for r in rows if r["response_model"].startswith("gpt")))
    with pytest.raises(RowError, match=r"no judgebench items in split 'claude'; its rows are in gpt-4o \(3 rows\)$"):
        load("judgebench", gpt, split="claude")
    with pytest.raises(ValueError, match=r"--split 'test': --data .* is a file; benchmark 'generic' picks nothing"):
        load("generic", FIX / "generic.jsonl", split="test")
    # A dataset folder (as `hf download --repo-type dataset` leaves it) is read by `datasets`, split by split.
    folder = tmp_path / "pairs"
    (folder / "data").mkdir(parents=True)
    for name, n in (("train", 3), ("test", 2)):
        (folder / "data" / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{i}", "prompt": f"p{i}", "chosen": "c", "rejected": "r"}) + "\n"
            for i in range(n)))
    assert [it.id for it in load("generic", folder, split="test")] == ["test0", "test1"]
    assert [it.id for it in load("generic", folder, hf_split="test")] == ["test0", "test1"]  # the old flag
    assert len(load("generic", folder)) == 3  # the benchmark's own split: train
    assert load("generic", folder, split="test")[0].source == f"{folder}[test]:1"
    with pytest.raises(ValueError, match=r"^--split 'dev': --data .*pairs has no such split; it has train, test$"):
        load("generic", folder, split="dev")


def test_one_split_flag_and_the_old_one_hidden(capsys):
    from j1.cli.common import parse
    from j1.cli.main import main
    from j1.eval.spec import EvalSpec

    base = ["--benchmark", "judgebench", "--data", "ScalerLab/JudgeBench", "--out", "o"]
    assert parse(EvalSpec, [*base, "--hf_split", "claude"], prog="j1 eval").hf_split == "claude"
    assert parse(EvalSpec, [*base, "--hf-split", "claude"], prog="j1 eval").hf_split == "claude"
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    assert "--split SPLIT" in text and "hf_split" not in text and "hf-split" not in text


def test_rmbench_fixture_json_array():
    items = load("rmbench", FIX / "rmbench.json")
    assert [it.id for it in items] == ["chat:1", "code:1", "safety-refuse:7"]
    assert [it.category for it in items] == ["chat", "code", "safety"]
    assert items[0].responses["c2"].startswith("**100")


def test_llmbar_fixture_json_array():
    items = load("llmbar", FIX / "llmbar.json")
    assert [it.pairs[0][2] for it in items] == ["A", "B"] and items[0].category == "llmbar"


def test_mtbench_human_fixture():
    items = load("mtbench_human", FIX / "mtbench_human.jsonl")  # tie dropped by default
    assert [it.category for it in items] == ["turn 1", "turn 2"]
    assert items[0].prompt == "Plan a trip to Hawaii." and items[0].responses["B"] == "Go there."
    assert "[Turn 2]\nNow in 3 lines." in items[1].prompt and "Go." in items[1].responses["B"]
    assert items[1].pairs[0][2] == "B"
    assert len(load("mtbench_human", FIX / "mtbench_human.jsonl", ties="keep")) == 3


def test_pandalm_fixture_majority_and_ties():
    items = load("pandalm", FIX / "pandalm.json")
    # votes (1,1,0) -> A; (0,1,2) all differ -> tie; ("2","2","2") -> B
    assert [it.pairs[0][2] for it in items] == ["A", "tie", "B"]
    assert items[0].prompt == "Fix the grammar.\n\nHe go home." and items[1].prompt == "Name a planet."


def test_autoj_fixture():
    items = load("autoj", FIX / "autoj.jsonl")
    assert [it.pairs[0][2] for it in items] == ["A", "B", "tie"]
    assert items[1].responses["B"] == "Arr, matey!"


def test_hh_rlhf_fixture_multi_turn():
    items = load("hh_rlhf", FIX / "hh_rlhf_helpful.jsonl")
    assert items[1].prompt == "Human: Hi\n\nAssistant: Hello!\n\nHuman: Tell me a fact."
    assert items[1].responses == {"A": "Octopuses have three hearts.", "B": "No."}
    assert items[0].category == "helpful"


def test_generic_and_followbencheval_fixtures():
    g = load("generic", FIX / "generic.jsonl")
    assert [it.id for it in g] == ["g1", "g2", "g3"] and g[1].category == "math"
    f = load("followbencheval", FIX / "followbencheval.jsonl")
    assert [it.category for it in f] == ["level 2", "level 1"]


def test_generic_reads_synth_mix_rows(tmp_path):
    # `j1 synth mix` writes each pair twice (AB, BA; label names the better of response_a/b): one item
    # per pair, chosen/rejected recovered from the AB row whichever side the chosen one was shown on.
    rows = [
        {"pair_id": "p1", "order": "AB", "prompt": "q1", "response_a": "good", "response_b": "bad", "label": "A",
         "label_shown": "A", "kind": "chat", "source": "s"},
        {"pair_id": "p1", "order": "BA", "prompt": "q1", "response_a": "good", "response_b": "bad", "label": "A",
         "label_shown": "B", "kind": "chat", "source": "s"},
        {"pair_id": "p2", "order": "AB", "prompt": "q2", "response_a": "wrong", "response_b": "right", "label": "B",
         "label_shown": "B", "kind": "math", "source": "s"},
        {"pair_id": "p2", "order": "BA", "prompt": "q2", "response_a": "wrong", "response_b": "right", "label": "B",
         "label_shown": "A", "kind": "math", "source": "s"},
    ]
    path = tmp_path / "heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = load("generic", path)
    assert [(it.id, it.category, it.prompt) for it in items] == [("p1", "chat", "q1"), ("p2", "math", "q2")]
    assert items[0].responses == {"A": "good", "B": "bad"} and items[1].responses == {"A": "right", "B": "wrong"}
    assert all(it.pairs == [("A", "B", "A")] for it in items)


# ---- malformed rows -----------------------------------------------------------------------------

MIX_ROW = {"pair_id": "x", "order": "AB", "prompt": "p", "response_a": "a", "response_b": "b", "label": "A",
           "label_shown": "A", "kind": "chat", "source": "s"}

@pytest.mark.parametrize("bench,row,message", [
    ("judgebench", {"pair_id": "x", "source": "mmlu-pro-law", "question": "q", "response_model": "gpt-4o",
                    "response_A": "a", "response_B": "b", "label": "A=B"}, "field 'label' is 'A=B'"),
    ("judgebench", {"pair_id": "x", "source": "trivia", "question": "q", "response_model": "gpt-4o",
                    "response_A": "a", "response_B": "b", "label": "A>B"}, "field 'source' is 'trivia'"),
    ("judgebench", {"pair_id": "x", "source": "livecodebench", "question": "q", "response_model": "gpt-4o",
                    "response_A": 3, "response_B": "b", "label": "A>B"}, "field 'response_A' must be str"),
    ("rmbench", {"id": 1, "prompt": "p", "domain": "chat", "chosen": ["a", "b"], "rejected": ["a", "b", "c"]},
     "field 'chosen' must be a list of 3 strings"),
    ("rmbench", {"id": 1, "prompt": "p", "chosen": ["a", "b", "c"], "rejected": ["a", "b", "c"]}, "missing field 'domain'"),
    ("llmbar", {"input": "i", "output_1": "a", "output_2": "b", "label": 3}, "field 'label' is 3"),
    ("pandalm", {"instruction": "i", "response1": "a", "response2": "b", "annotator1": 1, "annotator2": 1},
     "missing field 'annotator3'"),
    ("autoj", {"prompt": "p", "response 1": "a", "response 2": "b", "label": "x"}, "field 'label' is 'x'"),
    ("hh_rlhf", {"chosen": "\n\nHuman: a", "rejected": "\n\nHuman: a\n\nAssistant: b"}, "field 'chosen' has no"),
    ("ppe", {"prompt": "p", "response_1": "a", "response_2": "b", "winner": "model_c"}, "field 'winner' is 'model_c'"),
    ("ppe", {"prompt": "p", "response_1": "a", "response_2": "b", "scores": [True, True],
             "sampled_conflict_pairs": [[0, 1]]}, "not one right and one"),
    ("ppe", {"prompt": "p"}, "not a PPE row"),
    ("mtbench_human", {"winner": "model_a", "turn": 2, "conversation_a": [{"role": "user", "content": "q"}],
                       "conversation_b": []}, "field 'turn' is 2"),
    ("generic", {"prompt": "p", "chosen": "c"}, "missing field 'rejected'"),
    # j1 synth mix rows are checked by the mix's own reader (j1.schema.TrainRow)
    ("generic", {**MIX_ROW, "label": "C"}, "field 'label' must be A or B, got 'C'"),
    ("generic", {**MIX_ROW, "order": "CA"}, "field 'order' must be AB or BA, got 'CA'"),
    ("generic", {k: v for k, v in MIX_ROW.items() if k != "response_b"}, "missing field 'response_b'"),
])
def test_malformed_row_names_file_line_and_field(tmp_path, bench, row, message):
    path = tmp_path / "data.jsonl"
    good = {"generic": {"prompt": "p", "chosen": "c", "rejected": "r"}}.get(bench)
    lines = ([json.dumps(good)] if good else []) + [json.dumps(row)]
    path.write_text("\n".join(lines) + "\n")
    lineno = len(lines)
    with pytest.raises(RowError) as err:
        load(bench, path)
    assert str(err.value).startswith(f"{path}:{lineno}: ") and message in str(err.value)


def test_bad_json_line(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"prompt": "p", "chosen": "c", "rejected": "r"}\n{not json\n')
    with pytest.raises(RowError, match=r"g.jsonl:2: not valid JSON"):
        load("generic", path)


def test_missing_local_file_and_offline_hub(tmp_path, hub_offline):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load("generic", tmp_path / "nope.jsonl")
    # A dataset id without network: a clear error that says what to do (HF_HUB_OFFLINE forces it).
    with pytest.raises(RuntimeError, match="not a local file, and loading it from the Hugging Face Hub"):
        load("rewardbench", "allenai/j1-test-no-such-dataset")
