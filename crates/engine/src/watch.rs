//! Watch: a store kept in line with folders while it runs. File-system notifications (the
//! `notify` crate: inotify, `FSEvents`, `ReadDirectoryChangesW`) are gathered into batches —
//! an editor's save is several events, a `git checkout` hundreds — and each batch is synced
//! like `ckeep sync` limited to the paths that changed ([`Writer::sync_changes`]), so a batch
//! that fits one ingest batch is one transaction and readers see it whole.
//!
//! Paths are reported as the roots were given (`docs/a.md` under the root `docs`), the form
//! the loader gives document ids and sources. What a directory walk skips is skipped here
//! too: hidden files and folders (an editor's `.swp`, a store kept in `.ckeep`), files of
//! unknown type inside a folder, and whatever ignore files exclude.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use ckeep_store::StoreWrite;
use ckeep_text::load::Source;
use ckeep_text::{ChunkerSpec, Loader};
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::sync::SyncReport;
use crate::sync::{normal, within};

/// Loaded text kept in memory between the check and the write of one batch; a larger batch
/// (a whole folder after lost events) reads the rest again when it writes.
const KEEP_LOADED_BYTES: usize = 256 << 20;

/// How events are gathered into a batch.
#[derive(Debug, Clone, Copy)]
pub struct Debounce {
    /// A batch closes once no event came for this long (a save is several events)…
    pub quiet: Duration,
    /// …or this long after its first event, so a folder that never stops changing is still
    /// synced.
    pub max_delay: Duration,
}

impl Default for Debounce {
    fn default() -> Self {
        Self { quiet: Duration::from_millis(200), max_delay: Duration::from_secs(1) }
    }
}

/// What changed in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Files or folders created, written, moved or deleted (as the roots were given; a folder
    /// stands for everything below it).
    Paths(Vec<PathBuf>),
    /// Events were lost (the kernel's queue overflowed, or the watcher failed, for the reason
    /// given): every root is compared with the store.
    Everything(String),
}

/// A root as given, and where it is.
#[derive(Debug)]
struct Root {
    given: PathBuf,
    absolute: PathBuf,
    /// A file named on its own: its folder is watched (editors replace files by renaming, which
    /// ends a watch on the file itself), and only its own events count.
    file: bool,
}

/// Notifications for files and folders, gathered into batches by [`FolderWatch::next_batch`].
#[derive(Debug)]
pub struct FolderWatch {
    roots: Vec<Root>,
    ignored: Vec<PathBuf>,
    events: Receiver<notify::Result<Event>>,
    _watcher: RecommendedWatcher,
}

impl FolderWatch {
    /// Starts watching `roots` (files or folders, which must exist), leaving out anything under
    /// `ignored` (the store's own folder, when it lies inside a root). Start it before the first
    /// full sync, so no change made during that sync is missed.
    pub fn new(roots: &[PathBuf], ignored: &[PathBuf]) -> Result<Self> {
        let (send, events) = channel();
        let failed = |path: &Path, e: &dyn std::fmt::Display| Error::Watch {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let mut watcher =
            notify::recommended_watcher(send).map_err(|e| failed(Path::new("."), &e))?;
        let mut watched = Vec::with_capacity(roots.len());
        for given in roots {
            let absolute = std::path::absolute(given).map_err(|e| failed(given, &e))?;
            let meta = std::fs::metadata(given).map_err(|e| failed(given, &e))?;
            let file = !meta.is_dir();
            let (target, mode) = if file {
                (absolute.parent().unwrap_or(Path::new("/")), RecursiveMode::NonRecursive)
            } else {
                (absolute.as_path(), RecursiveMode::Recursive)
            };
            watcher.watch(target, mode).map_err(|e| failed(given, &e))?;
            watched.push(Root { given: given.clone(), absolute, file });
        }
        let ignored = ignored.iter().filter_map(|p| std::path::absolute(p).ok()).collect();
        Ok(Self { roots: watched, ignored, events, _watcher: watcher })
    }

    /// The roots as given.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.iter().map(|r| r.given.clone()).collect()
    }

