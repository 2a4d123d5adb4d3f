"""``j1 train --dry_run``: check a recipe on the CPU before it meets a GPU, without generating.

It parses the recipe, loads and renders the training data, checks the pair geometry at the recipe's
world size, and reports what one optimizer step holds (pairs, prompts, rollouts) and a memory estimate
per GPU. No weights are loaded and nothing is downloaded: the parameter count comes from the model's
``config.json`` when it is local (a folder, the embedded model, or a hub id already in the local
Hugging Face cache) and otherwise from ``KNOWN_MODELS``, the published configs of the paper's models;
it is counted on the meta device (shapes only).

The memory estimate per training process (bf16 weights, AdamW with fp32 master weights and moments,
DeepSpeed's usual accounting; ZeRO-1 shards the optimizer, ZeRO-2 also the gradients, ZeRO-3 also the
weights, over the world size):

- weights 2N, gradients 2N, optimizer 12N bytes; the reference model 2N when ``beta > 0``;
- vLLM colocated: the share ``vllm_gpu_memory_utilization`` of the GPU (``GPU_MEMORY_GIB``), which must
  hold its weights, 2N / tensor-parallel size, and leave room for its KV cache;
- activations with gradient checkpointing: every decoder layer's input kept, layers x rows x sequence
  x hidden x 2 bytes; the logits of one micro-batch, rows x completion length x vocabulary x 2 bytes.
  Without checkpointing, activations are not estimated (CPU recipes).

A second peak comes between steps, with no activations live: under ZeRO-3, TRL (1.16) gathers weights
whole to hand them to the generator (``gather_gib``). With LoRA it gathers every parameter at once to
merge the adapter before the vLLM weight sync (2N bytes on every training GPU: 131 GiB for a 70B model,
more than an 80 GB GPU holds); a full fine-tune syncs one parameter at a time; without vLLM,
``ds3_gather_for_generation`` gathers the whole model for ``generate``. The report gives both peaks
and flags either above ``GPU_MEMORY_GIB``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trl import GRPOConfig, ModelConfig

    from j1.train.spec import TrainSpec

log = logging.getLogger(__name__)

GIB = 1024**3
GPU_MEMORY_GIB = 80  # the paper's GPUs (A100/H100 80 GB): a total above this is flagged

# Published configs (config.json on the Hub) of the models the GPU recipes train; only shapes.
KNOWN_MODELS: dict[str, dict] = {
    "meta-llama/Llama-3.1-8B-Instruct": dict(
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False,
        max_position_embeddings=131072),
    "meta-llama/Llama-3.3-70B-Instruct": dict(
        model_type="llama", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
        num_attention_heads=64, num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False,
        max_position_embeddings=131072),
    "Qwen/Qwen3-32B": dict(
        model_type="qwen3", hidden_size=5120, intermediate_size=25600, num_hidden_layers=64,
        num_attention_heads=64, num_key_value_heads=8, head_dim=128, vocab_size=151936,
        tie_word_embeddings=False, max_position_embeddings=40960),
}


@dataclass(frozen=True)
class ModelShape:
    name: str
    parameters: int
    vocab_size: int
    hidden_size: int
    layers: int
    source: str  # where the shape came from
    context: int | None = None  # the model's own context (max_position_embeddings)


def model_shape(name: str | None) -> ModelShape | None:
    """The parameter count and shapes of ``name`` from local files or ``KNOWN_MODELS``; None when neither
    has it. Never downloads: a hub id is looked up in the local cache only."""
    from transformers import AutoConfig

    from j1.models import EMBEDDED_NAME, display_name, resolve_model

    shown = display_name(name)
    config, source = None, None
    if name is None or name in {EMBEDDED_NAME, "embedded", "default"}:
        config, source = AutoConfig.from_pretrained(resolve_model(None)), "the embedded model's config"
    elif Path(name, "config.json").is_file():
        config, source = AutoConfig.from_pretrained(name), f"{name}/config.json"
    elif name in KNOWN_MODELS:
        spec = dict(KNOWN_MODELS[name])
        config, source = AutoConfig.for_model(spec.pop("model_type"), **spec), "j1's table of known models"
    else:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            config, source = AutoConfig.from_pretrained(str(Path(cached).parent)), "the local Hugging Face cache"
    if config is None:
        return None
    from j1.judging.limits import config_context

    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return ModelShape(shown, count_parameters(config), text.vocab_size, text.hidden_size, text.num_hidden_layers,
                      source, config_context(config))


def count_parameters(config) -> int:
    """Parameters of a causal LM built from ``config`` on the meta device (no memory, no weights).

    Embeddings 10 x 4 (tied with the output) = 40, attention q/k/v/o 4 x 4 each = 64, MLP gate/up/down
    4 x 8 each = 96, three RMSNorms of 4 = 12: 212.

    >>> from transformers import LlamaConfig
    >>> count_parameters(LlamaConfig(vocab_size=10, hidden_size=4, intermediate_size=8, num_hidden_layers=1,
    ...                              num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True))
    212
    """
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    # Tied embeddings are one tensor: count each parameter once.
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def memory_estimate(shape: ModelShape, *, world_size: int, zero_stage: int, beta: float, use_peft: bool,
                    vllm_mode: str | None, vllm_tp: int, vllm_share: float, rows: int, sequence: int,
                    completion: int, checkpointing: bool) -> dict[str, float | None]:
    """GiB per training GPU by part (see the module docstring); None where not estimated.

    >>> shape = ModelShape("m", 8 * 1024**3, 1024, 64, 2, "test")   # 8 Gi parameters
    >>> est = memory_estimate(shape, world_size=8, zero_stage=3, beta=0.0, use_peft=False, vllm_mode=None,
    ...                       vllm_tp=1, vllm_share=0.0, rows=1, sequence=1024, completion=1024, checkpointing=True)
    >>> est["weights"], est["gradients"], est["optimizer"]   # 2, 2 and 12 bytes x 8 Gi / 8 GPUs
    (2.0, 2.0, 12.0)
    """
    n = shape.parameters
    shard = {"weights": 3, "gradients": 2, "optimizer": 1}
    trained = 0 if use_peft else n  # LoRA: the adapter's gradients and optimizer state are small
    parts: dict[str, float | None] = {}
    for name, count, per in (("weights", n, 2), ("gradients", trained, 2), ("optimizer", trained, 12)):
        divide = world_size if zero_stage >= shard[name] else 1
        parts[name] = count * per / divide / GIB
    parts["reference model"] = (n * 2 / (world_size if zero_stage >= 3 else 1) / GIB) if beta > 0 else 0.0
    parts["vLLM (colocated)"] = vllm_share * GPU_MEMORY_GIB if vllm_mode == "colocate" else 0.0
    vllm_weights = n * 2 / vllm_tp / GIB
    if vllm_mode == "colocate" and vllm_weights > 0.9 * parts["vLLM (colocated)"]:
        raise ValueError(f"vLLM's weights take {vllm_weights:.1f} GiB per GPU, more than 90% of its "
                         f"vllm_gpu_memory_utilization share ({parts['vLLM (colocated)']:.1f} GiB of {GPU_MEMORY_GIB}): "
                         "raise vllm_tensor_parallel_size or vllm_gpu_memory_utilization")
    if checkpointing:
        parts["activations (checkpointed)"] = shape.layers * rows * sequence * shape.hidden_size * 2 / GIB
    else:
        parts["activations (checkpointed)"] = None
    parts["logits of a micro-batch"] = rows * completion * shape.vocab_size * 2 / GIB
    return parts


def gather_gib(shape: ModelShape, *, zero_stage: int, use_peft: bool, vllm_mode: str | None,
               gather_for_generation: bool) -> tuple[float, str | None]:
    """GiB that ZeRO-3 gathers whole on every training GPU between steps, and why (see the module
    docstring); (0.0, None) where weights are not sharded or nothing is gathered.

    >>> shape = ModelShape("m", 8 * 1024**3, 1024, 1024, 2, "test")   # 8 Gi parameters, 1 Mi embedding
    >>> gather_gib(shape, zero_stage=3, use_peft=True, vllm_mode="colocate", gather_for_generation=True)[0]
    16.0
    >>> gather_gib(shape, zero_stage=3, use_peft=False, vllm_mode="server", gather_for_generation=True)[0]
    0.001953125
    >>> gather_gib(shape, zero_stage=2, use_peft=True, vllm_mode="colocate", gather_for_generation=True)
    (0.0, None)
    """
    if zero_stage < 3:
        return 0.0, None
    whole = shape.parameters * 2 / GIB
    if vllm_mode and use_peft:
        return whole, "the LoRA weight sync gathers every ZeRO-3 parameter at once to merge the adapter"
    if vllm_mode:  # one parameter at a time: the largest is the embedding (or the LM head)
        return shape.vocab_size * shape.hidden_size * 2 / GIB, "the weight sync gathers one parameter at a time"
    if gather_for_generation:
        return whole, "ds3_gather_for_generation gathers the whole model for generate"
    return 0.0, None


@dataclass(frozen=True)
class StepGeometry:
    """What one optimizer step and one generation batch hold, at a world size."""

    world_size: int
    rows_per_micro_batch: int
    accumulation: int
    steps_per_generation: int
    num_generations: int

    @property
    def rollouts_per_step(self) -> int:
        return self.rows_per_micro_batch * self.world_size * self.accumulation

    @property
    def prompts_per_step(self) -> float:
        return self.rollouts_per_step / self.num_generations

    @property
    def rollouts_per_generation(self) -> int:
        return self.rows_per_micro_batch * self.world_size * self.steps_per_generation

    @property
    def pairs_per_generation(self) -> int:
        return self.rollouts_per_generation // (2 * self.num_generations)

    def check(self) -> None:
        """The pair sampler's geometry (``j1.train.sampler.check_pair_geometry``) and TRL's divisibility.

        >>> StepGeometry(8, 10, 32, 32, 5).prompts_per_step
        512.0
        """
        from j1.train.sampler import check_pair_geometry

        check_pair_geometry(self.rows_per_micro_batch, self.steps_per_generation, self.num_generations)
        if self.rollouts_per_step % self.num_generations:
            raise ValueError(f"{self.rollouts_per_step} rollouts per optimizer step are not whole groups of "
                             f"num_generations {self.num_generations}")


def dry_run(j1cfg: TrainSpec, grpo: GRPOConfig, model_args: ModelConfig) -> dict:
    """Check a parsed ``j1 train`` recipe without a model or a GPU; the report as a dict.

    Raises:
        ValueError: the pair geometry fails at the world size, the data cannot fill one generation
            batch, or vLLM's tensor parallelism does not divide the world size.
    """
    from j1.train.data import build_rows, engine_context, load_pairs, prompt_cap

    world = j1cfg.world_size or 1
    geometry = StepGeometry(world, grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps,
                            grpo.steps_per_generation, grpo.num_generations)
    geometry.check()
    vllm_mode = grpo.vllm_mode if grpo.use_vllm else None
    vllm_tp = grpo.vllm_tensor_parallel_size if vllm_mode == "colocate" else 1
    if vllm_mode == "colocate" and world % vllm_tp:
        raise ValueError(f"vllm_tensor_parallel_size {vllm_tp} does not divide world_size {world}")

    pairs = load_pairs(j1cfg.train_file, pair_seed=j1cfg.pair_seed)
    if j1cfg.max_pairs is not None:
        pairs = pairs[: j1cfg.max_pairs]
    shape = model_shape(model_args.model_name_or_path)
    tokenizer, tokenizer_note = _tokenizer(model_args.model_name_or_path)
    # The same prompt cap as j1 train (issue 52), on the real file: what a run would drop, and the longest.
    context = engine_context(grpo.use_vllm, grpo.vllm_max_model_length, shape.context if shape else None)
    cap, cap_from = prompt_cap(j1cfg.max_prompt_tokens, *context, grpo.max_completion_length)
    rows, counts = build_rows(pairs, j1cfg.formulation, tokenizer=tokenizer, max_prompt_tokens=cap, cap_from=cap_from,
                              template=j1cfg.template, prefill=j1cfg.assistant_prefill, inputs=j1cfg.judge_inputs)
    units = counts["units"]
    if units < geometry.pairs_per_generation:
        raise ValueError(f"{j1cfg.train_file}: {units} pair units after filtering, but one generation batch at "
                         f"world_size {world} needs {geometry.pairs_per_generation}: the epoch would be empty")
    longest_prompt = counts.get("longest_prompt_tokens") or _longest_prompt(tokenizer, rows)
    generations = units // geometry.pairs_per_generation
    steps_per_epoch = generations * geometry.steps_per_generation * grpo.num_iterations // geometry.accumulation
    checkpointing = bool(getattr(grpo, "gradient_checkpointing", False) or getattr(grpo, "activation_checkpointing",
                                                                                   False))
    memory, gather = None, (0.0, None)
    if shape is not None:
        gather = gather_gib(shape, zero_stage=j1cfg.zero_stage or 0, use_peft=bool(model_args.use_peft),
                            vllm_mode=vllm_mode, gather_for_generation=grpo.ds3_gather_for_generation)
        memory = memory_estimate(
            shape, world_size=world, zero_stage=j1cfg.zero_stage or 0, beta=grpo.beta, use_peft=model_args.use_peft,
            vllm_mode=vllm_mode, vllm_tp=vllm_tp, vllm_share=grpo.vllm_gpu_memory_utilization,
            rows=geometry.rows_per_micro_batch, sequence=longest_prompt + grpo.max_completion_length,
            completion=grpo.max_completion_length, checkpointing=checkpointing)
    return {
        "model": shape.name if shape else str(model_args.model_name_or_path),
        "parameters": shape.parameters if shape else None,
        "shape_source": shape.source if shape else None,
        "train_file": j1cfg.train_file, **counts, "rows": len(rows),
        "longest_prompt_tokens": longest_prompt, "tokenizer": tokenizer_note,
        "world_size": world, "world_size_source": "world_size" if j1cfg.world_size else "unset: 1",
        "zero_stage": j1cfg.zero_stage or 0,
        "rows_per_micro_batch": geometry.rows_per_micro_batch,
        "prompts_per_micro_batch": geometry.rows_per_micro_batch / geometry.num_generations,
        "rows_per_generation": geometry.rows_per_micro_batch * geometry.steps_per_generation,
        "pairs_per_process_generation": geometry.rows_per_micro_batch * geometry.steps_per_generation
        / (2 * geometry.num_generations),
        "gradient_accumulation_steps": geometry.accumulation, "num_generations": geometry.num_generations,
        "pairs_per_step": geometry.prompts_per_step / 2, "prompts_per_step": geometry.prompts_per_step,
        "rollouts_per_step": geometry.rollouts_per_step,
        "pairs_per_generation_batch": geometry.pairs_per_generation,
        "optimizer_steps_per_epoch": steps_per_epoch,
        "vllm": vllm_mode or "off", "vllm_gpu_memory_utilization": grpo.vllm_gpu_memory_utilization
        if vllm_mode == "colocate" else None,
        "memory_gib": memory, "gather_gib": gather[0], "gather_why": gather[1],
    }


def _tokenizer(name: str | None):
    """The recipe's tokenizer when it is local, else the embedded model's as a stand-in (prompt lengths
    then differ by the two vocabularies; the note says so)."""
    from j1.models import load_tokenizer, resolve_model

    local = name is None or Path(name, "tokenizer_config.json").is_file() or name in {"smollm2-135m", "embedded"}
    if not local:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "tokenizer_config.json")
        if isinstance(cached, str):
            return load_tokenizer(str(Path(cached).parent)), "the recipe's (local cache)"
        return load_tokenizer(resolve_model(None)), "the embedded model's (stand-in: the recipe's is not local)"
    return load_tokenizer(resolve_model(name)), "the recipe's"


def _longest_prompt(tokenizer, rows: list[dict]) -> int:
    from j1.judging.chat import render

    texts = [render(tokenizer, r["prompt"]) for r in rows]
    return max(len(ids) for ids in tokenizer(texts, add_special_tokens=False).input_ids)


def format_report(report: dict, recipe: str = "") -> str:
    """The dry run as the lines ``j1 train --dry_run`` prints."""
    r = report
    params = f"{r['parameters'] / 1e9:.2f} B parameters ({r['shape_source']})" if r["parameters"] else \
        "parameter count unknown (not local, not in j1's table): no memory estimate"
    lines = [
        f"j1 train --dry_run {recipe}".rstrip() + ": OK",
        f"  model                 {r['model']}: {params}",
        f"  data                  {r['train_file']}: {r['pairs']} pairs -> {r['units']} units, {r['rows']} prompts; "
        f"longest prompt {r['longest_prompt_tokens']} tokens with {r['tokenizer']} tokenizer",
        f"  prompt limit          {_limit_line(r)}",
        f"  world size            {r['world_size']} training processes ({r['world_size_source']}), ZeRO-{r['zero_stage']}"
        f", vLLM {r['vllm']}",
        f"  per process           {r['rows_per_micro_batch']} rows per micro-batch ({r['prompts_per_micro_batch']:g} "
        f"prompts x {r['num_generations']} rollouts); a generation batch of {r['rows_per_generation']} rows = "
        f"{r['pairs_per_process_generation']:g} whole pairs in both orders: pair geometry OK",
        f"  per optimizer step    {r['pairs_per_step']:g} pairs, {r['prompts_per_step']:g} prompts, "
        f"{r['rollouts_per_step']} rollouts ({r['world_size']} processes x {r['rows_per_micro_batch']} rows x "
        f"{r['gradient_accumulation_steps']} accumulation steps)",
        f"  per epoch             {r['optimizer_steps_per_epoch']} optimizer steps "
        f"({r['pairs_per_generation_batch']} pairs per generation batch)",
    ]
    memory = r["memory_gib"]
    if memory:
        known = {k: v for k, v in memory.items() if v}  # parts a recipe does not have (0) are not listed
        total = sum(known.values())
        parts = ", ".join(f"{k} {v:.1f}" for k, v in known.items())
        extra = f" (vLLM's share {r['vllm_gpu_memory_utilization']:.0%} of {GPU_MEMORY_GIB} GiB included)" \
            if r["vllm_gpu_memory_utilization"] else ""
        skipped = [k for k, v in memory.items() if v is None]
        note = f"; not estimated: {', '.join(skipped)}" if skipped else ""
        flag = f"  (above {GPU_MEMORY_GIB} GiB: lower per_device_train_batch_size or raise world_size)" \
            if total > GPU_MEMORY_GIB else ""
        lines.append(f"  memory per GPU (est.) {total:.1f} GiB{extra}: {parts}{note}{flag}")
        if r["gather_gib"]:
            resident = sum(v or 0.0 for k, v in memory.items() if k in RESIDENT)
            peak = resident + r["gather_gib"]
            flag = (f"  (above {GPU_MEMORY_GIB} GiB: this runs out of memory; train the full model (use_peft "
                    "false, gathered one parameter at a time) or a smaller one)" if peak > GPU_MEMORY_GIB else "")
            lines.append(f"  memory at weight sync {peak:.1f} GiB: {resident:.1f} resident + {r['gather_gib']:.1f} "
                         f"gathered ({r['gather_why']}){flag}")
    return "\n".join(lines) + "\n"


# What stays on the GPU between steps (activations and logits live only inside a micro-step).
RESIDENT = ("weights", "gradients", "optimizer", "reference model", "vLLM (colocated)")


def _limit_line(r: dict) -> str:
    """The prompt-limit line of the report: the cap, what sets it, and what it drops."""
    if r.get("prompt_token_limit") is None:
        return "none known (no max_prompt_tokens, no vllm_max_model_length, the model's context unknown)"
    head = f"{r['prompt_token_limit']} tokens ({r['prompt_limit_from']})"
    worst = r.get("longest_dropped")
    if not worst:
        return f"{head}: every prompt fits"
    return (f"{head}: {r['dropped_long_units']} of {r['dropped_long_units'] + r['units']} units over it, dropped; "
            f"the longest, pair {worst['pair_id']} in order {worst['order']}, has {worst['tokens']} tokens")


def check_launch_world_size(recipe_world_size: int | None, launched: int | None) -> None:
    """Stop a launch whose process count differs from the recipe's (its prompts per step would change).

    >>> check_launch_world_size(8, 8); check_launch_world_size(None, 3); check_launch_world_size(8, None)
    >>> check_launch_world_size(8, 4)
    Traceback (most recent call last):
    ...
    ValueError: the recipe is written for world_size 8 but runs on 4 processes; launch 8 (accelerate --num_processes) or set --world_size 4 (prompts per step change with it)
    """
    if recipe_world_size is None or launched is None or launched == recipe_world_size:
        return
    raise ValueError(f"the recipe is written for world_size {recipe_world_size} but runs on {launched} processes; "
                     f"launch {recipe_world_size} (accelerate --num_processes) or set --world_size {launched} "
                     "(prompts per step change with it)")

