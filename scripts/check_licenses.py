#!/usr/bin/env python3
"""Licence check of every crate the workspace builds (cargo metadata, all features): each
licence expression must be satisfiable with permissive licences compatible with our
MIT OR Apache-2.0, so no GPL/AGPL/LGPL-only or unknown licence slips in with a new dependency.

An expression is read as SPDX: `A OR B` needs one side allowed, `A AND B` both; the old `/`
separator means OR. Exit status 1 lists the offending crates."""
import json
import re
import subprocess
import sys

ALLOWED = {
    "MIT", "MIT-0", "Apache-2.0", "Apache-2.0 WITH LLVM-exception", "BSD-2-Clause",
    "BSD-3-Clause", "ISC", "Zlib", "Unlicense", "CC0-1.0", "0BSD", "BSL-1.0", "Unicode-3.0",
    "Unicode-DFS-2016", "CDLA-Permissive-2.0",
    # LLVM's old licence, a BSD-style one (libFuzzer, in the fuzz targets' libfuzzer-sys).
    "NCSA",
}


def tokens(expr):
    return re.findall(r"\(|\)|[A-Za-z0-9.\-+]+(?: WITH [A-Za-z0-9.\-]+)?", expr.replace("/", " OR "))


def allowed(expr):
    """Evaluates an SPDX expression: OR binds looser than AND, parentheses group."""
    toks = tokens(expr)
    pos = 0

    def parse_or():
        nonlocal pos
        value = parse_and()
        while pos < len(toks) and toks[pos] == "OR":
            pos += 1
            value = parse_and() or value
        return value

    def parse_and():
        nonlocal pos
        value = parse_atom()
        while pos < len(toks) and toks[pos] == "AND":
            pos += 1
            value = parse_atom() and value
        return value

    def parse_atom():
        nonlocal pos
        tok = toks[pos]
        pos += 1
        if tok == "(":
            value = parse_or()
            pos += 1  # ")"
            return value
        return tok in ALLOWED

    try:
        return parse_or() and pos == len(toks)
    except IndexError:
        return False


def check(manifest):
    """The offending dependencies of the workspace of `manifest`, and how many there are."""
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--all-features", "--locked",
         "--manifest-path", manifest],
        check=True, capture_output=True, text=True).stdout)
    workspace = set(meta["workspace_members"])
    bad = [f"{p['name']} {p['version']}: {p['license'] or 'no licence field'}"
           for p in meta["packages"]
           if p["id"] not in workspace and not allowed(p.get("license") or "")]
    return bad, len(meta["packages"]) - len(workspace)


def main():
    # The product's workspace, and the fuzz targets' (libFuzzer comes with them).
    for manifest in ["Cargo.toml", "fuzz/Cargo.toml"]:
        bad, count = check(manifest)
        if bad:
            print(f"{manifest}: dependencies whose licence is not MIT/Apache-2.0-compatible:",
                  *bad, sep="\n  ")
            sys.exit(1)
        print(f"licences of {manifest}: {count} dependencies, all permissive")


if __name__ == "__main__":
    assert allowed("MIT OR Apache-2.0 OR LGPL-2.1-or-later")
    assert allowed("(MIT OR Apache-2.0) AND Unicode-3.0")
    assert not allowed("GPL-3.0-only")
    assert not allowed("MIT AND GPL-2.0")
    assert not allowed("")
    main()
