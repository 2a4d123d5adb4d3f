#!/bin/bash
# Held-out judge metrics before and after a learning run (results/train/LOG.md):
#   OMP_NUM_THREADS=1 flock /tmp/j1-lane2.lock bash results/train/eval_learn.sh            # run 2
# The held-out file is the `j1 synth mix` output written by run_learn.sh (chat pairs split by prompt +
# GSM8K mismatch pairs of disjoint questions); `--benchmark generic` reads mix rows directly.
# Environment (defaults = run 2): RUN, DATA, WARMUP, TEMPLATE as in run_learn.sh; WHICH = "before after"
# (or one of them, to run them on two lanes); SAMPLES=N > 1 judges with N samples at temperature 1
# (plurality per order) into eval-sampled-{before,after} instead of greedy eval-{before,after};
# MAXNEW = token budget per judgment (40; longer for quoting thoughts); PREFILL = the fixed start of
# every answer (--assistant_prefill, as in run_learn.sh).
set -euxo pipefail
export OMP_NUM_THREADS=${THREADS:-1}
R=runs/train
RUN=${RUN:-pav-learn}
D=$R/${DATA:-learn-data}
EVAL="--benchmark generic --data $D/heldout.jsonl --format pav --template ${TEMPLATE:-full} --max_new_tokens ${MAXNEW:-40} --progress false"
declare -A MODEL=([before]=${WARMUP:-$R/warmup-pav} [after]=$R/$RUN/final)
SAMPLES=${SAMPLES:-1}
if [ "$SAMPLES" -gt 1 ]; then E=eval-sampled; T=1.0; else E=eval; T=0; fi
for name in ${WHICH:-before after}; do
  .venv/bin/j1 eval $EVAL --samples $SAMPLES --temperature $T --seed 0 --model ${MODEL[$name]} \
    ${PREFILL:+--assistant_prefill "$PREFILL"} --out $R/$RUN-$E-$name --resume
done
[ -f $R/$RUN-$E-before/metrics.json ] && [ -f $R/$RUN-$E-after/metrics.json ] || exit 0
mkdir -p results/train/$RUN
cp $R/$RUN/log.jsonl $R/$RUN/run.json ${MODEL[before]}/warmup.json results/train/$RUN/
for e in before after; do
  mkdir -p results/train/$RUN/$E-$e; cp $R/$RUN-$E-$e/metrics.json $R/$RUN-$E-$e/report.md results/train/$RUN/$E-$e/
done
.venv/bin/python results/train/plot_curve.py $R/$RUN/log.jsonl results/train/reward_curve_$RUN.png
