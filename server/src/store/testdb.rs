//! Databases for tests, one of each engine: SQLite in a temporary file, and PostgreSQL in a
//! server this test process starts itself from the installed PostgreSQL programs (`initdb`,
//! then `postgres` on a free loopback port in a temporary directory — no system service is
//! assumed), with a fresh database per test.
//!
//! Without PostgreSQL's programs the PostgreSQL half is skipped with a printed reason, except
//! under `CI=true`, where it fails. `LOOKOUT_PG_BIN` names the directory of the programs when
//! they are not where Debian puts them (`/usr/lib/postgresql/<version>/bin`).
//!
//! The server lives as long as the test process: a shell wrapper stops it and removes its
//! directory when the process's end closes the wrapper's standard input.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use sqlx::Connection;

use super::Db;

/// A test database, open, with what keeps it alive.
pub(crate) struct TestDb {
    pub(crate) db: Db,
    pub(crate) url: String,
    _dir: Option<tempfile::TempDir>,
}

impl std::ops::Deref for TestDb {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}

/// One database of each engine available here, migrated: SQLite first, then PostgreSQL.
pub(crate) async fn engines() -> Vec<TestDb> {
    let mut out = vec![sqlite().await];
    if let Some(url) = postgres_url().await {
        let db = Db::open(&url)
            .await
            .expect("opening the test PostgreSQL database");
        out.push(TestDb {
            db,
            url,
            _dir: None,
        });
    }
    out
}

/// A migrated SQLite database in a temporary directory.
pub(crate) async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let db = Db::open(&url)
        .await
        .expect("opening the test SQLite database");
    TestDb {
        db,
        url,
        _dir: Some(dir),
    }
}

/// The URL of a new, empty database on this process's PostgreSQL server; `None` (with the
/// reason printed) when PostgreSQL is not installed and this is not CI.
pub(crate) async fn postgres_url() -> Option<String> {
    let server = match SERVER.get_or_init(start) {
        Ok(server) => server,
        Err(reason) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "PostgreSQL is needed under CI=true: {reason}"
            );
            eprintln!("skipping the PostgreSQL half of this test: {reason}");
            return None;
        }
    };
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed));
    create_database(server.port, &name).await;
    Some(format!(
        "postgres://lookout@127.0.0.1:{}/{name}",
        server.port
    ))
}

/// Creates database `name` on the server at `port`, waiting for it to accept connections.
async fn create_database(port: u16, name: &str) {
    let admin = format!("postgres://lookout@127.0.0.1:{port}/postgres");
    // The server may still be starting (57P03) for a moment after its port opens.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            let mut conn = sqlx::PgConnection::connect(&admin).await?;
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await?;
            conn.close().await
        };
        match attempt.await {
            Ok(()) => return,
            Err(e) if Instant::now() < deadline => {
                tracing::debug!(error = %e, "the test PostgreSQL server is not ready yet");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a test database on PostgreSQL: {e}"),
        }
    }
}

/// The running server: its port, and the wrapper's input (whose closing stops it) and output.
struct Server {
    port: u16,
    control: Mutex<(ChildStdin, BufReader<ChildStdout>)>,
    _wrapper: Mutex<Child>,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// Where PostgreSQL's programs are: `LOOKOUT_PG_BIN`, else Debian's newest version.
fn programs() -> Result<PathBuf, String> {
    if let Ok(dir) = std::env::var("LOOKOUT_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| {
            "PostgreSQL is not installed (no /usr/lib/postgresql; Debian's package `postgresql`)"
                .to_string()
        })?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no PostgreSQL server programs under /usr/lib/postgresql".to_string())
}

/// PostgreSQL refuses to run as root: as root, the server runs as this user.
fn unprivileged_user() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    Some(if passwd.lines().any(|l| l.starts_with("postgres:")) {
        "postgres"
    } else {
        "nobody"
    })
}

