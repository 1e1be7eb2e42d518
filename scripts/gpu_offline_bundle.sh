#!/usr/bin/env bash
# Pack what the GPU table needs for a GPU machine that reaches no package registry but has
# Python, torch (CUDA), accelerate and the usual scientific stack: wheels of the versions
# installed here of Mill's and lm-eval 0.4.13's other dependencies, and the shared data the
# workloads read. Then, on the GPU machine, from the repository root:
#   bash scripts/gpu_check.sh <bundle>
# Usage: bash scripts/gpu_offline_bundle.sh [bundle folder, default .gpu] [target Python, default 3.12]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.gpu}"
py="${2:-3.12}"
mkdir -p "$out/whl" "$out/data"
pinned() { python -c "import importlib.metadata as m, sys; print(' '.join(f'{n}=={m.version(n)}' for n in sys.argv[1:]))" "$@"; }
# pure-Python and compiled wheels for the target interpreter
python -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$out/whl" $(pinned transformers hydra-core omegaconf jsonlines datasets dill multiprocess \
    evaluate lm_eval pytablewriter DataProperty mbstrdecoder pathvalidate tabledata tcolorpy typepy \
    chardet nltk more-itertools regex fsspec pytz)
# packages published as source only: built into wheels here (pure Python)
python -m pip wheel -q --no-deps -w "$out/whl" $(pinned antlr4-python3-runtime sqlitedict word2number rouge_score)
for d in arc_easy gsm8k mmlu wikitext2; do cp -r "../shared/data/$d" "$out/data/"; done
du -sh "$out"
