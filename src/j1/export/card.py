"""The judge card (README.md) an exported judge carries, in place of PEFT's empty template: what the judge
is, how it is asked, how it was trained, what it measured, what its base weights are and how to serve it.
Built from the judge's manifest and its training run's run.json only (pure: text in, text out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from j1.eval.cells import interval, pct

# The training settings a reader asks about first, from run.json's config (``j1`` and ``grpo`` sections).
_RECIPE_KEYS = ("formulation", "template", "consistency", "advantage_groups", "loss_span", "lora_last_layers",
                "init_adapter", "train_file")
_GRPO_KEYS = ("learning_rate", "per_device_train_batch_size", "num_generations", "max_completion_length", "beta",
              "max_steps", "num_train_epochs")


def _interval(ci: Any) -> str:
    text = interval(ci, "")
    return f" {text}" if text else ""


def metrics_table(metrics: Mapping[str, Mapping[str, Any]]) -> str:
    """The manifest's measured rows as a markdown table (consistent accuracy first, with its interval).

    >>> print(metrics_table({"generic:pairs.jsonl": {"n": 40, "consistent_accuracy": 0.5,
    ...     "consistent_accuracy_ci": [0.35, 0.65], "accuracy": 0.7, "flip_rate": 0.4, "invalid_rate": 0.0}}))
    | evaluation set | pairs | consistent accuracy [95% CI] | accuracy | flip rate | invalid |
    |---|---:|---:|---:|---:|---:|
    | generic:pairs.jsonl | 40 | 50.0% [35.0, 65.0] | 70.0% | 40.0% | 0.0% |
    """
    if not metrics:
        return "No evaluation recorded yet (`j1 eval --model THIS_FOLDER ...` adds its row to judge.json)."
    rows = ["| evaluation set | pairs | consistent accuracy [95% CI] | accuracy | flip rate | invalid |",
            "|---|---:|---:|---:|---:|---:|"]
    for key, m in metrics.items():
        rows.append(f"| {key} | {m.get('n', '–')} | {pct(m.get('consistent_accuracy'), '%')}"
                    f"{_interval(m.get('consistent_accuracy_ci'))} | {pct(m.get('accuracy'), '%')} | "
                    f"{pct(m.get('flip_rate'), '%')} | {pct(m.get('invalid_rate'), '%')} |")
    return "\n".join(rows)


def _training(run: Mapping[str, Any]) -> list[str]:
    config = run.get("config") or {}
    j1cfg, grpo = config.get("j1") or {}, config.get("grpo") or {}
    lines = []
    if run.get("command"):
        lines.append(f"- Command: `{run['command']}`" + (f" (`{' '.join(run['argv'][1:])}`)"
                                                         if isinstance(run.get("argv"), list) else ""))
    step = run.get("global_step") or (run.get("exported") or {}).get("step")
    if step is not None:
        lines.append(f"- Steps: {step}")
    settings = [f"{k}={j1cfg[k]}" for k in _RECIPE_KEYS if j1cfg.get(k) is not None]
    settings += [f"{k}={grpo[k]}" for k in _GRPO_KEYS if grpo.get(k) is not None]
    if settings:
        lines.append("- Settings: " + ", ".join(f"`{s}`" for s in settings))
    revision = (run.get("git") or {}).get("revision") if isinstance(run.get("git"), dict) else None
    if revision:
        lines.append(f"- j1 revision: `{revision}`")
    return lines or ["- No training record (run.json) came with this judge."]


def judge_card(manifest, run: Mapping[str, Any], *, kind: str, base_hub_id: str | None,
               gguf_file: str | None = None, model_card: str | None = None) -> str:
    """The card of an exported judge.

    Args:
        manifest: its ``j1.judging.judges.Manifest`` (as exported).
        run: its training run's run.json (may be empty).
        kind: ``adapter``, ``merged`` or ``full``.
        base_hub_id: the base's hub id (an adapter's ``base_model`` in the front matter), None if local.
        gguf_file: the GGUF file written beside it, if any.
        model_card: the file name of a longer card shipped with the judge (``MODEL_CARD.md``), if any.
    """
    name = manifest.name or "judge"
    front = ["---", "library_name: " + ("peft" if kind == "adapter" else "transformers"),
             "pipeline_tag: text-generation", "tags: [j1, llm-as-a-judge, reward-model]"]
    if base_hub_id:
        front.insert(1, f"base_model: {base_hub_id}")
    front.append("---")
    fmt = manifest.format
    asked = [f"- Format: `{fmt}`; wording: `{manifest.template}`; greedy unless sampled "
             f"(temperature {manifest.temperature}, {manifest.samples} sample(s)); at most {manifest.max_new_tokens} "
             "new tokens.",
             "- Every pair is judged in both orders; a verdict counts only when both orders agree."]
    if manifest.assistant_prefill:
        asked.append(f"- Every answer starts with the prefill `{manifest.assistant_prefill!r}`: the judge continues "
                     "it, so an engine must continue a final assistant message (j1 sends the rendered prompt to "
                     "`/v1/completions` when it has the judge's tokenizer).")
    inputs = getattr(manifest, "inputs", None) or []
    asked.append("- Trained to read besides the pair: " + (", ".join(f"`{i}`" for i in inputs) + " (j1 judge "
                 "--criteria/--reference, fenced in its prompt)." if inputs else "nothing (criteria or a reference "
                 "answer may be given; it was not trained to use them)."))
    weights = manifest.base_weights or {}
    if kind == "adapter":
        base_lines = [f"A LoRA adapter on `{manifest.base_model}`"
                      + (f" (hub id `{base_hub_id}`)" if base_hub_id else "") + "."]
    else:
        base_lines = ["Full weights" + (" (the adapter folded into its base)" if kind == "merged" else "") + "."]
    if weights.get("source"):
        base_lines.append(f"It was trained and measured on {weights['source']}"
                          + (f" (sha256 `{weights['sha256']}`)" if weights.get("sha256") else "")
                          + ". Loaded on other weights of the same model (the hub's), it judges close to, but not "
                          "exactly as, the rows below.")
    folder = "THIS_FOLDER"
    serve = ["```bash",
             f"j1 judge --model {folder} --prompt '2+2?' --response-a 4 --response-b 5   # locally, with j1"]
    if kind == "adapter":
        serve += [f"vllm serve {base_hub_id or 'BASE'} --enable-lora --lora-modules {name}={folder}",
                  "# or: j1 export judge THIS_FOLDER --merged --out MERGED, then vllm serve MERGED "
                  f"--served-model-name {name}"]
    else:
        serve.append(f"vllm serve {folder} --served-model-name {name}")
    if gguf_file:
        serve.append(f"python -m llama_cpp.server --model {gguf_file} --model_alias {name}   # llama.cpp")
    serve += [f"j1 eval --base-url http://127.0.0.1:8000/v1 --judge {folder} --benchmark rewardbench ...",
              "```", "`--judge` reads this folder's judge.json (format, wording, prefill, budgets) and asks the "
              f"engine's model `{name}`; docs/serving.md in j1 has every engine's commands."]
    parts = [
        "\n".join(front), f"# {name}",
        "A thinking LLM judge made with j1, trained the J1 way (verifiable "
        "preference pairs, position-agnostic GRPO). It reads a request and two responses and names the better one"
        + (" (pointwise: scores one response)." if fmt == "pos" else "."),
        "## How it is asked (judge.json)", "\n".join(asked),
        "## Weights", "\n".join(base_lines),
        "## How it was trained", (f"{manifest.trained_by}.\n\n" if manifest.trained_by else "")
        + "\n".join(_training(run)),
        "## Measured", metrics_table(manifest.metrics),
        "## Serve it", "\n".join(serve),
    ]
    if model_card:
        parts.append(f"The longer card of this judge: [{model_card}]({model_card}).")
    return "\n\n".join(parts) + "\n"
