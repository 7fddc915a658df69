//! Distributed runs on one machine (docs/distributed.md): execution segments run as separate
//! processes against the built-in target, their result files merged (`volley merge`), and
//! k6's archive (`volley archive`, `volley run test.tar`, `volley inspect`).

mod common;

use common::{counter, scratch, stderr, stdout, target, volley};
use std::path::Path;
use std::process::Output;

/// 40 iterations shared by 4 VUs, each one request; every iteration logs its test-wide VU id
/// and iteration index. `THRESHOLD` picks the threshold on http_reqs.
const SCRIPT: &str = r#"
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
export const options = {
  scenarios: { load: { executor: 'shared-iterations', vus: 4, iterations: 40 } },
  thresholds: { http_reqs: [__ENV.THRESHOLD || 'count>0'] },
};
export default function () {
  const r = http.get(`${__ENV.BASE}/`);
  check(r, { 'status 200': (r) => r.status === 200 });
  console.log(`SEG vu=${exec.vu.idInTest} it=${exec.scenario.iterationInTest} seg=${exec.instance.executionSegment}`);
}
"#;

fn write_script(dir: &Path) -> String {
    let p = dir.join("split.js");
    std::fs::write(&p, SCRIPT).unwrap();
    p.to_string_lossy().into_owned()
}

fn run_segment(script: &str, base: &str, seg: Option<&str>, save: &Path, th: &str) -> Output {
    let mut c = volley();
    c.args(["run", script, "-q", "--no-system-env", "-e", base])
        .args(["-e", &format!("THRESHOLD={th}")])
        .arg("--save")
        .arg(save);
    if let Some(s) = seg {
        c.args(["--execution-segment", s])
            .args(["--execution-segment-sequence", "0,1/2,1"]);
    }
    c.output().expect("volley runs")
}

