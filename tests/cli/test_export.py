"""``j1 export verl``: the parquet schema verl's RL dataset reads, both orders of every pair adjacent, the
prompts ``j1 train`` renders, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from j1.cli.main import main

REPO = Path(__file__).resolve().parents[2]
PAIRS = REPO / "src/j1/assets/data/heldout_mismatch.jsonl"  # chosen/rejected pairs that ship with j1

# verl's RL dataset columns (verl 0.6.1 RLHFDataset and its reward managers read these).
SCHEMA = {
    "data_source": pa.string(),
    "prompt": pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
    "ability": pa.string(),
    "reward_model": pa.struct([("style", pa.string()), ("ground_truth", pa.string())]),
    "extra_info": pa.struct([("pair_id", pa.string()), ("order", pa.string()), ("label", pa.string()),
                             ("label_shown", pa.string()), ("format", pa.string()), ("index", pa.int64())]),
}


def _export(tmp_path, *flags, pairs=PAIRS):
    out = tmp_path / "verl"
    rc = main(["export", "verl", "--pairs", str(pairs), "--out", str(out), *flags])
    return rc, out


@pytest.mark.parametrize("fmt, orders", [("pav", ("AB", "BA")), ("pavs", ("AB", "BA")), ("pos", ("A", "B"))])
def test_parquet_schema_and_rows(tmp_path, fmt, orders):
    rc, out = _export(tmp_path, "--format", fmt, "--max_pairs", "5")
    assert rc == 0
    table = pq.read_table(out / "heldout_mismatch.parquet")
    assert {name: table.schema.field(name).type for name in table.column_names} == SCHEMA
    rows = table.to_pylist()
    assert len(rows) == 10
    for k in range(0, 10, 2):  # a pair's two rows are adjacent, in its two orders (slots)
        a, b = rows[k]["extra_info"], rows[k + 1]["extra_info"]
        assert a["pair_id"] == b["pair_id"] and (a["order"], b["order"]) == orders and a["label"] == b["label"]
    for i, row in enumerate(rows):
        info = row["extra_info"]
        assert row["data_source"] == f"j1/{fmt}" and row["ability"] == "judge" and info["format"] == fmt
        assert info["index"] == i and row["reward_model"]["style"] == "rule"
        assert [m["role"] for m in row["prompt"]][-1] == "user"  # verl adds the generation prompt
        if fmt == "pos":
            assert info["label_shown"] is None and row["reward_model"]["ground_truth"] == info["label"]
        else:  # label A shown second in BA is "B" as shown
            shown = info["label"] if info["order"] == "AB" else {"A": "B", "B": "A"}[info["label"]]
            assert info["label_shown"] == shown == row["reward_model"]["ground_truth"]
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "j1 export verl" and list(run["files"].values())[0]["rows"] == 10


def test_prompts_are_what_j1_train_renders(tmp_path):
    from j1.train.data import build_rows, load_pairs

    rc, out = _export(tmp_path, "--format", "multitask", "--template", "compact", "--max_pairs", "3")
    assert rc == 0
    rows = pq.read_table(out / "heldout_mismatch.parquet").to_pylist()
    train_rows, _ = build_rows(load_pairs(PAIRS)[:3], "multitask", template="compact")
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in train_rows]
    assert [(r["extra_info"]["format"], r["extra_info"]["order"]) for r in rows[:4]] == [
        ("pas", "AB"), ("pas", "BA"), ("pos", "A"), ("pos", "B")]


def test_synth_mix_rows_keep_their_placement(tmp_path):
    # A `j1 synth mix` file: the pair's placement (label) is the file's, not re-drawn.
    src = tmp_path / "train.jsonl"
    common = {"pair_id": "x1", "prompt": "2+2?", "response_a": "5", "response_b": "4", "label": "B", "kind": "t",
              "source": "t", "schema_version": 1}
    src.write_text(json.dumps({**common, "order": "AB", "label_shown": "B"}) + "\n"
                   + json.dumps({**common, "order": "BA", "label_shown": "A"}) + "\n", encoding="utf-8")
    rc, out = _export(tmp_path, "--format", "pav", pairs=src)
    assert rc == 0
    infos = [r["extra_info"] for r in pq.read_table(out / "train.parquet").to_pylist()]
    assert [(i["order"], i["label"], i["label_shown"]) for i in infos] == [("AB", "B", "B"), ("BA", "B", "A")]


@pytest.mark.parametrize("flags, message", [
    (["--format", "pairwise"], "--format 'pairwise': choose one of"),
    (["--format", "pav", "--max_pairs", "0"], "--max_pairs 0: must be >= 1"),
])
def test_bad_flags_are_one_line(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exc:
        _export(tmp_path, *flags)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_row_names_file_and_line(tmp_path, capsys):
    src = tmp_path / "pairs.jsonl"
    good = {"id": "a", "prompt": "p", "chosen": "c", "rejected": "r", "kind": "t", "source": "t", "meta": {}}
    src.write_text(json.dumps(good) + "\n{not json\n")
    rc, out = _export(tmp_path, pairs=src)
    err = capsys.readouterr().err
    assert rc == 2 and f"{src}:2" in err and "Traceback" not in err
    assert not list(out.glob("*.parquet"))


def test_unknown_target(capsys):
    assert main(["export", "openrlhf"]) == 2
    assert "unknown export target 'openrlhf'" in capsys.readouterr().err


# ``j1 export judge``: a trained judge (here a random LoRA adapter on the tiny model, as a j1 train
# checkpoint) exported as it is and merged; ``j1 judge --model OUT`` writes the same answers as the source.
PAIR = ["--prompt", "What is 2 + 3?", "--response-a", "2 + 3 = 5.", "--response-b", "2 + 3 = 6."]


@pytest.fixture(scope="module")
def trained_checkpoint(tiny_model, tmp_path_factory):
    """A ``j1 train`` output_dir with run.json and checkpoint-3/: a LoRA adapter with random (non-zero) B
    weights, so merging it changes the model, its manifest, and the training state export leaves behind."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from j1.judging.judges import trained_manifest, write_manifest

    run = tmp_path_factory.mktemp("train-run")
    folder = run / "checkpoint-3"
    torch.manual_seed(0)
    lm = AutoModelForCausalLM.from_pretrained(tiny_model)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(lm, lora).save_pretrained(folder)
    write_manifest(folder, trained_manifest(formulation="pav", template="compact", prefill="<answer>[[",
                                            max_new_tokens=6, base_model=str(tiny_model), judge_dir=folder,
                                            trained_by="j1 train"))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    (folder / "optimizer.pt").write_bytes(b"state")
    (run / "run.json").write_text(json.dumps({"command": "j1 train", "global_step": 5}))
    return folder


