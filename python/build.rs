//! The module finds llama.cpp's shared libraries beside itself (`$ORIGIN`) when a workspace build
//! links them in (the CLI's `llm` feature unifies into this crate's engine; see
//! `scripts/test_python.sh`, which copies them there). The wheel maturin builds alone links none.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-cdylib=-Wl,--disable-new-dtags,-rpath,$ORIGIN");
    }
}
