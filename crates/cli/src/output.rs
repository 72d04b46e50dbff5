//! Where things are printed: results on stdout (one JSON document with `--json`), notes,
//! warnings and progress bars on stderr.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// `println!` that returns an error instead of panicking when stdout is closed (`| head`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}
pub(crate) use outln;

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
    quiet: bool,
}

impl Output {
    pub fn new(json: bool, quiet: bool) -> Self {
        Self { json, quiet }
    }

    /// Whether `--quiet` was given.
    #[cfg(feature = "server")]
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// A note for people, on stderr.
    pub fn note(&self, msg: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", msg.as_ref());
        }
    }

    /// A warning, on stderr even with `--quiet`.
    #[allow(clippy::unused_self)] // a method so that all printing goes through `Output`
    pub fn warn(&self, msg: impl AsRef<str>) {
        eprintln!("warning: {}", msg.as_ref());
    }

    /// The one JSON document of a `--json` run.
    #[allow(clippy::unused_self)] // as above
    pub fn print_json<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, value)?;
        writeln!(stdout)?;
        Ok(())
    }

    /// Reports a failure: on stderr, and as `{"error": …}` on stdout with `--json`.
    pub fn error(&self, body: &ckeep_engine::ErrorBody) {
        eprintln!("error: {}", body.message);
        if let Some(hint) = &body.hint {
            eprintln!("hint: {hint}");
        }
        if self.json {
            let _ = self.print_json(&body.to_json());
        }
    }

    /// A progress bar on stderr, hidden when stderr is not a terminal or with `--quiet`.
    pub fn progress(&self, len: u64, what: &str) -> ProgressBar {
        let target = if self.quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        bar.set_style(
            ProgressStyle::with_template("{msg:>9} [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

/// Bytes as a human size.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// One line of at most `max` characters, newlines and runs of spaces collapsed.
pub fn snippet(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    format!("{cut}…")
}

/// An error and its causes in one line, each cause once: many errors already name their cause
/// in their own message (`path: No such file or directory`), and would show it twice.
pub fn error_message(err: &anyhow::Error) -> String {
    let mut message = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    message
}
