#!/usr/bin/env bash
# The one debug build every test runs on: the `ckeep` binary, the Python module
# (target/debug/lib_ckeep.so) and every test binary, in a single cargo invocation. One
# invocation means one feature resolution (the dev-dependencies' `testing` features and the
# Python module's included), so each crate is compiled once; `cargo build -p ckeep` followed by
# `cargo test` and `cargo build -p ckeep-python` resolved three feature sets and compiled the
# engine and everything above it three times. `cargo test` with the same selection (see
# scripts/test.sh) then finds everything fresh. A second call is a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
# Inside scripts/test.sh, after its build: nothing to ask cargo (whose lock a test lane may hold).
[ -z "${CKEEP_BUILT:-}" ] || exit 0
scripts/build_deps.sh
# As maturin builds it: an extension module, whose Python symbols the interpreter provides.
export PYO3_BUILD_EXTENSION_MODULE=1
cargo build --quiet --workspace --lib --bins --tests --examples "$@"
