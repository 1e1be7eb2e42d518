#!/usr/bin/env bash
# Create the dev-only virtualenv with lm-evaluation-harness 0.4.13 that benchmarks.parity,
# benchmarks.benchmark and `pytest -m parity` compare Mill against. lm-eval is never a
# dependency of Mill itself. Point MILL_LMEVAL_PYTHON at another interpreter to use a
# virtualenv elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m venv .venv-lmeval
# math: minerva_math500's utilities (whole_process's math workloads) need sympy, math-verify and
# ANTLR 4.11, which Mill's own environment cannot have (Hydra pins ANTLR 4.9)
# ifeval: langdetect and immutabledict, for lm-eval's IFEval checker (tests/ifeval/test_parity.py)
.venv-lmeval/bin/pip install torch==2.13.0 "lm_eval[hf,math,ifeval]==0.4.13"
.venv-lmeval/bin/python -c "import lm_eval, torch; print('lm-eval', lm_eval.__version__, 'torch', torch.__version__)"
echo "ready: export MILL_LMEVAL_PYTHON=$PWD/.venv-lmeval/bin/python (the default)"
