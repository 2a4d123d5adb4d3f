"""``j1 export judge`` as the tools it is for load it: PEFT from the adapter's own folder (offline, given the
base's local path), transformers from a merged folder in the base's dtype, and the judge card in place of
PEFT's template. The shipped judge j1-135m is exported as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j1.cli.main import main

PAIRS = [("How many legs does a spider have?", "A spider has eight legs.",
          "Boil the pasta for ten minutes, then drain it."),
         ("What is 2 + 2?", "4", "5")]


def _verdicts(model: str) -> list[list[str]]:
    import j1

    with j1.load_judge(model) as judge:
        return [[o.verdict for o in r.orders] for r in judge.compare_many(PAIRS)]


@pytest.fixture(scope="module")
def source_verdicts():
    return _verdicts("j1-135m")


@pytest.fixture(scope="module")
def shipped_adapter(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "j1-135m-adapter"
    assert main(["export", "judge", "j1-135m", "--out", str(out)]) == 0
    return out


def test_the_adapter_names_the_hub_base_and_records_the_exact_weights(shipped_adapter):
    from j1.judging.judges import read_manifest
    from j1.models import EMBEDDED_HUB_ID, GGUF_FILE, embedded_gguf_path, file_sha256

    config = json.loads((shipped_adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == EMBEDDED_HUB_ID  # what PEFT's loaders fetch, not j1's alias
    manifest = read_manifest(shipped_adapter)
    assert (manifest.kind, manifest.base_model, manifest.schema_version) == ("adapter", "smollm2-135m", 3)
    weights = manifest.base_weights
    assert weights["hub_id"] == EMBEDDED_HUB_ID and GGUF_FILE in weights["source"]
    assert weights["sha256"] == file_sha256(embedded_gguf_path())


def test_the_card_is_j1s_own(shipped_adapter):
    card = (shipped_adapter / "README.md").read_text()
    assert card.startswith("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\nlibrary_name: peft\n")
    assert "# j1-135m-adapter" in card and "Format: `pav`" in card
    assert "| generic:src/j1/assets/data/heldout_mismatch.jsonl | 120 | 49.2% [40.8, 58.3]" in card  # its row
    assert "dequantized" in card and "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --enable-lora" in card
    assert "[More Information Needed]" not in card  # PEFT's template is gone
    assert (shipped_adapter / "MODEL_CARD.md").is_file() and "MODEL_CARD.md" in card


def test_with_a_local_base_peft_loads_it_offline_and_it_judges_as_the_source(tmp_path, hub_offline, source_verdicts):
    """--base PATH: adapter_config.json names that folder, so AutoPeftModelForCausalLM loads the export from
    its own folder with no network; j1 reads the export with the source's verdicts."""
    from peft import AutoPeftModelForCausalLM

    from j1.models import embedded_model_dir

    out = tmp_path / "offline"
    base = embedded_model_dir()
    assert main(["export", "judge", "j1-135m", "--out", str(out), "--base", str(base)]) == 0
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == str(base.resolve())
    model = AutoPeftModelForCausalLM.from_pretrained(str(out))
    assert model.peft_config["default"].r == 16
    assert _verdicts(str(out)) == source_verdicts


def test_merged_is_bf16_small_complete_and_judges_as_the_source(tmp_path, source_verdicts):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from j1.judging.judges import read_manifest

    out = tmp_path / "merged"
    assert main(["export", "judge", "j1-135m", "--out", str(out), "--merged"]) == 0
    size = sum(p.stat().st_size for p in out.iterdir())
    assert size < 300e6, size  # bf16: 2 bytes a weight (fp32 was 517 MB)
    assert json.loads((out / "config.json").read_text())["dtype"] == "bfloat16"
    lm = AutoModelForCausalLM.from_pretrained(out)
    assert str(lm.dtype) == "torch.bfloat16"
    assert AutoTokenizer.from_pretrained(out).chat_template  # the engine renders the judge's prompt itself
    generation = GenerationConfig.from_pretrained(out)
    assert (generation.do_sample, generation.max_new_tokens) == (False, 8)  # greedy, the manifest's budget
    assert read_manifest(out).kind == "full" and not (out / "adapter_config.json").exists()
    assert "library_name: transformers" in (out / "README.md").read_text()
    assert _verdicts(str(out)) == source_verdicts


def test_merged_dtype_choice(tmp_path, trained_checkpoint_dir):
    out = tmp_path / "f32"
    assert main(["export", "judge", str(trained_checkpoint_dir), "--out", str(out), "--merged", "--dtype",
                 "float32"]) == 0
    assert json.loads((out / "config.json").read_text())["dtype"] == "float32"


@pytest.fixture
def trained_checkpoint_dir(tiny_model, tmp_path):
    """A j1 train checkpoint: a LoRA adapter (random, non-zero) on the tiny model, with its manifest."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from j1.judging.judges import trained_manifest, write_manifest

    folder = tmp_path / "run" / "checkpoint-2"
    torch.manual_seed(0)
    lm = AutoModelForCausalLM.from_pretrained(tiny_model)
    get_peft_model(lm, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                  init_lora_weights=False)).save_pretrained(folder)
    write_manifest(folder, trained_manifest(formulation="pav", template="compact", prefill="<answer>[[",
                                            max_new_tokens=6, base_model=str(tiny_model), judge_dir=folder,
                                            trained_by="j1 train"))
    return folder


def test_an_adapter_on_a_local_base_loads_in_peft_by_its_own_config(trained_checkpoint_dir, tmp_path, hub_offline):
    """A base with no hub id is named by its absolute path: the export loads anywhere that path exists."""
    import torch
    from peft import AutoPeftModelForCausalLM

    from j1.judging.judges import load_model

    out = tmp_path / "adapter"
    assert main(["export", "judge", str(trained_checkpoint_dir), "--out", str(out)]) == 0
    named = json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert Path(named).is_absolute() and Path(named).is_dir()
    peft_lm = AutoPeftModelForCausalLM.from_pretrained(str(out)).merge_and_unload().eval()
    j1_lm, _, _ = load_model(str(out))
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.allclose(peft_lm(ids).logits, j1_lm(ids).logits, atol=1e-5)


def test_gguf_alone_needs_no_out(trained_checkpoint_dir, tmp_path, capsys):
    from j1.judging.judges import read_gguf_manifest

    target = tmp_path / "judge.gguf"
    assert main(["export", "judge", str(trained_checkpoint_dir), "--gguf", str(target), "--gguf_type", "F16"]) == 0
    assert "F16 GGUF" in capsys.readouterr().out
    manifest = read_gguf_manifest(target)
    assert (manifest.format, manifest.template, manifest.assistant_prefill, manifest.kind) == (
        "pav", "compact", "<answer>[[", "full")


@pytest.mark.parametrize("args, message", [
    (["j1-135m"], "needs the judge and --out DIR or --gguf FILE"),
    (["j1-135m", "--gguf", "x.bin"], "name a .gguf file"),
    (["j1-135m", "--out", "x", "--dtype", "int8"], "--dtype 'int8'"),
    (["j1-135m", "--gguf", "x.gguf", "--gguf_type", "Q4_0"], "--gguf_type 'Q4_0'"),
])
def test_bad_export_flags_are_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["export", "judge", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
