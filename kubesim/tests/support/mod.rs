//! kubectl against a simulated cluster: the test helper of `kubectl.rs` and
//! `authorization.rs`. Skipped with a message where kubectl is not installed, except under
//! CI=true, where a missing kubectl fails the suite.

#![allow(dead_code)] // each test file uses its own part of the helper

pub mod sim;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubesim::{Clock, Fleet, FleetOptions};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub struct Kubectl {
    pub dir: tempfile::TempDir,
    pub fleet: Fleet,
    _stop: tokio_util::sync::DropGuard,
}

pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

fn kubectl_available() -> bool {
    let found = std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("kubectl is required under CI=true but was not found on PATH");
        }
        eprintln!("skipping: kubectl is not installed");
    }
    found
}

impl Kubectl {
    /// One cluster without CRDs.
    pub async fn start() -> Option<Kubectl> {
        let mut opts = FleetOptions::numbered(1);
        opts.install_crds = false;
        Self::start_with(opts).await
    }

    /// A fleet started with `opts`; kubectl's context is its first cluster.
    pub async fn start_with(opts: FleetOptions) -> Option<Kubectl> {
        if !kubectl_available() {
            return None;
        }
        let token = CancellationToken::new();
        let fleet = Fleet::start(&opts, Arc::new(Clock::Real), token.clone())
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        fleet
            .write_kubeconfig(&dir.path().join("kubeconfig"))
            .unwrap();
        Some(Kubectl {
            dir,
            fleet,
            _stop: token.drop_guard(),
        })
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        let out = tokio::time::timeout(Duration::from_secs(30), self.command(args).output())
            .await
            .expect("kubectl finished within 30 s")
            .unwrap();
        Output {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(out.ok, "kubectl {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// Runs kubectl, which must fail saying `expected`.
    pub async fn refused(&self, args: &[&str], expected: &str) {
        let out = self.run(args).await;
        assert!(!out.ok, "kubectl {args:?} succeeded: {}", out.stdout);
        assert!(
            out.stderr.contains(expected),
            "kubectl {args:?} did not say {expected:?}: {}",
            out.stderr
        );
    }

    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    }
}
