"""The MT-Bench human dev slice as ``j1 eval --benchmark mtbench_human`` rows, so that its reference-guided
categories can be judged against MT-Bench's reference answers (results/eval/README.md).

../shared/data/llmbar_processed_dev.jsonl holds 42 MT-Bench human judgments (subset "MT-Bench", LLMBar's
processing of lmsys/mt_bench_human_judgments: the first turn's question, the two answers, the human label,
no question id). Each question is found in FastChat's question.jsonl by its exact text, which gives its
question_id, and so its category and reference answer. Usage:

    python results/eval/mtbench_dev.py ../shared/data/llmbar_processed_dev.jsonl question.jsonl OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter


def main(dev: str, questions: str, out: str) -> None:
    by_text = {}
    for line in open(questions, encoding="utf-8"):
        q = json.loads(line)
        by_text[q["turns"][0].strip()] = q["question_id"]
    rows, missing = [], 0
    for line in open(dev, encoding="utf-8"):
        r = json.loads(line)
        if r.get("subset") != "MT-Bench":
            continue
        qid = by_text.get(r["input"].strip())
        if qid is None:
            missing += 1
            continue
        rows.append({"question_id": qid, "model_a": "output_1", "model_b": "output_2", "judge": "human",
                     "winner": {1: "model_a", 2: "model_b"}[int(r["label"])], "turn": 1,
                     "conversation_a": [{"role": "user", "content": r["input"]},
                                        {"role": "assistant", "content": r["output_1"]}],
                     "conversation_b": [{"role": "user", "content": r["input"]},
                                        {"role": "assistant", "content": r["output_2"]}]})
    # an id repeats when two judgments share a question: number them, as the benchmark's ids are unique
    seen: Counter = Counter()
    for r in rows:
        seen[r["question_id"]] += 1
        r["model_b"] = f"output_2#{seen[r['question_id']]}"
    with open(out, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    print(f"{len(rows)} rows -> {out}; {missing} questions not found")


if __name__ == "__main__":
    main(*sys.argv[1:])
