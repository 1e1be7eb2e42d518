#!/usr/bin/env bash
# Create the dev-only virtualenv with lighteval 0.13.0 (and its math extra: math-verify,
# latex2sympy2_extended) that benchmarks.lighteval_math and `pytest -m parity` use as the
# reference for Mill's math tasks (MATH-500, AIME24, AIME25, AMC23). lighteval is never a
# dependency of Mill itself. torch is installed first and pinned: the CPU wheel; an unpinned
# torch would pull the CUDA build. Point MILL_LIGHTEVAL_PYTHON at another interpreter to use a
# virtualenv elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m venv .venv-lighteval
.venv-lighteval/bin/pip install torch==2.13.0
# xxhash < 4: lighteval 0.13's details logger hashes str, which xxhash 4 refuses ("Strings must
# be encoded before hashing"); its transformers backend (benchmarks.lighteval_driver) needs it
.venv-lighteval/bin/pip install torch==2.13.0 "lighteval[math]==0.13.0" "xxhash<4"
.venv-lighteval/bin/python -c "import importlib.metadata as m; print(*(f'{p} {m.version(p)}' for p in ('lighteval', 'latex2sympy2_extended', 'sympy', 'torch')), sep=', ')"
echo "ready: export MILL_LIGHTEVAL_PYTHON=$PWD/.venv-lighteval/bin/python (the default)"
