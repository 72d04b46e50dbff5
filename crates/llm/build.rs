//! Puts llama.cpp's shared libraries and its CPU modules beside the binaries this build makes
//! (`target/<profile>/`), where the `ckeep` binary (rpath `$ORIGIN`) and the test binaries
//! (their parent directory) find them: llama.cpp builds one module per x86 level, and the best
//! one the CPU runs is loaded at run time (see `src/backends.rs`).

use std::path::{Path, PathBuf};

/// CPU modules not shipped: `sapphirerapids` uses AMX, whose kernels died with SIGILL on a 2-core
/// Xeon VM that reports AMX and grants it to the process (`arch_prctl`) yet loses the tile state
/// under load. The AVX-512 VNNI/BF16 module (`zen4`) is picked there instead, at llama.cpp's own
/// speed.
const LEFT_OUT: &[&str] = &["libggml-cpu-sapphirerapids.so"];

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
    // Without the `local` feature there is no llama.cpp to place.
    let Some(modules) = std::env::var_os("DEP_LLAMA_BACKENDS_DIR").map(PathBuf::from) else {
        return;
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is target/<profile>/build/ckeep-llm-<hash>/out.
    let profile = out.ancestors().nth(3).expect("OUT_DIR inside target/<profile>").to_path_buf();
    // The shared libraries the binaries link, under the names they ask for (libllama.so.0, …),
    // also in deps/ and examples/: llama-cpp-sys-2 hard-links its `libllama.so -> libllama.so.0`
    // symlinks there, and its build script fails when it runs again and finds them dangling.
    let libs = modules.parent().expect("backends dir inside OUT_DIR").join("lib");
    for entry in std::fs::read_dir(&libs).expect("llama.cpp's lib dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".so.0") {
            for dir in [profile.clone(), profile.join("deps"), profile.join("examples")] {
                if dir.is_dir() {
                    place(&entry.path(), &dir.join(&name));
                }
            }
        }
    }
    for entry in std::fs::read_dir(&modules).expect("llama.cpp's backends dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("libggml-cpu-") && !LEFT_OUT.contains(&name.as_str()) {
            place(&entry.path(), &profile.join(&name));
        }
    }
    println!("cargo:rustc-env=CKEEP_LLAMA_BUILD_DIR={}", profile.display());
}

/// Copies `from` (following links) to `to`, replacing an older copy.
fn place(from: &Path, to: &Path) {
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
}
