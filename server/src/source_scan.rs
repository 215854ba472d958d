//! For tests that hold the code to a rule no type can: the server's product sources, each
//! without its tests.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `server/src`, as (path relative to `src`, product code): the text
/// before the file's `#[cfg(test)]` module, and nothing of a file that is only tests.
pub(crate) fn product_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("the sources are readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    // Modules declared only for tests (`#[cfg(test)] mod fuzz;`) are not product code.
    let mut test_only = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a source file");
        let dir = match f.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => f.parent().expect("a directory").to_path_buf(),
            _ => f.with_extension(""),
        };
        for declared in text.split("#[cfg(test)]\nmod ").skip(1) {
            if let Some(name) = declared.split(';').next().filter(|n| !n.contains(' ')) {
                test_only.push(dir.join(format!("{name}.rs")));
                test_only.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    files
        .into_iter()
        .filter(|f| !test_only.contains(f))
        .filter_map(|f| {
            let name = f.strip_prefix(&root).ok()?.display().to_string();
            let text = std::fs::read_to_string(&f).expect("a source file");
            let product = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            Some((name, product))
        })
        .collect()
}
