"""The loop closed: TRL's GRPOTrainer trains the embedded SmolLM2-135M-Instruct (LoRA) on GSM8K
questions, and its only reward is a J1 judge reached through a running ``j1 serve``.

    OMP_NUM_THREADS=1 .venv/bin/python results/serve/closed_loop.py --serve-url http://127.0.0.1:8765 \\
        --out results/serve/closed_loop

(``closed_loop.sh`` starts the server, waits for /health, runs this, and stops the server.)

Each step: 1 question, 4 sampled answers (<= ``--max-new-tokens``); ``JudgeReward(serve_url=...)``
sends them to the server's POST /get_reward as one OpenRLHF-shaped request, where the judge compares
each answer with the question's gold solution in both orders (reward = share of the two orders in
which the answer is preferred: 0, 0.5 or 1). The judge's invalid and flip rates come back in
``extra_logs`` and TRL logs them beside the reward. Writes ``log_history.jsonl`` (TRL's log per
step), ``run.json`` (config, versions, git revision, the server's judge and batching totals) and
``reward_curve.png``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "j1" / "assets" / "data" / "gsm8k_mismatch.jsonl"


def questions(n: int) -> list[dict]:
    """The first ``n`` GSM8K questions of the shipped mismatch set, each with its gold solution
    (the set's ``chosen``; ``rejected`` is another question's solution and is not used here)."""
    rows = [json.loads(line) for line in DATA.read_text().splitlines()[:n]]
    return [{"prompt": [{"role": "user", "content": r["prompt"]}], "reference": r["chosen"], "id": r["id"]}
            for r in rows]


def plot(history: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    reward = [h["rewards/judge/mean"] for h in history]
    window = 5
    smooth = [sum(reward[max(0, i - window + 1):i + 1]) / len(reward[max(0, i - window + 1):i + 1])
              for i in range(len(reward))]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=[2, 1])
    top.plot(steps, reward, "o", alpha=0.5, label="mean reward of the step's 4 answers")
    top.plot(steps, smooth, "-", label=f"running mean ({window} steps)")
    top.set_ylim(-0.05, 1.05)
    top.set_ylabel("judge reward (share of orders won)")
    top.set_title("GRPO, SmolLM2-135M-Instruct (LoRA) rewarded by j1-135m via j1 serve")
    top.legend(loc="upper left", fontsize=8)
    bottom.plot(steps, [h.get("judge/flip_rate") for h in history], "s-", ms=3, label="judge flip rate")
    bottom.plot(steps, [h.get("judge/invalid_rate") for h in history], "^-", ms=3, label="judge invalid rate")
    bottom.set_ylim(-0.05, 1.05)
    bottom.set_xlabel("step")
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve-url", required=True, help="a running j1 serve, e.g. http://127.0.0.1:8765")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("pairwise", "group"), default="pairwise",
                    help="pairwise: against the reference answer; group: reference-free, each answer's win rate "
                         "against the others of its question")
    args = ap.parse_args()

    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from j1.integrations.trl import JudgeReward
    from j1.models import load_tokenizer, resolve_model
    from j1.runs.atomic import write_json_atomic
    from j1.runs.runinfo import RunFolder

    started = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    policy = resolve_model("smollm2-135m")  # the embedded model, on disk; nothing is downloaded
    data = Dataset.from_list(questions(args.questions))
    reward = JudgeReward(serve_url=args.serve_url, name="judge", mode=args.mode)
    config = GRPOConfig(
        output_dir=str(args.out / "trainer"), max_steps=args.steps, per_device_train_batch_size=args.generations,
        num_generations=args.generations, max_completion_length=args.max_new_tokens, temperature=1.0,
        learning_rate=args.learning_rate, beta=0.0, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=True, bf16=False, dataloader_num_workers=0, seed=args.seed,
    )
    lora = LoraConfig(r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.0,
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=policy, reward_funcs=[reward], args=config, train_dataset=data,
                          processing_class=load_tokenizer(policy), peft_config=lora)
    trainer.train()

    history = [h for h in trainer.state.log_history if "rewards/judge/mean" in h]
    (args.out / "log_history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    plot(history, args.out / "reward_curve.png")
    reward.close()
    import httpx2 as httpx

    judge = httpx.get(args.serve_url + "/v1/models", timeout=30).json()["data"][0]["judge"]
    health = httpx.get(args.serve_url + "/health", timeout=30).json()
    flips = [h["judge/flip_rate"] for h in history]
    invalid = [h["judge/invalid_rate"] for h in history]
    rewards = [h["rewards/judge/mean"] for h in history]
    half = len(rewards) // 2
    summary = {
        "steps": len(history), "judged_answers": len(history) * args.generations,
        "reward_mean_first_half": sum(rewards[:half]) / max(1, half),
        "reward_mean_second_half": sum(rewards[half:]) / max(1, len(rewards) - half),
        "flip_rate_mean": sum(flips) / len(flips), "invalid_rate_mean": sum(invalid) / len(invalid),
        "seconds_per_step": sum(h.get("step_time", 0.0) for h in history) / max(1, len(history)),
    }
    write_json_atomic(args.out / "summary.json", summary)
    RunFolder(args.out, command="results/serve/closed_loop.py", started=started).write(vars(args) | {
        "out": str(args.out), "grpo": {k: getattr(config, k) for k in (
            "max_steps", "per_device_train_batch_size", "num_generations", "max_completion_length", "temperature",
            "learning_rate", "beta", "seed")},
        "lora": {"r": lora.r, "alpha": lora.lora_alpha, "target_modules": sorted(lora.target_modules)},
        "policy": "smollm2-135m"}, judge=judge, server_batches=health["batches"], summary=summary)


if __name__ == "__main__":
    main()
