#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (CPU only, statically linked) into DEST/bin, from the
# llama.cpp sources vendored in the llama-cpp-python release the served tests use, so both
# llama.cpp servers run the same llama.cpp. Only the llama-server target is built: no web UI
# (nothing is downloaded at build time), no curl/OpenSSL, portable x86-64 flags (no -march=native).
#
#   bash scripts/build_llama_server.sh [DEST]     # default DEST: .llama-server
#
# Needs cmake, a C/C++ compiler and pip (to fetch the sdist from PyPI). The tests find the
# binary at .llama-server/bin/llama-server or in $MILL_LLAMA_SERVER.
set -euo pipefail
VERSION="0.3.36"
DEST="$(realpath -m "${1:-.llama-server}")"
JOBS="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  --dest "$WORK" "llama-cpp-python==$VERSION"
tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"

cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  >"$WORK/configure.log" 2>&1 || { tail -40 "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "$JOBS" >"$WORK/build.log" 2>&1 \
  || { tail -60 "$WORK/build.log"; exit 1; }

mkdir -p "$DEST/bin"
install -m 755 "$WORK/build/bin/llama-server" "$DEST/bin/llama-server"
"$DEST/bin/llama-server" --version
