//! The after-run chain (`volley_run::after`) is one for every command: `volley run`,
//! `volley http` and `volley monitor` refuse an unwritable `--save` before the run the same
//! way, and fail the same way (exit 1, one message shape) when the target becomes unwritable
//! during the run, still writing what they can.

mod common;
use common::*;
use std::process::Stdio;
use std::time::Duration;

/// A script that runs ~2 s and sends nothing.
fn idle_script(dir: &std::path::Path) -> String {
    let p = dir.join("idle.js");
    std::fs::write(
        &p,
        "import { sleep } from 'k6';\nexport const options = { vus: 1, duration: '2s' };\n\
         export default function () { sleep(0.2); }\n",
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// The three commands, each ~2 s long, with `--save SAVE` and `extra` flags.
fn commands(dir: &std::path::Path, url: &str, save: &str) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let pid = format!("pid:{}", std::process::id());
    vec![
        (
            "run",
            s(&["run", "--quiet", &idle_script(dir), "--save", save]),
        ),
        (
            "http",
            s(&[
                "http", url, "-z", "2s", "-c", "1", "-q", "20", "--quiet", "--save", save,
            ]),
        ),
        (
            "monitor",
            s(&[
                "monitor",
                &pid,
                "--duration",
                "2s",
                "--quiet",
                "--save",
                save,
            ]),
        ),
    ]
}

#[test]
fn an_unwritable_save_is_refused_before_the_run_by_every_command() {
    let t = target();
    let dir = scratch("after-pre");
    let save = dir.join("missing/run.json");
    let save = save.to_str().unwrap();
    let url = format!("{}/", t.url());
    for (name, args) in commands(&dir, &url, save) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("volley: error: --save {save}: directory ")),
            "{name}: {err}"
        );
        assert!(err.contains("nothing was run"), "{name}: {err}");
    }
}

#[test]
fn a_save_that_becomes_unwritable_during_the_run_fails_the_same_way_everywhere() {
    let t = target();
    let url = format!("{}/", t.url());
    for which in ["run", "http", "monitor"] {
        let dir = scratch(&format!("after-post-{which}"));
        let gone = dir.join("gone");
        std::fs::create_dir_all(&gone).unwrap();
        let save = gone.join("run.json");
        let (_, args) = commands(&dir, &url, save.to_str().unwrap())
            .into_iter()
            .find(|(n, _)| *n == which)
            .unwrap();
        let child = volley()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The check passed at the start; the directory goes while the run is on.
        std::thread::sleep(Duration::from_millis(700));
        std::fs::remove_dir_all(&gone).unwrap();
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{which}: {err}");
        assert!(
            err.contains(&format!(
                "volley: error: cannot save the result to {}: ",
                save.display()
            )),
            "{which}: {err}"
        );
    }
}
