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

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
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
    let admin = format!("postgres://lookout@127.0.0.1:{}/postgres", server.port);
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
            Ok(()) => break,
            Err(e) if Instant::now() < deadline => {
                tracing::debug!(error = %e, "the test PostgreSQL server is not ready yet");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("creating a test database on PostgreSQL: {e}"),
        }
    }
    Some(format!(
        "postgres://lookout@127.0.0.1:{}/{name}",
        server.port
    ))
}

/// The running server: its port, and the wrapper's input, whose closing stops it.
struct Server {
    port: u16,
    _stdin: Mutex<ChildStdin>,
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
        Some(user) => format!("runuser -u {user} -- "),
        None => String::new(),
    };
    // The server in the background; when the test process ends, `cat` sees the end of its
    // input and the wrapper stops the server and removes its directory.
    let script = format!(
        "{runner}'{postgres}' -D '{data}' -p {port} -c listen_addresses=127.0.0.1 \
         -c unix_socket_directories= -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=200 & pid=$!; \
         echo started; cat >/dev/null; kill $pid; wait $pid; rm -rf '{dir}'",
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
    let mut line = String::new();
    let mut stdout = BufReader::new(wrapper.stdout.take().expect("piped"));
    stdout
        .read_line(&mut line)
        .map_err(|e| format!("starting postgres: {e}"))?;
    std::thread::spawn(move || {
        let _ = stdout.read_to_end(&mut Vec::new());
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("PostgreSQL did not open its port within 30 s".into());
        }
        if let Ok(Some(status)) = wrapper.try_wait() {
            return Err(format!("PostgreSQL stopped at start ({status})"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server {
        port,
        _stdin: Mutex::new(stdin),
        _wrapper: Mutex::new(wrapper),
    })
}