    /// Waits for a change, then gathers events until `debounce` closes the batch. `None` when
    /// `wait` (if given) passed without a change, or the watcher stopped.
    pub fn next_batch(&self, debounce: Debounce, wait: Option<Duration>) -> Option<Changes> {
        let give_up = wait.map(|w| Instant::now() + w);
        let mut batch = Batch::default();
        while batch.is_empty() {
            let event = match give_up {
                None => self.events.recv().ok()?,
                Some(t) => {
                    self.events.recv_timeout(t.saturating_duration_since(Instant::now())).ok()?
                }
            };
            self.gather(event, &mut batch);
        }
        let first = Instant::now();
        let mut last = first;
        loop {
            let close = (last + debounce.quiet).min(first + debounce.max_delay);
            let left = close.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.events.recv_timeout(left) {
                Ok(event) => {
                    if self.gather(event, &mut batch) {
                        last = Instant::now();
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        Some(batch.into_changes())
    }

    /// Adds what `event` changed to `batch`; whether it touched anything watched (which keeps
    /// the batch open).
    fn gather(&self, event: notify::Result<Event>, batch: &mut Batch) -> bool {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                batch.lost.get_or_insert_with(|| format!("the watcher failed: {e}"));
                return true;
            }
        };
        if event.need_rescan() {
            batch.lost.get_or_insert_with(|| "file-system events were lost".into());
            return true;
        }
        // Reads (ours included) are not changes; a file closed after writing is.
        if matches!(event.kind, EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write)) {
            return false;
        }
        let mut relevant = false;
        for path in event.paths.iter().filter_map(|p| self.relate(p)) {
            batch.paths.insert(path);
            relevant = true;
        }
        relevant
    }

    /// `path` (from the watcher) as under its root's given form; `None` if it lies under no
    /// root, is hidden below one, or is ignored.
    fn relate(&self, path: &Path) -> Option<PathBuf> {
        let absolute = std::path::absolute(path).ok()?;
        if self.ignored.iter().any(|i| absolute.starts_with(i)) {
            return None;
        }
        for root in &self.roots {
            if root.file {
                if absolute == root.absolute {
                    return Some(root.given.clone());
                }
                continue;
            }
            let Ok(rest) = absolute.strip_prefix(&root.absolute) else { continue };
            if rest
                .components()
                .any(|c| matches!(c, Component::Normal(n) if n.to_string_lossy().starts_with('.')))
            {
                return None;
            }
            return Some(if rest.as_os_str().is_empty() {
                root.given.clone()
            } else {
                root.given.join(rest)
            });
        }
        None
    }
}

/// Events gathered so far.
#[derive(Debug, Default)]
struct Batch {
    paths: BTreeSet<PathBuf>,
    lost: Option<String>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.lost.is_none()
    }

    /// The changed paths without those below another changed path.
    fn into_changes(self) -> Changes {
        if let Some(reason) = self.lost {
            return Changes::Everything(reason);
        }
        let mut kept: Vec<PathBuf> = Vec::new();
        for path in self.paths {
            if !kept.iter().any(|k| path.starts_with(k)) {
                kept.push(path);
            }
        }
        Changes::Paths(kept)
    }
}

