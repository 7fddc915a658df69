//! Names that reach the terminal (metric names, tags, checks, groups, URLs, test names) are
//! shown with control characters escaped: a crafted result file or script cannot send ESC or
//! BEL to the user's terminal through `summary`, `compare`, `run` or `history`.

mod common;
use common::*;
use serde_json::Value;

const HOSTILE: &str = "\u{1b}[31m\u{7}";

/// No ESC, BEL or other control byte besides newlines in `out`.
fn assert_no_raw_control(what: &str, out: &[u8]) {
    let bad: Vec<u8> = out
        .iter()
        .copied()
        .filter(|b| b.is_ascii_control() && *b != b'\n')
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control bytes {bad:?} in\n{}",
        String::from_utf8_lossy(out)
    );
    assert!(
        String::from_utf8_lossy(out).contains("\\x1b[31m\\x07"),
        "{what}: the name is shown, escaped:\n{}",
        String::from_utf8_lossy(out)
    );
}

#[test]
fn control_characters_in_names_are_escaped_in_terminal_output() {
    let t = target();
    let dir = scratch("escaping");
    // The script's own file name, a check, a group and a tag value carry ESC and BEL.
    let script = dir.join(format!("{HOSTILE}.js"));
    std::fs::write(
        &script,
        format!(
            "import http from 'k6/http';\nimport {{ check, group }} from 'k6';\n\
             export default function () {{\n\
               group('g{HOSTILE}', () => {{\n\
                 const r = http.get('{}/', {{ tags: {{ name: 'n{HOSTILE}' }} }});\n\
                 check(r, {{ 'c{HOSTILE}': (r) => r.status === 200 }});\n\
               }});\n}}\n",
            t.url()
        ),
    )
    .unwrap();
    let save = dir.join("run.json");
    let db = dir.join("h.db");
    let o = run(&[
        "run",
        script.to_str().unwrap(),
        "-i",
        "3",
        "--quiet",
        "--save",
        save.to_str().unwrap(),
        "--history",
        db.to_str().unwrap(),
        "--threshold",
        &format!("http_req_duration{{name:n{HOSTILE}}}:max<60000"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&save).unwrap();
    assert!(
        text.contains("\\u001b[31m\\u0007"),
        "the file keeps the names as they are"
    );

    // `full` and `legacy`: the layouts that name groups too.
    for mode in ["full", "legacy"] {
        let o = run(&["summary", save.to_str().unwrap(), "--summary-mode", mode]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_no_raw_control("summary (script mode)", &o.stdout);
        for c in [format!("c{HOSTILE}"), format!("g{HOSTILE}")] {
            let esc = c.replace('\u{1b}', "\\x1b").replace('\u{7}', "\\x07");
            assert!(stdout(&o).contains(&esc), "{esc} in {}", stdout(&o));
        }
    }

    // Quick mode: the URL, a status code and an error class from a crafted file.
    let q = dir.join("q.json");
    let url = format!("{}/", t.url());
    let o = run(&[
        "http",
        &url,
        "-n",
        "20",
        "-c",
        "1",
        "--quiet",
        "--save",
        q.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&q).unwrap()).unwrap();
    v["meta"]["name"] = Value::from(format!("http://x/{HOSTILE}"));
    for m in v["metrics"].as_array_mut().unwrap() {
        if m["name"] == "http_reqs" {
            m["tags"]["status"] = Value::from(format!("200{HOSTILE}"));
        }
    }
    let crafted = dir.join("crafted.json");
    std::fs::write(&crafted, serde_json::to_string(&v).unwrap()).unwrap();
    let o = run(&["summary", crafted.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_no_raw_control("summary (quick mode)", &o.stdout);

    // compare (text and Markdown), its stderr note included; the history listing.
    let (a, b) = (crafted.to_str().unwrap(), save.to_str().unwrap());
    for extra in [&[][..], &["--markdown"][..]] {
        let mut args = vec!["compare", a, a];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_no_raw_control(&format!("compare {extra:?}"), &o.stdout);
    }
    let o = run(&["compare", b, a]);
    assert_no_raw_control("compare's note", &o.stderr);
    let o = run(&["history", "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_no_raw_control("history", &o.stdout);
    t.shutdown();
}