/// (vu, iteration) pairs the run logged.
fn logged(o: &Output) -> Vec<(u64, u64)> {
    stderr(o)
        .lines()
        .filter_map(|l| {
            let rest = l.split_once("SEG vu=")?.1;
            let (vu, rest) = rest.split_once(" it=")?;
            let it = rest.split_once(' ')?.0;
            Some((vu.parse().ok()?, it.parse().ok()?))
        })
        .collect()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn two_segments_merge_to_the_whole_run_and_the_servers_count() {
    let t = target();
    let dir = scratch("segments-merge");
    let script = write_script(&dir);
    let base = format!("BASE=http://{}", t.local_addr());
    let (a, b, whole) = (
        dir.join("a.json"),
        dir.join("b.json"),
        dir.join("whole.json"),
    );
    // Each half alone fails `count>=40`; the merged result passes it.
    let oa = run_segment(&script, &base, Some("0:1/2"), &a, "count>=40");
    let ob = run_segment(&script, &base, Some("1/2:1"), &b, "count>=40");
    assert_eq!(oa.status.code(), Some(99), "{}", stderr(&oa));
    assert_eq!(ob.status.code(), Some(99), "{}", stderr(&ob));
    let served_by_halves = t.stats().requests;
    assert_eq!(served_by_halves, 40);
    // Test-wide ids: each half has 2 of the 4 VUs and 20 of the 40 iteration indexes.
    let (la, lb) = (logged(&oa), logged(&ob));
    assert_eq!((la.len(), lb.len()), (20, 20));
    // Halves stripe the VUs: 1 and 3 are the first half's, 2 and 4 the second's (a VU may
    // get no iteration when the others are quicker, so these are subsets).
    assert!(la.iter().all(|e| [1, 3].contains(&e.0)), "{la:?}");
    assert!(lb.iter().all(|e| [2, 4].contains(&e.0)), "{lb:?}");
    let mut its: Vec<u64> = la.iter().chain(&lb).map(|e| e.1).collect();
    its.sort();
    assert_eq!(its, (0..40).collect::<Vec<_>>());
    assert!(stderr(&oa).contains("seg=0:1/2"), "{}", stderr(&oa));

    let ow = run_segment(&script, &base, None, &whole, "count>=40");
    assert_eq!(ow.status.code(), Some(0), "{}", stderr(&ow));
    let all = dir.join("all.json");
    let export = dir.join("export.json");
    let om = volley()
        .arg("merge")
        .args([&a, &b])
        .arg("-o")
        .arg(&all)
        .arg("--summary-export")
        .arg(&export)
        .output()
        .unwrap();
    assert_eq!(om.status.code(), Some(0), "{}", stderr(&om));
    assert!(stdout(&om).contains("http_reqs"), "{}", stdout(&om));
    let (m, w) = (read_json(&all), read_json(&whole));
    assert_eq!(counter(&m, "http_reqs"), 40.0);
    assert_eq!(counter(&m, "http_reqs"), counter(&w, "http_reqs"));
    assert_eq!(counter(&m, "iterations"), counter(&w, "iterations"));
    assert_eq!(t.stats().requests, served_by_halves + 40);
    assert_eq!(m["meta"]["instances"], 2);
    assert_eq!(m["thresholds"][0]["ok"], true);
    // The merged trend holds every sample of both halves.
    let trend_count = |r: &serde_json::Value| -> u64 {
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["name"] == "http_req_duration")
            .map(|x| x["count"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(trend_count(&m), 40);
    let e = read_json(&export);
    assert_eq!(e["metrics"]["http_reqs"]["count"], 40.0);
    assert_eq!(e["metrics"]["checks"]["passes"], 40.0);
    // handleSummary runs on the merged data, without a run.
    let hs = dir.join("hs.js");
    let out = dir.join("handled.json");
    std::fs::write(
        &hs,
        format!(
            "export default function () {{}}\n\
             export function handleSummary(data) {{\n\
               return {{ '{}': JSON.stringify({{ reqs: data.metrics.http_reqs.values.count }}) }};\n\
             }}\n",
            out.display()
        ),
    )
    .unwrap();
    let oh = volley()
        .arg("merge")
        .args([&a, &b])
        .arg("--handle-summary")
        .arg(&hs)
        .output()
        .unwrap();
    assert_eq!(oh.status.code(), Some(0), "{}", stderr(&oh));
    assert_eq!(read_json(&out)["reqs"], 40);
    assert!(
        !stdout(&oh).contains("http_reqs"),
        "handleSummary replaces the summary"
    );
}

#[test]
fn thresholds_crossed_only_by_the_combined_load_fail_the_merge() {
    let t = target();
    let dir = scratch("segments-threshold");
    let script = write_script(&dir);
    let base = format!("BASE=http://{}", t.local_addr());
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    for (seg, f) in [("0:1/2", &a), ("1/2:1", &b)] {
        let o = run_segment(&script, &base, Some(seg), f, "count<30");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = volley().arg("merge").args([&a, &b]).output().unwrap();
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("thresholds on metrics 'http_reqs'"),
        "{}",
        stderr(&o)
    );
    // The same segment twice would count its work twice: refused unless forced.
    let o = volley().arg("merge").args([&a, &a]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("both ran execution segment 0:1/2"),
        "{}",
        stderr(&o)
    );
    // Another test's result is refused, with the files named.
    let other = dir.join("other.js");
    std::fs::write(&other, SCRIPT.replace("iterations: 40", "iterations: 8")).unwrap();
    let c = dir.join("c.json");
    let oc = run_segment(&other.to_string_lossy(), &base, None, &c, "count>0");
    assert_eq!(oc.status.code(), Some(0), "{}", stderr(&oc));
    let o = volley().arg("merge").args([&a, &c]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("different tests") && err.contains("c.json"),
        "{err}"
    );
    let o = volley()
        .arg("merge")
        .args([&a, &c])
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn bad_segments_are_config_errors() {
    let dir = scratch("segments-bad");
    let script = write_script(&dir);
    for (args, want) in [
        (vec!["--execution-segment", "1/2:1/4"], "less than its end"),
        (
            vec![
                "--execution-segment",
                "0:1/3",
                "--execution-segment-sequence",
                "0,1/2,1",
            ],
            "not one of the segment sequence",
        ),
        (vec!["--execution-segment", "x"], "not a valid"),
    ] {
        let o = volley()
            .args(["run", &script, "-q", "-e", "BASE=http://127.0.0.1:9"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(104), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn an_archive_runs_without_its_files_on_disk() {
    let t = target();
    let dir = scratch("archive");
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("lib")).unwrap();
    std::fs::create_dir_all(src.join("data")).unwrap();
    std::fs::write(
        src.join("lib/helper.js"),
        "export function greet(n) { return `hello ${n}`; }\n",
    )
    .unwrap();
    std::fs::write(src.join("data/users.txt"), "ada\n").unwrap();
    std::fs::write(
        src.join("main.js"),
        r#"
import http from 'k6/http';
import { greet } from './lib/helper.js';
const user = open('./data/users.txt').trim();
export const options = { vus: 1, iterations: 3 };
export default function () {
  http.get(`${__ENV.BASE}/`);
  if (__ITER === 0) console.log(`ARCHIVED ${greet(user)} from ${__ENV.WHO}`);
}
"#,
    )
    .unwrap();
    let tar = dir.join("test.tar");
    let base = format!("BASE=http://{}", t.local_addr());
    let o = volley()
        .arg("archive")
        .arg(src.join("main.js"))
        .arg("-o")
        .arg(&tar)
        .args(["-e", &base, "-e", "WHO=the archive", "-i", "5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The sources are gone: everything must come from the tar.
    std::fs::remove_dir_all(&src).unwrap();
    let o = volley()
        .arg("run")
        .arg(&tar)
        .args(["-q", "--no-system-env"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ARCHIVED hello ada from the archive"),
        "{}",
        stderr(&o)
    );
    // -i 5 given to `archive` is part of the archived options.
    assert_eq!(t.stats().requests, 5);
    let o = volley().arg("inspect").arg(&tar).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scenarios"]["default"]["executor"], "shared-iterations");
    assert_eq!(v["scenarios"]["default"]["iterations"], 5);
    assert_eq!(v["paused"], false);
    // Not a tar, not a script: a clear error, no panic.
    let junk = dir.join("junk.tar");
    std::fs::write(&junk, b"not a tar at all").unwrap();
    let o = volley().arg("inspect").arg(&junk).output().unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn an_archive_refuses_files_its_init_did_not_open() {
    let dir = scratch("archive-missing");
    let main = dir.join("main.js");
    std::fs::write(
        &main,
        "export const options = { iterations: 1 };\n\
         const f = __ENV.LATE ? open(__ENV.LATE) : '';\n\
         export default function () {}\n",
    )
    .unwrap();
    let tar = dir.join("t.tar");
    let o = volley()
        .arg("archive")
        .arg(&main)
        .arg("-o")
        .arg(&tar)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let extra = dir.join("extra.txt");
    std::fs::write(&extra, "x").unwrap();
    let o = volley()
        .arg("run")
        .arg(&tar)
        .args(["-q", "-e", &format!("LATE={}", extra.display())])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(107), "{}", stderr(&o));
    assert!(stderr(&o).contains("not in the archive"), "{}", stderr(&o));
}

#[test]
fn k6_env_and_options_give_the_segment_too() {
    let t = target();
    let dir = scratch("segments-env");
    let script = write_script(&dir);
    let base = format!("BASE=http://{}", t.local_addr());
    let o = volley()
        .args(["run", &script, "-q", "--no-system-env", "-e", &base])
        .env("K6_EXECUTION_SEGMENT", "1/2:1")
        .env("K6_EXECUTION_SEGMENT_SEQUENCE", "0,1/2,1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(logged(&o).len(), 20);
    assert_eq!(t.stats().requests, 20);
    // In the script's options: 0:1/3 alone, filled around to 0,1/3,1.
    let third = dir.join("third.js");
    std::fs::write(
        &third,
        SCRIPT.replace("thresholds:", "executionSegment: '0:1/3', thresholds:"),
    )
    .unwrap();
    let o = volley()
        .args([
            "run",
            &third.to_string_lossy(),
            "-q",
            "--no-system-env",
            "-e",
            &base,
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The larger 1/3:1 segment takes unit 0 of every 3, 0:1/3 unit 1: 13 of 40.
    assert_eq!(logged(&o).len(), 13);
}
