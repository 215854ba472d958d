//! Text → [`Config`]: TOML, then the environment overrides, then serde, then
//! `Config::validate`. Every unknown key and every wrong value is reported, not just the
//! first: each one serde finds is noted with its path, taken out of the document, and the
//! document read again.

use std::fmt;
use std::path::Path;

use serde_path_to_error::Segment;

use super::Config;

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key, e.g. `clusters[1].context` or `LOOKOUT_LISTEN`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// Every problem found, for `check-config` and a refused `serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.0 {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

pub(super) fn problem(key: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        key: key.into(),
        message: message.into(),
    }
}

impl Config {
    /// Parses TOML text and the given environment; every problem is reported.
    pub fn parse(text: &str, env: &[(String, String)]) -> Result<Config, Problems> {
        let mut doc: toml::Table = text
            .parse()
            .map_err(|e| Problems(vec![problem("(file)", format!("not valid TOML: {e}"))]))?;
        let mut problems = Vec::new();
        super::env::apply(&mut doc, env, &mut problems);
        let mut removed = Removed::default();
        let config = read(doc, &mut removed, &mut problems);
        // What is left after taking out the wrong values is checked too, so one run reports
        // as much as it can; keys name the entries as the file numbers them.
        if let Some(Err(Problems(more))) = config.as_ref().map(Config::validate) {
            problems.extend(more.into_iter().map(|p| Problem {
                key: removed.original(&p.key),
                ..p
            }));
        }
        match config {
            Some(config) if problems.is_empty() => Ok(config),
            _ => Err(Problems(problems)),
        }
    }

    /// Reads and parses a file with the process environment.
    pub fn load(path: &Path) -> Result<Config, Problems> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Problems(vec![problem(
                "(file)",
                format!("cannot read {}: {e}", path.display()),
            )])
        })?;
        let env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("LOOKOUT_"))
            .collect();
        Config::parse(&text, &env)
    }
}

/// Deserializes `doc`, noting every unknown key and wrong value in `out`. Each one is taken
/// out and the document read again: a wrong optional value leaves its default, a wrong
/// required one takes its whole entry (a `[[clusters]]` table, say) with it. None when
/// nothing is left to read.
fn read(mut doc: toml::Table, removed: &mut Removed, out: &mut Vec<Problem>) -> Option<Config> {
    loop {
        let error = match serde_path_to_error::deserialize(toml::Value::Table(doc.clone())) {
            Ok(config) => return Some(config),
            Err(e) => e,
        };
        let mut segments: Vec<Segment> = error.path().iter().cloned().collect();
        let message = error.inner().message().trim().to_string();
        if let Some(field) = missing_field(&message) {
            let mut key = segments.clone();
            key.push(Segment::Map { key: field });
            let key = removed.original(&segments_key(&key));
            // Reported as wrong already when it was taken out; else it was never there.
            if !out.iter().any(|p| p.key == key) {
                out.push(problem(key, "missing (required)"));
            }
        } else {
            let message = match unknown_field(&message) {
                Some((field, expected)) => {
                    if !matches!(segments.last(), Some(Segment::Map { key }) if *key == field) {
                        segments.push(Segment::Map { key: field });
                    }
                    format!("unknown key (expected one of: {expected})")
                }
                None => message,
            };
            out.push(problem(removed.original(&segments_key(&segments)), message));
        }
        if !removed.remove(&mut doc, &segments) {
            return None;
        }
    }
}

/// The entries of arrays taken out while reading, so that later keys still name entries as
/// the file numbers them: by the array's key (`clusters`), the file's indices.
#[derive(Debug, Default)]
struct Removed(std::collections::BTreeMap<String, Vec<usize>>);

impl Removed {
    /// `key` (`access[1].role`) with every index as it was in the file.
    fn original(&self, key: &str) -> String {
        let mut out = String::new();
        let mut rest = key;
        while let Some(open) = rest.find('[') {
            let Some(close) = rest[open..].find(']').map(|c| open + c) else {
                break;
            };
            out.push_str(&rest[..open]);
            let array = out.clone();
            match rest[open + 1..close].parse::<usize>() {
                Ok(index) => out.push_str(&format!("[{}]", self.file_index(&array, index))),
                Err(_) => out.push_str(&rest[open..=close]),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }

    /// The file's index of what is now entry `index` of `array`.
    fn file_index(&self, array: &str, index: usize) -> usize {
        let mut original = index;
        for r in self.0.get(array).map(Vec::as_slice).unwrap_or_default() {
            if *r <= original {
                original += 1;
            }
        }
        original
    }

    /// Removes the value at `segments` from `doc`, remembering a removed array entry; false
    /// when there is none.
    fn remove(&mut self, doc: &mut toml::Table, segments: &[Segment]) -> bool {
        let mut root = toml::Value::Table(std::mem::take(doc));
        let removed = take(&mut root, segments);
        if let toml::Value::Table(t) = root {
            *doc = t;
        }
        if removed {
            if let Some((Segment::Seq { index }, parent)) = segments.split_last() {
                let array = self.original(&segments_key(parent));
                let original = self.file_index(&array, *index);
                let list = self.0.entry(array).or_default();
                list.push(original);
                list.sort_unstable();
            }
        }
        removed
    }
}

/// Removes the value at `segments` under `value`; false when there is none.
fn take(value: &mut toml::Value, segments: &[Segment]) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return false;
    };
    match (value, first) {
        (toml::Value::Table(t), Segment::Map { key }) => {
            if rest.is_empty() {
                t.remove(key).is_some()
            } else {
                t.get_mut(key).is_some_and(|v| take(v, rest))
            }
        }
        (toml::Value::Array(a), Segment::Seq { index }) if *index < a.len() => {
            if rest.is_empty() {
                a.remove(*index);
                true
            } else {
                take(&mut a[*index], rest)
            }
        }
        _ => false,
    }
}

/// `("kube_config", "name, kubeconfig, …")` from serde's "unknown field `kube_config`,
/// expected one of `name`, `kubeconfig`, …".
fn unknown_field(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .trim_start_matches(',')
        .trim()
        .trim_start_matches("expected one of ")
        .trim_start_matches("expected ")
        .replace('`', "")
        .replace(" or ", ", ");
    Some((field.to_string(), expected))
}

/// `name` from serde's "missing field `name`".
fn missing_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("missing field `")?;
    Some(rest.split_once('`')?.0.to_string())
}

/// `clusters[0].name`, as serde_path_to_error writes a path.
fn segments_key(segments: &[Segment]) -> String {
    let mut key = String::new();
    for s in segments {
        match s {
            Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            Segment::Map { key: k } => {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(k);
            }
            Segment::Enum { variant } => {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(variant);
            }
            Segment::Unknown => key.push_str(".?"),
        }
    }
    key
}
