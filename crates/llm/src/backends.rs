//! llama.cpp's run-time pieces: its CPU modules (one per x86 level, built by llama.cpp's
//! `GGML_CPU_ALL_VARIANTS`) are found beside the binary, and llama.cpp loads the best one this
//! CPU runs, once per process. So one portable binary runs AVX-512 kernels where the CPU has
//! them and SSE4.2 or plain x86-64 ones where it does not.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::{Error, Result};

/// A module every x86-64 CPU runs: a directory holding it holds the set.
const BASELINE_MODULE: &str = "libggml-cpu-x64.so";

/// The directory of modules: `$CKEEP_LLAMA_MODULES`, else beside the running binary or one
/// level up (test binaries sit in `deps/`), else where this build placed them.
pub fn modules_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CKEEP_LLAMA_MODULES") {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok();
    let beside = exe.as_deref().and_then(Path::parent);
    [beside.map(Path::to_path_buf), beside.and_then(Path::parent).map(Path::to_path_buf)]
        .into_iter()
        .flatten()
        .chain(option_env!("CKEEP_LLAMA_BUILD_DIR").map(PathBuf::from))
        .find(|dir| dir.join(BASELINE_MODULE).is_file())
}

/// The process's llama.cpp, its CPU module loaded and its logging silenced (our errors say what
/// went wrong); the same error every time when the modules are missing.
pub(crate) fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND.get_or_init(init).as_ref().map_err(|message| Error::Setup(message.clone()))
}

fn init() -> Result<LlamaBackend, String> {
    let Some(dir) = modules_dir() else {
        let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
        return Err(format!(
            "llama.cpp's CPU modules (libggml-cpu-*.so) are not beside {exe}: copy them with the \
             binary from the build's target directory, or name their directory in \
             CKEEP_LLAMA_MODULES"
        ));
    };
    // Silent from the start: loading a module logs its path to stderr otherwise.
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default().with_logs_enabled(false));
    llama_cpp_2::llama_backend::load_backends_from_path(&dir);
    let cpu = llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .any(|d| d.device_type == llama_cpp_2::LlamaBackendDeviceType::Cpu);
    if !cpu {
        return Err(format!(
            "no llama.cpp CPU module in {} runs on this CPU (or the modules do not load)",
            dir.display()
        ));
    }
    let mut backend = LlamaBackend::init().map_err(|e| format!("llama.cpp: {e}"))?;
    backend.void_logs();
    Ok(backend)
}
