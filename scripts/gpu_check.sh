#!/usr/bin/env bash
# The GPU table in one call, on a machine with a CUDA GPU (docs/benchmark.md, "GPU"):
# install a bundle from scripts/gpu_offline_bundle.sh (if given), then the whole-process
# table (random 1.1B Llama, bf16) and its generation table (GEN_MODEL: a model name or
# folder, e.g. a TinyLlama-1.1B checkpoint), fp32 parity with lm-eval on CUDA, and the CUDA tests.
# Each step gets what is left of DEADLINE seconds; results go to $OUT (default: ./gpu-out).
# Usage: bash scripts/gpu_check.sh [bundle folder]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
bundle="${1:-}"
data="${MILL_SHARED_DATA:-$PWD/../shared/data}"
T0=$(date +%s); DEADLINE=${DEADLINE:-560}
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
left() { local l=$(( DEADLINE - ($(date +%s) - T0) )); (( l < $1 )) && echo "$l" || echo "$1"; }
if [ -n "$bundle" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile "$bundle"/whl/*.whl 2>&1 | tail -3
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
  data="$(cd "$bundle" && pwd)/data"
fi
export MILL_SHARED_DATA="$data"
el installed
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import sys, torch, transformers, lm_eval; print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())" || exit 1
floor=""  # the first workload also times the floor (benchmarks.floor_driver), the others skip it
for w in ${WORKLOADS:-arc_easy_0shot gsm8k_8shot arc_easy_25shot mmlu_5shot wikitext2}; do
  t=$(left 150); (( t < 30 )) && { el "skip $w"; continue; }
  el "whole process $w (timeout $t s)"
  timeout "$t" python3 -m benchmarks.whole_process --device cuda --dtype bfloat16 --model llama_1b \
    --workloads "$w" --rounds "${ROUNDS:-1}" --threads 8 --lmeval-batch-size "${LMB:-32}" \
    --data-dir "$data" --json "$OUT/wp_$w.json" $floor 2>&1 | grep -v "^Writing"
  floor="--no-floor"
done
# generation (issue 23): Mill, lm-eval hf and transformers' generate_batch, greedy tokens compared
for w in ${GEN_WORKLOADS:-gsm8k_cot_8shot humaneval_n10}; do
  t=$(left 150); (( t < 40 )) && { el "skip $w"; continue; }
  el "whole process, generation, $w (timeout $t s)"
  timeout "$t" python3 -m benchmarks.whole_process --device cuda --dtype bfloat16 \
    --model "${GEN_MODEL:-llama_1b}" --workloads "$w" --peers lmeval generate_batch --no-floor \
    --rounds "${ROUNDS:-1}" --threads 8 --lmeval-batch-size "${LMB:-32}" --data-dir "$data" \
    ${GEN_LIMIT:+--limit "$GEN_LIMIT"} --json "$OUT/wp_gen_$w.json" 2>&1 | grep -v "^Writing"
done
t=$(left 100); if (( t >= 40 )); then el "parity, fp32 on CUDA (timeout $t s)"
  timeout "$t" python3 -m benchmarks.parity --device cuda --dtype float32 --models gpt2_bench \
    --workloads arc_easy_0shot gsm8k_8shot_stop --limit 40 --threads 8 --data-dir "$data" \
    --json "$OUT/parity.json" > "$OUT/parity.log" 2>&1
  tail -15 "$OUT/parity.log"; fi
t=$(left 100); if (( t >= 40 )); then el "CUDA tests (timeout $t s)"
  timeout "$t" python3 -m pytest -q -m "" -p no:cacheprovider tests/model/engine/test_memory.py \
    tests/model/test_device_map.py tests/bench/test_benchmark_options.py 2>&1 | tail -6; fi
el done
