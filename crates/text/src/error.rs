use std::path::PathBuf;

/// Everything that can go wrong while loading or chunking. All variants are the user's input
/// errors except [`Error::Io`], which may also be the machine's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes are not UTF-8 (user error; `--lossy` replaces bad bytes instead).
    #[error(
        "{origin}: invalid UTF-8 at byte {offset} (pass --lossy to replace invalid bytes with U+FFFD)"
    )]
    InvalidUtf8 {
        /// File (and line) the bytes came from.
        origin: String,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The file looks binary (user error).
    #[error("{origin}: looks like a binary file (NUL byte at offset {offset}); not indexed")]
    Binary {
        /// File the bytes came from.
        origin: String,
        /// Offset of the first NUL byte.
        offset: usize,
    },
    /// The document has no text to index (user error).
    #[error("{origin}: empty document (no text to index)")]
    Empty {
        /// File (and line) of the document.
        origin: String,
    },
    /// The document is larger than the configured limit (user error).
    #[error(
        "{origin}: {size} bytes is larger than the document size limit of {limit} bytes (raise it with --max-doc-bytes, or split the file)"
    )]
    TooLarge {
        /// File (and line) of the document.
        origin: String,
        /// Size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// Malformed structured input: JSONL lines or a notebook (user error). Lists every bad
    /// line found, so a user can fix them in one pass.
    #[error("{origin}: {} malformed record(s):\n{}", problems.len(), render_problems(problems))]
    Malformed {
        /// The file.
        origin: String,
        /// `(line number, message)`; line 0 stands for the whole file.
        problems: Vec<(usize, String)>,
    },
    /// A PDF, EPUB or DOCX whose text cannot be extracted: damaged, truncated, encrypted,
    /// scanned without a text layer, or not of its format (user error).
    #[error("{origin}: {reason}")]
    Unreadable {
        /// The file.
        origin: String,
        /// Why, in words that suggest what to do.
        reason: String,
    },
    /// A chunker spec could not be parsed (user error).
    #[error("invalid chunker spec `{spec}`: {message}")]
    ChunkerSpec {
        /// The spec as given.
        spec: String,
        /// What was expected.
        message: String,
    },
}

impl Error {
    /// Whether the input is at fault (every variant but [`Error::Io`], which may be the
    /// machine's, unless it says the path is not there): decides exit code 2 in the CLI and 422
    /// over HTTP alike.
    pub fn is_user_error(&self) -> bool {
        if let Self::Io { source, .. } = self { is_missing_path(source) } else { true }
    }
}

/// Whether an I/O error says a path the caller gave is not there or not of the kind it must
/// be (the caller's mistake) rather than that the machine failed to read it.
pub fn is_missing_path(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::NotFound
            | ErrorKind::NotADirectory
            | ErrorKind::IsADirectory
            | ErrorKind::InvalidFilename
    )
}

/// At most this many problems are listed in a [`Error::Malformed`] message.
pub(crate) const MAX_PROBLEMS: usize = 20;

fn render_problems(problems: &[(usize, String)]) -> String {
    problems
        .iter()
        .map(
            |(line, msg)| {
                if *line == 0 { format!("  {msg}") } else { format!("  line {line}: {msg}") }
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}