def _judge(model, capsys) -> list[tuple[str, str]]:
    capsys.readouterr()
    assert main(["judge", "--model", str(model), *PAIR, "--json"]) == 0
    orders = json.loads(capsys.readouterr().out)["orders"]
    return [(o["verdict"], o["samples"][0]["text"]) for o in orders]


def test_export_judge_gives_the_same_verdicts(trained_checkpoint, tmp_path, capsys, one_torch_thread):
    from transformers import AutoModelForCausalLM

    from j1.judging.judges import read_manifest

    source = _judge(trained_checkpoint, capsys)
    adapter, merged = tmp_path / "adapter", tmp_path / "shipped" / "merged"
    assert main(["export", "judge", str(trained_checkpoint), "--out", str(adapter)]) == 0
    assert main(["export", "judge", str(trained_checkpoint), "--out", str(merged), "--merged"]) == 0
    assert _judge(adapter, capsys) == source
    assert _judge(merged, capsys) == source
    # the adapter keeps its base, named from its new folder; the merged judge is a plain model with its tokenizer
    assert (adapter / "adapter_model.safetensors").is_file() and not (adapter / "optimizer.pt").exists()
    base = (trained_checkpoint / read_manifest(trained_checkpoint).base_model).resolve()
    assert (adapter / read_manifest(adapter).base_model).resolve() == base
    assert not (merged / "adapter_config.json").exists() and (merged / "tokenizer_config.json").is_file()
    AutoModelForCausalLM.from_pretrained(merged)
    for out, kind in ((adapter, "adapter"), (merged, "merged")):
        manifest = read_manifest(out)
        assert (manifest.name, manifest.format, manifest.template, manifest.assistant_prefill) == (
            out.name, "pav", "compact", "<answer>[[")
        run = json.loads((out / "run.json").read_text())
        assert run["command"] == "j1 train"  # the training run's record, plus what was exported
        assert run["exported"] == {"source": str(trained_checkpoint), "checkpoint": "checkpoint-3", "step": 3,
                                   "kind": kind}
    assert read_manifest(merged).base_model is None


def test_export_judge_bad_input_is_one_line(trained_checkpoint, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    for args, message in [
        ([str(trained_checkpoint), "--out", str(tmp_path)], f"--out {tmp_path} exists"),
        ([str(plain), "--out", str(tmp_path / "x")], f"{plain}: no judge.json"),
    ]:
        assert main(["export", "judge", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob(".x.partial-*"))
