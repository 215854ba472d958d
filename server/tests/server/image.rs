//! The OCI image, built without a daemon by `scripts/build-image.sh` (umoci), unpacked and
//! run from its own root filesystem: `lookout --version`, then `lookout demo` as the image's
//! non-root user, answering `/healthz`. Needs root (chroot) and umoci; skipped with the reason
//! elsewhere, but never under CI=true, where `scripts/test.sh` installs umoci.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn can_build_images() -> Result<(), String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&root.stdout).trim() != "0" {
        return Err("chroot needs root".into());
    }
    Command::new("umoci")
        .arg("--version")
        .output()
        .map_err(|_| "umoci is not installed (apt-get install umoci)".to_string())
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_image_runs_lookout_from_its_own_root_filesystem() {
    if let Err(reason) = can_build_images() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the image test must run under CI=true: {reason}"
        );
        eprintln!("skipping the image test: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("image");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/build-image.sh");
    // The debug binary the tests built: the script's default is a release build, which CI
    // would compile a second time for the same check.
    let built = Command::new("bash")
        .arg(&script)
        .args([
            "--binary",
            env!("CARGO_BIN_EXE_lookout"),
            "--tag",
            "test",
            "--output",
        ])
        .arg(&layout)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "build-image.sh: {}",
        String::from_utf8_lossy(&built.stderr)
    );

    let rootfs = dir.path().join("rootfs");
    let unpacked = Command::new("umoci")
        .args(["raw", "unpack", "--image"])
        .arg(format!("{}:test", layout.display()))
        .arg(&rootfs)
        .output()
        .unwrap();
    assert!(
        unpacked.status.success(),
        "{}",
        String::from_utf8_lossy(&unpacked.stderr)
    );
    assert!(
        !rootfs.join("bin/sh").exists() && !rootfs.join("usr/bin/sh").exists(),
        "no shell"
    );
    assert!(rootfs.join("etc/ssl/certs/ca-certificates.crt").exists());

    // The image's configuration: non-root, lookout as the entrypoint.
    let config = Command::new("umoci")
        .args(["stat", "--json", "--image"])
        .arg(format!("{}:test", layout.display()))
        .output()
        .unwrap();
    assert!(config.status.success());
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
        "test"
    );
    let manifest_digest = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(layout.join("blobs/sha256").join(&manifest_digest)).unwrap(),
    )
    .unwrap();
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let image_config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(layout.join("blobs/sha256").join(config_digest)).unwrap(),
    )
    .unwrap();
    assert_eq!(
        image_config["config"]["User"], "65532:65532",
        "{image_config:#}"
    );
    assert_eq!(
        image_config["config"]["Entrypoint"][0],
        "/usr/local/bin/lookout"
    );

    let version = Command::new("chroot")
        .arg(&rootfs)
        .args(["/usr/local/bin/lookout", "--version"])
        .output()
        .unwrap();
    assert!(
        version.status.success(),
        "{}",
        String::from_utf8_lossy(&version.stderr)
    );
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("lookout "));

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut demo = tokio::process::Command::new("chroot")
        .arg("--userspec=65532:65532")
        .arg(&rootfs)
        .args([
            "/usr/local/bin/lookout",
            "demo",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let mut healthy = false;
    for _ in 0..120 {
        if let Ok(r) = reqwest::get(&url).await {
            if r.status() == 200 && r.text().await.unwrap_or_default().trim() == "ok" {
                healthy = true;
                break;
            }
        }
        if let Ok(Some(status)) = demo.try_wait() {
            panic!("lookout demo in the image exited: {status}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    demo.start_kill().unwrap();
    let _ = demo.wait().await;
    assert!(healthy, "lookout demo from the image answered /healthz");
}
