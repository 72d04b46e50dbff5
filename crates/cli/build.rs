//! The `ckeep` binary finds llama.cpp's shared libraries beside itself (`$ORIGIN`), where the
//! build puts them (see crates/llm/build.rs): the binary and those files move together. An
//! old-style RPATH (not RUNPATH) so that the libraries' own dependencies (libllama.so.0 needs
//! libggml.so.0) are found there too.

fn main() {
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && std::env::var_os("CARGO_FEATURE_LLM").is_some() {
        println!("cargo:rustc-link-arg-bins=-Wl,--disable-new-dtags,-rpath,$ORIGIN");
    }
}
