#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` once into target/llama-server/bin: the real OpenAI-compatible
# server the chat client's tests run against (crates/llm/tests/server.rs). A small build (about 5
# CPU-minutes): the server alone, static, one CPU kernel set (AVX2, which every CI machine has)
# instead of ckeep's run-time choice among all of them, and C++ at -O1 (the C kernels stay at
# -O3): a third less compile time, and the tests' few hundred tokens still take 3 seconds.
# No prebuilt web UI is fetched (the tests need none, and the hub may be unreachable).
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/llama-server
[ ! -x "$out/bin/llama-server" ] || exit 0
scripts/build_deps.sh
src=$(scripts/llama_cpp_source.sh)
rm -rf "$out" && mkdir -p "$out"
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON > "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log" >&2; exit 1; }
cmake --build "$out" -j "$(nproc)" --target llama-server >> "$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log" >&2; exit 1; }