/// A command that runs `program` as the unprivileged user when this process is root.
fn as_server_user(program: &Path) -> Command {
    match unprivileged_user() {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn start() -> Result<Server, String> {
    let bin = programs()?;
    let dir = tempfile::Builder::new()
        .prefix("lookout-pg-")
        .tempdir()
        .map_err(|e| format!("a directory for PostgreSQL: {e}"))?
        .keep();
    if let Some(user) = unprivileged_user() {
        let status = Command::new("chown")
            .arg(user)
            .arg(&dir)
            .status()
            .map_err(|e| format!("chown: {e}"))?;
        if !status.success() {
            return Err(format!("could not give {} to {user}", dir.display()));
        }
    }
    let data = dir.join("data");
    let out = as_server_user(&bin.join("initdb"))
        .args([
            "-U",
            "lookout",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "-D",
        ])
        .arg(&data)
        .output()
        .map_err(|e| format!("running initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("a free port: {e}"))?
        .port();
    let runner = match unprivileged_user() {
        Some(user) => format!("setpriv --reuid={user} --regid={user} --clear-groups -- "),
        None => String::new(),
    };
    // The server in the background, stopped ("stop": a fast shutdown) and started again
    // ("start") on request; when the test process ends, the wrapper's input ends and it
    // stops the server and removes its directory.
    let script = format!(
        "run() {{ {runner}'{postgres}' -D '{data}' -p {port} -c listen_addresses=127.0.0.1 \
           -c unix_socket_directories= -c fsync=off -c synchronous_commit=off \
           -c full_page_writes=off -c max_connections=200 2>>'{dir}/log' & pid=$!; }}; \
         run; echo started; \
         while read cmd; do \
           case $cmd in \
             stop) kill -INT $pid; wait $pid; echo stopped;; \
             start) run; echo started;; \
           esac; \
         done; kill -INT $pid; wait $pid; rm -rf '{dir}'",
        postgres = bin.join("postgres").display(),
        data = data.display(),
        dir = dir.display(),
    );
    let mut wrapper = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting postgres: {e}"))?;
    let stdin = wrapper.stdin.take().expect("piped");
    let mut server = Server {
        port,
        control: Mutex::new((stdin, BufReader::new(wrapper.stdout.take().expect("piped")))),
        _wrapper: Mutex::new(wrapper),
    };
    server.wait_for("started")?;
    server.wait_until_open()?;
    Ok(server)
}

impl Server {
    /// Waits for the wrapper to say `word`.
    fn wait_for(&mut self, word: &str) -> Result<(), String> {
        let control = self.control.get_mut().expect("control lock");
        let mut line = String::new();
        control
            .1
            .read_line(&mut line)
            .map_err(|e| format!("postgres: {e}"))?;
        if line.trim() == word {
            Ok(())
        } else {
            Err(format!("postgres: {line:?} instead of {word:?}"))
        }
    }

    fn wait_until_open(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err("PostgreSQL did not open its port within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn command(&mut self, command: &str, answer: &str) {
        use std::io::Write;
        let control = self.control.get_mut().expect("control lock");
        writeln!(control.0, "{command}").expect("the wrapper reads");
        self.wait_for(answer).expect("the wrapper answers");
    }
}

/// A PostgreSQL server of one test's own, which it may stop and start again.
pub(crate) struct OwnServer {
    server: Server,
}

impl OwnServer {
    /// A new server with an empty database `lookout`; `None` (with the reason printed) as
    /// [`postgres_url`].
    pub(crate) async fn start() -> Option<OwnServer> {
        let server = match tokio::task::spawn_blocking(start).await.expect("joins") {
            Ok(server) => server,
            Err(reason) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "PostgreSQL is needed under CI=true: {reason}"
                );
                eprintln!("skipping this test: {reason}");
                return None;
            }
        };
        create_database(server.port, "lookout").await;
        Some(OwnServer { server })
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://lookout@127.0.0.1:{}/lookout", self.server.port)
    }

    /// Stops the server (a fast shutdown: sessions are cut, nothing committed is lost).
    pub(crate) async fn stop(&mut self) {
        tokio::task::block_in_place(|| self.server.command("stop", "stopped"));
    }

    /// Starts it again and waits until it listens.
    pub(crate) async fn start_again(&mut self) {
        tokio::task::block_in_place(|| {
            self.server.command("start", "started");
            self.server
                .wait_until_open()
                .expect("PostgreSQL listens again");
        });
    }
}
