//! Just enough of Kubernetes' protobuf encoding to read what `kubectl create namespace` sends:
//! the `k8s\0` envelope and an object whose only content is its metadata. Anything richer is
//! refused with 415, naming the content type.

use serde_json::{json, Map, Value};

const MAGIC: &[u8] = b"k8s\0";

/// Reads one varint; returns it and the bytes consumed.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The length-delimited fields of a message, as (field number, bytes); scalar fields are
/// skipped, and None means the message is malformed.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (tag, n) = varint(buf)?;
        buf = &buf[n..];
        match tag & 7 {
            0 => {
                let (_, n) = varint(buf)?;
                buf = &buf[n..];
                continue;
            }
            1 => {
                buf = buf.get(8..)?;
                continue;
            }
            5 => {
                buf = buf.get(4..)?;
                continue;
            }
            2 => {}
            _ => return None,
        }
        let (len, n) = varint(buf)?;
        let len = usize::try_from(len).ok()?;
        let body = buf.get(n..n + len)?;
        out.push((tag >> 3, body));
        buf = &buf[n + len..];
    }
    Some(out)
}

fn string(b: &[u8]) -> Option<Value> {
    Some(json!(std::str::from_utf8(b).ok()?))
}

fn string_map(entries: &[&[u8]]) -> Option<Value> {
    let mut m = Map::new();
    for e in entries {
        let f = fields(e)?;
        let key = f
            .iter()
            .find(|(n, _)| *n == 1)
            .map(|(_, b)| *b)
            .unwrap_or_default();
        let val = f
            .iter()
            .find(|(n, _)| *n == 2)
            .map(|(_, b)| *b)
            .unwrap_or_default();
        m.insert(std::str::from_utf8(key).ok()?.to_string(), string(val)?);
    }
    Some(Value::Object(m))
}

/// Decodes a protobuf body into the JSON object it stands for, or explains why not.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let unsupported = || {
        "kubesim reads protobuf only for objects that carry nothing but metadata (kubectl create namespace); send JSON".to_string()
    };
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf envelope")?;
    let unknown = fields(rest).ok_or_else(unsupported)?;
    let mut obj = Map::new();
    let mut raw: &[u8] = &[];
    for (n, b) in unknown {
        match n {
            1 => {
                for (tn, tb) in fields(b).ok_or_else(unsupported)? {
                    let key = if tn == 1 { "apiVersion" } else { "kind" };
                    obj.insert(key.into(), string(tb).ok_or_else(unsupported)?);
                }
            }
            2 => raw = b,
            _ => {}
        }
    }
    let mut metadata = Map::new();
    for (n, b) in fields(raw).ok_or_else(unsupported)? {
        if n != 1 {
            // A spec or status with content (a Namespace's are empty, or just a phase).
            if fields(b).is_none_or(|f| f.iter().any(|(_, inner)| !inner.is_empty() && n == 2)) {
                return Err(unsupported());
            }
            continue;
        }
        let meta = fields(b).ok_or_else(unsupported)?;
        let (mut labels, mut annotations) = (Vec::new(), Vec::new());
        for (mn, mb) in meta {
            match mn {
                1 => metadata.insert("name".into(), string(mb).ok_or_else(unsupported)?),
                2 => metadata.insert("generateName".into(), string(mb).ok_or_else(unsupported)?),
                3 => metadata.insert("namespace".into(), string(mb).ok_or_else(unsupported)?),
                11 => {
                    labels.push(mb);
                    None
                }
                12 => {
                    annotations.push(mb);
                    None
                }
                _ => None,
            };
        }
        if !labels.is_empty() {
            metadata.insert(
                "labels".into(),
                string_map(&labels).ok_or_else(unsupported)?,
            );
        }
        if !annotations.is_empty() {
            metadata.insert(
                "annotations".into(),
                string_map(&annotations).ok_or_else(unsupported)?,
            );
        }
    }
    obj.insert("metadata".into(), Value::Object(metadata));
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::decode;
    use serde_json::json;

    fn ld(field: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![(field << 3) | 2, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn reads_a_namespace_that_kubectl_create_sends() {
        let type_meta = [ld(1, b"v1"), ld(2, b"Namespace")].concat();
        let meta = [
            ld(1, b"acme"),
            ld(11, &[ld(1, b"team"), ld(2, b"a")].concat()),
        ]
        .concat();
        let raw = [ld(1, &meta), ld(2, b""), ld(3, b"")].concat();
        let body = [b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, &raw)].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme", "labels": {"team": "a"}}})
        );
    }

    #[test]
    fn refuses_objects_with_a_spec() {
        let raw = [ld(1, &ld(1, b"x")), ld(2, &ld(1, b"data"))].concat();
        let body = [b"k8s\0".to_vec(), ld(2, &raw)].concat();
        assert!(decode(&body).is_err());
    }
}