/// What syncing a batch did.
#[derive(Debug, Default)]
pub struct ChangesReport {
    /// Added, replaced and removed documents.
    pub sync: SyncReport,
    /// Files that did not load, each with why; their stored documents were kept (a file being
    /// written may not parse yet: its next save brings another batch).
    pub failed: Vec<String>,
    /// Warnings from loading.
    pub warnings: Vec<String>,
    /// Roots that no longer exist: nothing under them was removed.
    pub missing_roots: Vec<PathBuf>,
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Brings the store in line with `changes` under `roots`: the files under a changed path
    /// are loaded, new and edited ones written, and with `prune` the documents of files gone
    /// from a changed path removed, as one transaction when the batch fits one ingest batch.
    /// A root that is gone removes nothing, as `sync` refuses a missing path.
    pub fn sync_changes(
        &mut self,
        roots: &[PathBuf],
        changes: &Changes,
        loader: &Loader,
        chunker: &ChunkerSpec,
        prune: bool,
    ) -> Result<ChangesReport> {
        let (present, missing_roots): (Vec<PathBuf>, Vec<PathBuf>) =
            roots.iter().cloned().partition(|r| r.exists());
        let scope: Vec<PathBuf> = match changes {
            Changes::Paths(paths) => paths
                .iter()
                .filter(|p| present.iter().any(|r| within(&normal(p), &normal(r))))
                .cloned()
                .collect(),
            Changes::Everything(_) => present.clone(),
        };
        let mut report = ChangesReport { missing_roots, ..ChangesReport::default() };
        if scope.is_empty() {
            return Ok(report);
        }
        let in_scope = |source: &Source| match source {
            Source::File(p, _) => scope.iter().any(|s| within(&normal(p), &normal(s))),
            Source::Stdin(_) => false,
        };
        let sources = loader.sources(&present)?.into_iter().filter(in_scope).collect();
        let checked = loader.check_all(sources, KEEP_LOADED_BYTES, || {});
        report.failed = checked.failed.iter().map(|(_, e)| e.to_string()).collect();
        report.warnings.clone_from(&checked.warnings);
        let mut plan = self.plan_sync(&scope, checked, loader)?;
        if !prune {
            plan.gone.clear();
        }
        if plan.added.is_empty() && plan.replaced.is_empty() && plan.gone.is_empty() {
            report.sync.unchanged = plan.unchanged;
            return Ok(report);
        }
        report.sync = self.apply_sync(plan, loader, chunker, &mut |_, _, _| {})?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(paths: &[&str]) -> Changes {
        let batch = Batch { paths: paths.iter().map(PathBuf::from).collect(), lost: None };
        batch.into_changes()
    }

    #[test]
    fn a_changed_folder_covers_the_paths_below_it() {
        assert_eq!(
            batch(&["docs/a.md", "docs/sub", "docs/sub/b.md", "docs/sub2/c.md"]),
            Changes::Paths(vec!["docs/a.md".into(), "docs/sub".into(), "docs/sub2/c.md".into()])
        );
    }

    #[test]
    fn events_come_back_as_the_roots_were_given() {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(docs.join(".store")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
        let watch = FolderWatch::new(
            &[docs.clone(), dir.path().join("notes.txt")],
            &[dir.path().join("docs/.store")],
        )
        .unwrap();
        assert_eq!(watch.relate(&docs.join("a.md")), Some(docs.join("a.md")));
        assert_eq!(watch.relate(&docs), Some(docs.clone()));
        assert_eq!(watch.relate(&docs.join(".a.md.swp")), None, "hidden");
        assert_eq!(watch.relate(&docs.join(".git/index")), None, "hidden folder");
        assert_eq!(watch.relate(&dir.path().join("notes.txt")), Some(dir.path().join("notes.txt")));
        assert_eq!(watch.relate(&dir.path().join("other.txt")), None, "beside a file root");
        assert_eq!(watch.relate(&dir.path().join("docs2/a.md")), None);
    }

    #[test]
    fn writes_deletions_and_new_folders_arrive_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("old.md"), "old").unwrap();
        let watch = FolderWatch::new(std::slice::from_ref(&docs), &[]).unwrap();
        let debounce =
            Debounce { quiet: Duration::from_millis(100), max_delay: Duration::from_secs(5) };
        let wait = Some(Duration::from_mins(1));
        // Everything here happens before the batch closes or after: gather until each is seen.
        let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
        let want: BTreeSet<PathBuf> =
            [docs.join("new.md"), docs.join("old.md"), docs.join("sub")].into_iter().collect();
        std::fs::write(docs.join("new.md"), "new").unwrap();
        std::fs::remove_file(docs.join("old.md")).unwrap();
        std::fs::create_dir(docs.join("sub")).unwrap();
        std::fs::write(docs.join("sub/deep.md"), "deep").unwrap();
        while !want.is_subset(&seen) {
            match watch.next_batch(debounce, wait).expect("a batch within a minute") {
                Changes::Paths(paths) => seen.extend(paths),
                Changes::Everything(why) => panic!("events lost: {why}"),
            }
        }
    }

    #[test]
    fn reads_are_not_changes_and_lost_events_rescan_everything() {
        use notify::event::{CreateKind, Flag};
        let dir = tempfile::tempdir().unwrap();
        let watch = FolderWatch::new(&[dir.path().to_path_buf()], &[]).unwrap();
        let file = dir.path().join("a.md");
        let event = |kind| Ok(Event::new(kind).add_path(file.clone()));
        let mut batch = Batch::default();
        for read in [AccessKind::Open(AccessMode::Read), AccessKind::Close(AccessMode::Read)] {
            assert!(!watch.gather(event(EventKind::Access(read)), &mut batch));
        }
        assert!(batch.is_empty());
        let written = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert!(watch.gather(event(written), &mut batch));
        assert!(watch.gather(event(EventKind::Create(CreateKind::File)), &mut batch));
        assert_eq!(batch.paths.len(), 1);
        let lost = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert!(watch.gather(Ok(lost), &mut batch));
        assert!(matches!(batch.into_changes(), Changes::Everything(_)));
    }
}
