#!/usr/bin/env bash
# Installs ckeep for this user: the release binary and llama.cpp's libraries and CPU modules,
# which it loads from its own directory, into PREFIX/lib/ckeep, with PREFIX/bin/ckeep linking to
# it. `cargo install` copies the binary alone, which then cannot start without those libraries.
# Usage: scripts/install.sh [PREFIX]   (default ~/.local)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-$HOME/.local}"
scripts/build_deps.sh
cargo build --release -p ckeep
dir="$prefix/lib/ckeep"
rm -rf "$dir" && mkdir -p "$dir" "$prefix/bin"
cp target/release/ckeep target/release/lib*.so.0 target/release/libggml-cpu-*.so "$dir/"
ln -sf "$dir/ckeep" "$prefix/bin/ckeep"
echo "installed $prefix/bin/ckeep (and its libraries in $dir)"
