//! RFC 6902 JSON Patch (`application/json-patch+json`): add, remove, replace, move, copy, test.

use serde_json::Value;

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split(pointer: &str) -> Result<(String, String), String> {
    let idx = pointer
        .rfind('/')
        .ok_or_else(|| format!("invalid JSON pointer {pointer:?}"))?;
    Ok((pointer[..idx].to_string(), unescape(&pointer[idx + 1..])))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let idx = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| format!("invalid array index {last:?}"))?
            };
            if idx > a.len() {
                return Err(format!("array index {idx} out of bounds"));
            }
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(format!("path {parent:?} does not exist")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    match doc.pointer_mut(&parent) {
        Some(Value::Object(m)) => m
            .remove(&last)
            .ok_or_else(|| format!("path {path:?} does not exist")),
        Some(Value::Array(a)) => {
            let idx = last
                .parse::<usize>()
                .map_err(|_| format!("invalid array index {last:?}"))?;
            if idx >= a.len() {
                return Err(format!("array index {idx} out of bounds"));
            }
            Ok(a.remove(idx))
        }
        _ => Err(format!("path {parent:?} does not exist")),
    }
}

/// Applies the operations in order; any failure rejects the whole patch.
pub fn apply(mut doc: Value, patch: &Value) -> Result<Value, String> {
    let ops = patch
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    for op in ops {
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or("an operation needs a \"path\"")?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| format!("operation on {path:?} needs a \"value\""))
        };
        match op.get("op").and_then(Value::as_str) {
            Some("add") => add(&mut doc, path, value()?)?,
            Some("remove") => {
                remove(&mut doc, path)?;
            }
            Some("replace") => {
                remove(&mut doc, path)?;
                add(&mut doc, path, value()?)?;
            }
            Some("move") => {
                let from = op
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or("move needs \"from\"")?;
                let v = remove(&mut doc, from)?;
                add(&mut doc, path, v)?;
            }
            Some("copy") => {
                let from = op
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or("copy needs \"from\"")?;
                let v = doc
                    .pointer(from)
                    .cloned()
                    .ok_or_else(|| format!("path {from:?} does not exist"))?;
                add(&mut doc, path, v)?;
            }
            Some("test") => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(format!("test failed at {path:?}"));
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::apply;
    use serde_json::json;

    #[test]
    fn operations_apply_in_order_and_escape_slashes() {
        let doc = json!({"metadata": {"annotations": {"a/b": "1"}}, "list": [1, 2]});
        let out = apply(
            doc,
            &json!([
                {"op": "replace", "path": "/metadata/annotations/a~1b", "value": "2"},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "remove", "path": "/list/0"},
                {"op": "test", "path": "/list", "value": [2, 3]}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"annotations": {"a/b": "2"}}, "list": [2, 3]})
        );
    }

    #[test]
    fn a_failing_test_rejects_the_patch() {
        assert!(apply(
            json!({"a": 1}),
            &json!([{"op": "test", "path": "/a", "value": 2}])
        )
        .is_err());
    }
}
