//! Loading documents and cutting them into chunks with byte-exact spans.
//!
//! # Brief overview
//! - [`load`]: files, directories, Markdown, Jupyter notebooks and JSONL into [`Document`]s, with
//!   the text decoded to UTF-8 once ([`decode`]); that text is what all spans point into.
//! - [`chunk`]: a [`ChunkerSpec`] (`words:200`, `paragraphs`, `markdown:512`,
//!   `hierarchy:2048,512,128`, …) turns a document's text into a pre-ordered chunk tree, every
//!   chunk a span with `chunk.span.slice(&doc.text)` on character boundaries.
//!
//! ```
//! use ckeep_text::{ChunkerSpec, WordCounter};
//! let spec: ChunkerSpec = "sentences".parse().unwrap();
//! let text = "First one. Second one!";
//! let chunks = spec.chunk(text, &WordCounter);
//! let texts: Vec<&str> = chunks.iter().map(|c| c.span.slice(text)).collect();
//! assert_eq!(texts, ["First one.", "Second one!"]);
//! ```
//!
//! [`Document`]: ckeep_core::Document

pub mod chunk;
pub mod decode;
mod error;
pub mod load;

pub use chunk::{ChunkerSpec, SizeCounter, WordCounter};
pub use error::{Error, is_missing_path};
pub use load::{LoadOptions, Loader};
