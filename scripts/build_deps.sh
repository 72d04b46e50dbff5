#!/usr/bin/env bash
# What building ckeep needs beyond the Rust toolchain and a C compiler: llama.cpp (the local
# language model) is C++ built with cmake, and its Rust binding is generated with libclang.
# Installs Debian's g++, cmake and libclang-dev with apt-get (as root, or through sudo) when
# missing; does nothing when they are there.
set -euo pipefail
debs=()
command -v g++ > /dev/null || debs+=(g++)
command -v cmake > /dev/null || debs+=(cmake)
# libclang itself (bindgen loads it), not libclang-cpp, which other packages bring without it.
compgen -G "/usr/lib/llvm-*/lib/libclang.so*" > /dev/null \
  || compgen -G "/usr/lib/*/libclang-[0-9]*.so*" > /dev/null || debs+=(libclang-dev)
[ ${#debs[@]} -gt 0 ] || exit 0
echo "installing ${debs[*]} (Debian) to build llama.cpp" >&2
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${debs[@]}" > /dev/null
