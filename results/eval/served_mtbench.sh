# j1-135m exported as an F16 GGUF, served by llama.cpp's OpenAI-compatible server, on the MT-Bench dev slice
# with and without MT-Bench's references (the judge's manifest travels with --judge).
# Needs the llamacpp extra (make test-engine builds it) and the rows of mtbench_dev.py in $R. About 7 min.
set -euxo pipefail
cd "$(dirname "$0")/../.."
export OMP_NUM_THREADS=1
J1=.venv/bin/j1
R=${R:-runs/eval54}
[ -f $R/j1-135m-F16.gguf ] || $J1 export judge j1-135m --gguf $R/j1-135m-F16.gguf
.venv/bin/python -m llama_cpp.server --model $R/j1-135m-F16.gguf --model_alias j1-135m --port 8392 \
  --n_ctx 4096 --n_threads 2 > $R/server.log 2>&1 &
server=$!
until curl -sf http://127.0.0.1:8392/v1/models > /dev/null; do sleep 1; done
$J1 eval --judge j1-135m --base-url http://127.0.0.1:8392/v1 --benchmark mtbench_human --data $R/mtbench_dev.jsonl --use_reference false --out $R/served-mtbench-noref --no_progress
$J1 eval --judge j1-135m --base-url http://127.0.0.1:8392/v1 --benchmark mtbench_human --data $R/mtbench_dev.jsonl --references /tmp/fastchat/gpt-4.jsonl --out $R/served-mtbench-ref --no_progress
kill $server; wait $server || true
