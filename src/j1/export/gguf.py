"""A judge as one GGUF file, the format llama.cpp, Ollama and LM Studio load (``j1 export judge --gguf``).

Written with the ``gguf`` package, for Llama-architecture models (``LlamaForCausalLM``: SmolLM2, which j1
embeds, and the Llama 3 family of the paper's judges):

- the weights: F16, or Q8_0 (8-bit blocks of 32 with one scale each; half the size, and its rounding moves
  the verdicts that were close); norms stay F32;
- the query and key projections permuted from transformers' rotary layout (the two halves of each head)
  to GGML's (adjacent pairs), as llama.cpp's own converter does; Llama 3.1 rope scaling as its
  ``rope_freqs`` factors;
- the tokenizer as the judge was trained with it (byte-level BPE: vocabulary, merges, special tokens and
  their types, the pre-tokenizer it uses) and its chat template, so the engine renders the judge's prompt
  as j1 does.

Anything else (another architecture, a tokenizer llama.cpp's BPE cannot reproduce) fails in one line that
names the supported set; llama.cpp's ``convert_hf_to_gguf.py`` on a ``--merged`` export covers the rest.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

ARCHITECTURES = {"LlamaForCausalLM": "llama"}
QTYPES = ("F16", "Q8_0")

# transformers' names of one Llama block's weights -> GGUF's (``blk.N.`` prefix added).
_BLOCK = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight"}
_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")

# llama.cpp's names for the pre-tokenizers j1 can state exactly, by their split pattern: GPT-2's
# (SmolLM2's, with digits kept apart by its vocabulary) and Llama 3's.
_GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")


class UnsupportedModel(ValueError):
    """The model or its tokenizer is outside what j1 writes as GGUF; the message names the way out."""


def tensor_name(hf_name: str) -> str | None:
    """GGUF's name of a transformers Llama weight; None for one GGUF does not store (rotary buffers).

    >>> tensor_name("model.layers.3.self_attn.q_proj.weight"), tensor_name("model.embed_tokens.weight")
    ('blk.3.attn_q.weight', 'token_embd.weight')
    >>> tensor_name("model.layers.0.self_attn.rotary_emb.inv_freq") is None
    True
    """
    if hf_name in _TOP:
        return _TOP[hf_name]
    m = _LAYER.fullmatch(hf_name)
    if m and m.group(2) in _BLOCK:
        return f"blk.{m.group(1)}.{_BLOCK[m.group(2)]}"
    return None


def rotary_to_ggml(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """A query or key projection ``(n_heads * head_dim, hidden)`` with each head's rows reordered from
    transformers' rotary layout (dimension i pairs with i + head_dim/2) to GGML's (2i pairs with 2i+1).

    >>> w = np.arange(8).reshape(8, 1)            # one head of 8 rows: pairs (0,4) (1,5) (2,6) (3,7)
    >>> rotary_to_ggml(w, 1).ravel().tolist()     # GGML keeps each pair adjacent
    [0, 4, 1, 5, 2, 6, 3, 7]
    """
    rows = weight.shape[0]
    head_dim = rows // n_heads
    if head_dim * n_heads != rows or head_dim % 2:
        raise ValueError(f"a projection of {rows} rows does not split into {n_heads} heads of even size")
    return weight.reshape(n_heads, 2, head_dim // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def llama3_rope_factors(rope: Mapping[str, Any], head_dim: int) -> np.ndarray | None:
    """Llama 3.1's rope scaling as the per-frequency divisors llama.cpp reads (``rope_freqs.weight``);
    None for plain rotary embeddings.

    Each rotary frequency keeps its speed above the high-frequency cut, is slowed by ``factor`` below the
    low-frequency one, and is interpolated smoothly in between (Llama 3.1's published rule).

    >>> f = llama3_rope_factors({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
    ...                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    ...                          "original_max_position_embeddings": 8192}, 128)
    >>> len(f), float(f[0]), float(f[-1])         # fastest frequency untouched, slowest slowed 8x
    (64, 1.0, 8.0)
    """
    if rope.get("rope_type") != "llama3":
        return None
    base, factor = float(rope["rope_theta"]), float(rope["factor"])
    low, high = float(rope.get("low_freq_factor", 1.0)), float(rope.get("high_freq_factor", 4.0))
    original = float(rope["original_max_position_embeddings"])
    low_wavelen, high_wavelen = original / low, original / high
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * base ** (i / head_dim)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def pre_tokenizer_name(tokenizer_json: Mapping[str, Any]) -> str:
    """llama.cpp's name (``tokenizer.ggml.pre``) for the pre-tokenizer of a byte-level BPE tokenizer.

    Raises:
        UnsupportedModel: a pre-tokenizer llama.cpp's BPE would split differently.

    >>> pre_tokenizer_name({"pre_tokenizer": {"type": "ByteLevel", "use_regex": True}})
    'gpt-2'
    """
    pre = tokenizer_json.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") for s in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return "gpt-2"
    if kinds == ["Digits", "ByteLevel"] and steps[0].get("individual_digits") and steps[1].get("use_regex", True):
        return "smollm"
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        pattern = (steps[0].get("pattern") or {}).get("Regex")
        if pattern == _LLAMA3_PATTERN:
            return "llama-bpe"
        if pattern == _GPT2_PATTERN:
            return "gpt-2"
    raise UnsupportedModel(f"j1 writes GGUF for byte-level BPE tokenizers split as GPT-2, SmolLM2 or Llama 3 do; "
                           f"this one splits with {kinds}: convert a --merged export with llama.cpp's "
                           "convert_hf_to_gguf.py")


def tokenizer_metadata(tokenizer, vocab_size: int) -> dict[str, Any]:
    """The ``tokenizer.*`` keys of a byte-level BPE tokenizer (a transformers fast tokenizer).

    Returns:
        ``tokens``, ``token_types`` (llama.cpp's: 1 normal, 3 control, 4 user-defined, 5 unused),
        ``merges`` (``"left right"``), ``pre``, ``bos``/``eos``/``unk``/``pad`` ids (None if absent),
        ``add_bos`` and ``chat_template``.
    """
    import gguf

    if not getattr(tokenizer, "is_fast", False):
        raise UnsupportedModel("j1 writes GGUF from a fast (tokenizer.json) tokenizer; this one is slow")
    data = json.loads(tokenizer.backend_tokenizer.to_str())
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        raise UnsupportedModel(f"j1 writes GGUF for BPE tokenizers; this one is {model.get('type')}: convert a "
                               "--merged export with llama.cpp's convert_hf_to_gguf.py")
    pre = pre_tokenizer_name(data)
    by_id = {i: t for t, i in tokenizer.get_vocab().items()}
    added = {i: tok for i, tok in tokenizer.added_tokens_decoder.items()}
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        else:
            tokens.append(by_id[i])
            if i in added:
                types.append(gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED)
            else:
                types.append(gguf.TokenType.NORMAL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    probe = tokenizer("a").input_ids
    ids = {name: tokenizer.convert_tokens_to_ids(tok) if tok is not None else None
           for name, tok in (("bos", tokenizer.bos_token), ("eos", tokenizer.eos_token),
                             ("unk", tokenizer.unk_token), ("pad", tokenizer.pad_token))}
    return {"tokens": tokens, "token_types": [int(t) for t in types], "merges": merges, "pre": pre, **ids,
            "add_bos": bool(probe) and ids["bos"] is not None and probe[0] == ids["bos"],
            "chat_template": tokenizer.chat_template}


def _head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def _rope(config) -> dict[str, Any]:
    rope = dict(getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {})
    rope.setdefault("rope_theta", getattr(config, "rope_theta", 10000.0))
    return rope


def gguf_tensors(state: Mapping[str, Any], config) -> Iterator[tuple[str, np.ndarray]]:
    """``(gguf_name, float32 array)`` for every weight GGUF stores, query and key heads reordered."""
    tied = bool(getattr(config, "tie_word_embeddings", False))
    for name, tensor in state.items():
        target = tensor_name(name)
        if target is None or (tied and target == "output.weight"):
            continue
        array = tensor.detach().to("cpu").float().numpy()
        if target.endswith("attn_q.weight"):
            array = rotary_to_ggml(array, config.num_attention_heads)
        elif target.endswith("attn_k.weight"):
            array = rotary_to_ggml(array, config.num_key_value_heads)
        yield target, array


def check_supported(config) -> str:
    """The GGUF architecture of a transformers config.

    Raises:
        UnsupportedModel: naming the architecture and the supported set.
    """
    archs = list(getattr(config, "architectures", None) or [])
    for arch in archs:
        if arch in ARCHITECTURES:
            if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
                raise UnsupportedModel(f"{arch} with biases: j1 writes GGUF for bias-free Llama models; convert a "
                                       "--merged export with llama.cpp's convert_hf_to_gguf.py")
            rope = _rope(config)
            if rope.get("rope_type", "default") not in ("default", "llama3"):
                raise UnsupportedModel(f"rope scaling {rope.get('rope_type')!r}: j1 writes GGUF for plain and Llama "
                                       "3.1 rotary embeddings; convert a --merged export with llama.cpp's "
                                       "convert_hf_to_gguf.py")
            return ARCHITECTURES[arch]
    raise UnsupportedModel(f"{archs or 'an unnamed architecture'}: j1 writes GGUF for {', '.join(ARCHITECTURES)}; "
                           "convert a --merged export with llama.cpp's convert_hf_to_gguf.py")


def write_gguf(model, tokenizer, out: str | os.PathLike, *, qtype: str = "F16", name: str | None = None,
               extra: Mapping[str, str] | None = None) -> dict:
    """Write ``model`` (a transformers Llama, adapters merged) and its ``tokenizer`` to the GGUF file
    ``out``, through a temp file renamed into place.

    Args:
        qtype: ``F16`` or ``Q8_0`` (about 1 byte a weight; its rounding moves a few close verdicts).
        name: the model's name in the file (``general.name``).
        extra: string metadata to keep in the file (j1 keeps the judge's manifest there).

    Returns:
        ``{"path", "qtype", "tensors", "bytes", "pre_tokenizer"}``.

    Raises:
        UnsupportedModel: an architecture, rope scaling or tokenizer outside what is written here.
    """
    import gguf

    if qtype not in QTYPES:
        raise ValueError(f"--gguf_type {qtype!r}: choose one of {', '.join(QTYPES)}")
    config = model.config
    arch = check_supported(config)
    vocab = tokenizer_metadata(tokenizer, config.vocab_size)
    head_dim = _head_dim(config)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), arch)
    try:
        writer.add_name(name or out.stem)
        writer.add_context_length(config.max_position_embeddings)
        writer.add_embedding_length(config.hidden_size)
        writer.add_block_count(config.num_hidden_layers)
        writer.add_feed_forward_length(config.intermediate_size)
        writer.add_head_count(config.num_attention_heads)
        writer.add_head_count_kv(config.num_key_value_heads)
        writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
        rope = _rope(config)
        writer.add_rope_freq_base(float(rope["rope_theta"]))
        writer.add_rope_dimension_count(head_dim)
        writer.add_vocab_size(config.vocab_size)
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if qtype == "Q8_0" else gguf.LlamaFileType.MOSTLY_F16)
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre(vocab["pre"])
        writer.add_token_list(vocab["tokens"])
        writer.add_token_types(vocab["token_types"])
        writer.add_token_merges(vocab["merges"])
        for key, add in (("bos", writer.add_bos_token_id), ("eos", writer.add_eos_token_id),
                         ("unk", writer.add_unk_token_id), ("pad", writer.add_pad_token_id)):
            if vocab[key] is not None:
                add(vocab[key])
        writer.add_add_bos_token(vocab["add_bos"])
        if vocab["chat_template"]:
            writer.add_chat_template(vocab["chat_template"])
        for key, value in (extra or {}).items():
            writer.add_string(key, value)
        factors = llama3_rope_factors(rope, head_dim)
        count = 0
        if factors is not None:
            writer.add_tensor("rope_freqs.weight", factors)
            count += 1
        for target, array in gguf_tensors(model.state_dict(), config):
            count += 1
            if array.ndim == 1:  # norms: F32, as llama.cpp keeps them
                writer.add_tensor(target, array.astype(np.float32))
            elif qtype == "Q8_0" and array.shape[-1] % 32 == 0:
                quant = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
                writer.add_tensor(target, quant, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            else:
                writer.add_tensor(target, array.astype(np.float16))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise
    log.info("%s: %s GGUF, %d tensors, %.1f MB", out, qtype, count, out.stat().st_size / 1e6)
    return {"path": str(out), "qtype": qtype, "tensors": count, "bytes": out.stat().st_size,
            "pre_tokenizer": vocab["pre"]}
