//! A small block-style YAML writer for JSON values: Kubernetes manifests are plain maps, lists
//! and scalars, so a full YAML library is not needed. Strings that could read as anything but
//! a string (numbers, booleans, `null`, `$(VAR)`, `500m`, ...) are written double-quoted in
//! JSON's escaping, which YAML's double-quoted style accepts unchanged.
//! Keys come out in the map's order: sorted, as serde_json's default map keeps them (the
//! tests pin that order; a workspace-wide `preserve_order` would change it).

use serde_json::Value;
use std::fmt::Write;

/// One YAML document (no `---`), ending in a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => list(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A value after `key:` or `- `: inline when it is a scalar or empty, else on the next lines.
fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn map(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    for (i, (k, v)) in m.iter().enumerate() {
        // The first key of a list item follows its `- ` on the same line.
        if i > 0 || indent == 0 || !out.ends_with("- ") {
            pad(out, indent);
        }
        out.push_str(&string(k));
        out.push(':');
        value_after(out, v, indent);
    }
}

fn list(out: &mut String, a: &[Value], indent: usize) {
    for v in a {
        pad(out, indent);
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push_str("- ");
                map(out, m, indent + 2)
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push_str("-\n");
                list(out, inner, indent + 2);
            }
            other => {
                out.push_str("- ");
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn value_after(out: &mut String, v: &Value, indent: usize) {
    if !is_block(v) {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
        return;
    }
    out.push('\n');
    match v {
        Value::Object(m) => map(out, m, indent + 2),
        // Lists under a key sit at the key's indentation (kubectl's own style).
        Value::Array(a) => list(out, a, indent),
        _ => unreachable!("is_block is true only for maps and lists"),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Words YAML 1.1 readers (still common) take for booleans or null.
const RESERVED: &[&str] = &[
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~",
];

fn string(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        return s.to_string();
    }
    let mut q = String::with_capacity(s.len() + 2);
    // serde_json's string escaping is valid YAML double-quoted escaping.
    let _ = write!(q, "{}", Value::String(s.to_string()));
    q
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::json;

    #[test]
    fn nested_maps_and_lists_in_block_style() {
        let v = json!({
            "apiVersion": "v1",
            "metadata": {"name": "t", "labels": {"app.kubernetes.io/name": "volley"}},
            "spec": {"containers": [{"name": "c", "args": ["run", "--name", "agent-$(I)"]}],
                     "empty": {}, "none": []},
        });
        assert_eq!(
            to_yaml(&v),
            "apiVersion: v1\n\
             metadata:\n  labels:\n    app.kubernetes.io/name: volley\n  name: t\n\
             spec:\n  containers:\n  - args:\n    - run\n    - \"--name\"\n    - \"agent-$(I)\"\n\
             \x20   name: c\n\x20 empty: {}\n  none: []\n"
        );
    }

    #[test]
    fn strings_that_would_read_as_other_types_are_quoted() {
        let v = json!({"a": "1", "b": "500m", "c": "true", "d": "No", "e": "x: y",
                       "f": "line\nbreak", "g": 3, "h": false, "i": "0.0.0.0:6565", "j": ""});
        assert_eq!(
            to_yaml(&v),
            "a: \"1\"\nb: \"500m\"\nc: \"true\"\nd: \"No\"\ne: \"x: y\"\n\
             f: \"line\\nbreak\"\ng: 3\nh: false\ni: \"0.0.0.0:6565\"\nj: \"\"\n"
        );
    }

    #[test]
    fn lists_of_lists_and_scalars() {
        let v = json!({"l": [[1, 2], "x", {"k": [ "v" ]}]});
        assert_eq!(to_yaml(&v), "l:\n-\n  - 1\n  - 2\n- x\n- k:\n  - v\n");
    }
}
