//! docs/volley-suite.schema.json stays true: for each table of the suite file, the schema's
//! properties, the keys docs/suite.md documents and the keys the parser accepts (read from
//! serde's "expected one of" list) are the same set; and the example suites pass the check.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("docs/volley-suite.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn props(v: &serde_json::Value) -> BTreeSet<String> {
    v["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// The keys the parser accepts in a table, from the error on an unknown key there.
fn accepted(toml_with_zzz: &str) -> BTreeSet<String> {
    let dir = volley_testkit::scratch("volley-schema", "t");
    let p = dir.join(format!("{}.toml", toml_with_zzz.len()));
    std::fs::write(&p, toml_with_zzz).unwrap();
    let e = volley_suite::file::read(&p).err().expect("zzz is refused");
    assert!(e.msg.contains("unknown field `zzz`"), "{e}");
    e.msg
        .split("expected one of ")
        .nth(1)
        .or_else(|| e.msg.split("expected ").nth(1))
        .unwrap()
        .split(", ")
        .map(|k| k.trim().trim_matches('`').to_string())
        .collect()
}

/// Keys in the first column of the tables under `### heading` in docs/suite.md (`a.b` keeps
/// its first part; "`x`, `y`" is two keys).
fn documented(heading: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("docs/suite.md")).unwrap();
    let start = text
        .find(&format!("\n### {heading}"))
        .unwrap_or_else(|| panic!("{heading}"));
    let rest = &text[start + 1..];
    let end = rest[4..].find("\n### ").map_or(rest.len(), |i| i + 4);
    let mut keys = BTreeSet::new();
    for line in rest[..end].lines().filter(|l| l.starts_with("| `")) {
        let cell = line.split('|').nth(1).unwrap();
        for k in cell.split(',') {
            let k = k.trim().trim_matches('`');
            let k = k.split(" = ").next().unwrap();
            keys.insert(k.split('.').next().unwrap().to_string());
        }
    }
    keys
}

#[test]
fn schema_docs_and_parser_agree_on_every_key() {
    let s = schema();
    let d = &s["$defs"];
    let tables: BTreeMap<&str, (BTreeSet<String>, &str, BTreeSet<String>)> = [
        ("top", (props(&s), "zzz = 1\n", documented("Top level"))),
        (
            "service",
            (
                props(&d["service"]),
                "[services.a]\nzzz = 1\n",
                documented("Services"),
            ),
        ),
        (
            "profile",
            (
                props(&d["profile"]),
                "[profiles.a]\nzzz = 1\n",
                documented("Profiles"),
            ),
        ),
        (
            "outputs",
            (
                props(&d["outputs"]),
                "[outputs]\nzzz = 1\n",
                documented("`[outputs]`"),
            ),
        ),
    ]
    .into_iter()
    .collect();
    for (name, (schema_keys, toml, doc_keys)) in &tables {
        assert_eq!(schema_keys, &accepted(toml), "{name}: schema vs parser");
        assert_eq!(schema_keys, doc_keys, "{name}: schema vs docs/suite.md");
    }
    // Steps are documented in several tables (every step, run, http, command and sql).
    let step = props(&d["step"]);
    assert_eq!(
        step,
        accepted("[[seed]]\nzzz = 1\n"),
        "step: schema vs parser"
    );
    assert_eq!(step, documented("Steps"), "step: schema vs docs/suite.md");
    // `bench = { ... }` keys.
    let bench = props(&d["bench"]);
    assert_eq!(
        bench,
        accepted("[[seed]]\nbench = { zzz = 1 }\n"),
        "bench: schema vs parser"
    );
    assert_eq!(bench, documented("Bench steps"), "bench: schema vs docs");
    // `find_max_rate = { ... }` keys.
    let search = props(&d["find_max_rate"]);
    assert_eq!(
        search,
        accepted("[[seed]]\nfind_max_rate = { zzz = 1 }\n"),
        "find_max_rate: schema vs parser"
    );
    assert_eq!(
        search,
        documented("Capacity steps"),
        "find_max_rate: schema vs docs"
    );
    // `ready.*` keys.
    let ready = props(&d["service"]["properties"]["ready"]);
    assert_eq!(ready, accepted("[services.a.ready]\nzzz = 1\n"));
}

#[test]
fn the_example_suites_pass_the_check() {
    for dir in ["examples/suites/drive", "examples/suites/ab"] {
        let p = volley_suite::file::locate(Some(&root().join(dir)));
        let s = volley_suite::runner::load(&p).unwrap_or_else(|e| panic!("{dir}: {e:?}"));
        for p in ["smoke", "load"] {
            assert!(!s.profiles[p].is_empty(), "{dir}: {p}");
        }
    }
}
