//! `volley run` behaving as k6 decides (issue #13, sections 5 and 6): module paths relative to
//! the importing module, `handleSummary` outputs, setup/teardown groups, zero durations, and
//! the per-response body cap.

mod common;

use common::{stderr, stdout, volley};
use std::path::Path;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A tree where the wrong resolution finds a different file than the right one: every
/// `lib.js` and `data.txt` says where it is.
fn module_tree(name: &str) -> std::path::PathBuf {
    let d = common::scratch(name);
    for dir in ["", "a/", "a/b/"] {
        write(
            &d,
            &format!("{dir}lib.js"),
            &format!("export const who = 'lib@{dir}';"),
        );
    }
    for dir in ["a/b/", "x/y/", "lib/"] {
        write(&d, &format!("{dir}data.txt"), &format!("data@{dir}"));
    }
    write(
        &d,
        "x/y/z.js",
        "export const z = 'z@x/y/';\nexport const data = open('./data.txt');\n",
    );
    // A re-export across folders: lib/re.js names ../x/y/z.js relative to itself.
    write(&d, "lib/re.js", "export * from '../x/y/z.js';\n");
    write(
        &d,
        "lib/helper.js",
        "export function readIt(p) { return open(p); }\n",
    );
    write(
        &d,
        "lib/c.js",
        "module.exports = { d: open('./data.txt') };\n",
    );
    write(
        &d,
        "x/y/w.js",
        "const zz = require('./z.js');\nexport const viaRequire = zz.z;\n",
    );
    write(
        &d,
        "a/b/main.js",
        r#"import { who } from '../../lib.js';
import { z, data } from '../../lib/re.js';
import { readIt } from '../../lib/helper.js';
import { viaRequire } from '../../x/y/w.js';
const c = require('../../lib/c.js');
const helper = readIt('./data.txt');
export const options = { iterations: 1, vus: 1 };
export default function () {}
export function handleSummary() {
  return { stdout: [who, z, data, helper, c.d, viaRequire].join('|') };
}
"#,
    );
    d
}

/// k6 resolves imports (and re-exports) against the importing module and `open()` against
/// the module whose init code runs (the file being `require()`d, else the bottom frame), from
/// whatever directory the run starts in. Before: `../../lib.js` from `a/b/main.js` run in
/// `a/b` was normalised to `lib.js` (the wrong file), `lib/re.js`'s `../x/y/z.js` failed,
/// and `open()` in `x/y/z.js` read `a/b/data.txt`.
#[test]
fn imports_and_open_resolve_relative_to_the_module_from_any_directory() {
    let d = module_tree("modres");
    let want = "lib@|z@x/y/|data@x/y/|data@a/b/|data@lib/|z@x/y/";
    for (cwd, arg) in [
        (d.join("a/b"), "main.js".to_string()),
        (d.join("a"), "b/main.js".to_string()),
        (d.clone(), "./a/b/main.js".to_string()),
        (
            std::env::temp_dir(),
            d.join("a/b/main.js").to_string_lossy().into_owned(),
        ),
    ] {
        let o = volley()
            .current_dir(&cwd)
            .args(["run", "-q", &arg])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{arg}: {}", stderr(&o));
        assert_eq!(stdout(&o), want, "run {arg} in {}", cwd.display());
    }
}

/// `volley run -d 0s` used to run "2 iterations shared among 2 VUs"; k6 refuses the
/// configuration with exit 104, and so does `options.duration: '0s'`.
#[test]
fn zero_duration_exits_104_as_k6() {
    let d = common::scratch("zero-dur");
    write(&d, "nop.js", "export default function () {}\n");
    write(
        &d,
        "d0.js",
        "export const options = { vus: 2, duration: '0s' };\nexport default function () {}\n",
    );
    for args in [
        vec!["run", "-q", "-u", "2", "-d", "0s", "nop.js"],
        vec!["run", "-q", "d0.js"],
    ] {
        let o = volley().current_dir(&d).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(104), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("`duration` option should be more than 0"),
            "{}",
            stderr(&o)
        );
        assert!(!stdout(&o).contains("iterations"), "{}", stdout(&o));
    }
}

/// An output that cannot be written (here a path under a regular file) no longer stops the
/// ones after it: as k6, every output is tried, the failures are reported together and the
/// exit code stays k6's (0).
#[test]
fn handle_summary_write_error_does_not_stop_the_other_outputs() {
    let d = common::scratch("hs-write");
    write(&d, "blocker", "a file, not a directory");
    write(
        &d,
        "hs.js",
        r#"export const options = { iterations: 1 };
export default function () {}
export function handleSummary() {
  return { 'blocker/x.txt': 'lost', 'ok.txt': 'kept', stdout: 'S', 'b.bin': new Uint8Array([104, 105]) };
}
"#,
    );
    let o = volley()
        .current_dir(&d)
        .args(["run", "hs.js"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&o), "S");
    assert_eq!(std::fs::read_to_string(d.join("ok.txt")).unwrap(), "kept");
    assert_eq!(std::fs::read_to_string(d.join("b.bin")).unwrap(), "hi");
    assert!(
        err.contains("could not save some summary information")
            && err.contains("could not write 'blocker/x.txt'"),
        "{err}"
    );
}

/// k6 accepts only a string or an ArrayBuffer per output and writes nothing when one is
/// anything else; Volley used to print `42`. The error names the key and the type, and the
/// default summary is shown instead (as for a throwing handleSummary).
#[test]
fn handle_summary_rejects_non_string_values() {
    let d = common::scratch("hs-types");
    for (value, kind) in [("42", "number"), ("{ a: 1 }", "object"), ("null", "null")] {
        write(
            &d,
            "hs.js",
            &format!(
                "export const options = {{ iterations: 1 }};\nexport default function () {{}}\n\
                 export function handleSummary() {{ return {{ 'ok.txt': 'x', stdout: {value} }}; }}\n"
            ),
        );
        let _ = std::fs::remove_file(d.join("ok.txt"));
        let o = volley()
            .current_dir(&d)
            .args(["run", "hs.js"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "error handling summary object stdout: invalid type {kind}, it needs to be a \
                 string or ArrayBuffer"
            )),
            "{value}: {err}"
        );
        assert!(!d.join("ok.txt").exists(), "{value}: nothing is written");
        assert!(stdout(&o).contains("iterations"), "{}", stdout(&o));
    }
}
