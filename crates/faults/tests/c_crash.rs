//! The library-level crash test (#18 item 5), through the API a suite uses: a C program
//! (tests/crashdb.c, SQLite) commits rows and acknowledges each in the ledger, then is
//! SIGKILLed by a [`ProcessTarget`] in the middle of a transaction; the verifier then finds
//! every acknowledged row and none of the uncommitted ones. A double that acknowledges before
//! its COMMIT is caught losing rows. Skipped (with a message) without `cc` or SQLite headers.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use volley_faults::{ledger, verify, CommandTarget, ProcessTarget};

fn scratch(name: &str) -> volley_testkit::Scratch {
    volley_testkit::scratch("volley-faults", name)
}

/// Build crashdb, or say why not.
fn build(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crashdb.c");
    let exe = dir.join("crashdb");
    let o = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg("-lsqlite3")
        .output();
    match o {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => {
            eprintln!(
                "skipped: cannot build crashdb.c (SQLite headers?): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: no C compiler (cc): {e}");
            None
        }
    }
}

/// Run the child until it has staged its open transaction, SIGKILL it, verify.
fn crash_and_verify(name: &str, ack_early: bool) -> Option<verify::Report> {
    let dir = scratch(name);
    let exe = build(&dir)?;
    let db = dir.join("t.db");
    let ledger_path = dir.join("ledger.ndjson");
    let early = if ack_early { " --ack-early" } else { "" };
    let mut child = CommandTarget::start(
        "crashdb",
        &format!(
            "exec {} child {} {}{early}",
            exe.display(),
            db.display(),
            ledger_path.display()
        ),
    )
    .unwrap();
    let staged = dir.join("t.db.staged");
    let t0 = Instant::now();
    while !staged.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "crashdb never staged its rows"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let contents = ledger::read(&ledger_path).unwrap();
    let cmd = [
        exe.display().to_string(),
        "verify".to_string(),
        db.display().to_string(),
    ];
    let r = verify::run_command(&ledger_path, &contents, &cmd).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Some(r)
}

#[test]
fn a_sigkill_mid_transaction_keeps_every_acknowledged_row_and_no_uncommitted_one() {
    let Some(r) = crash_and_verify("c-crash", false) else {
        return;
    };
    assert_eq!(
        (r.acknowledged, r.verified, r.lost),
        (20, 20, 0),
        "{}",
        r.render()
    );
    assert_eq!(r.partial, 0, "uncommitted rows visible: {}", r.render());
    assert!(r.ok());
}

#[test]
fn a_double_that_acks_before_commit_is_caught() {
    let Some(r) = crash_and_verify("c-crash-early", true) else {
        return;
    };
    assert_eq!(
        (r.acknowledged, r.verified, r.lost),
        (30, 20, 10),
        "{}",
        r.render()
    );
    assert!(!r.ok());
}
