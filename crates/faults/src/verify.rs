//! Verification after faults: a command checks the ledger's entries against the service and
//! says, per entry, `verify: verified ID`, `verify: lost ID` or `verify: corrupted ID` (and
//! `verify: partial NAME` for anything half-written it finds visible); [`Report`] counts
//! them. An entry the command does not mention counts as lost: silence is not proof.
//!
//! The command gets the ledger on stdin and its path in `VOLLEY_LEDGER`; its verdict lines
//! may come on stdout or stderr, anywhere in a line (`console.log` prefixes them), so a k6
//! script run by `volley run` can be the verifier.

use crate::ledger::Contents;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

/// What verification found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub faults: u64,
    pub acknowledged: u64,
    pub verified: u64,
    pub lost: u64,
    pub corrupted: u64,
    /// Half-written things found visible.
    pub partial: u64,
    /// Of `lost`: entries the verifier never mentioned.
    pub unreported: u64,
    /// Ids of the first lost and corrupted entries (at most [`SHOWN`] of each).
    pub lost_ids: Vec<String>,
    pub corrupted_ids: Vec<String>,
}

/// How many lost or corrupted ids a report names.
pub const SHOWN: usize = 10;

impl Report {
    /// Nothing lost, corrupted or half-written.
    pub fn ok(&self) -> bool {
        self.lost == 0 && self.corrupted == 0 && self.partial == 0
    }

    /// The report's lines (`lost: N` among them).
    pub fn render(&self) -> String {
        let mut s = format!(
            "verify: faults injected: {}, acknowledged: {}, verified: {}, lost: {}, corrupted: {}",
            self.faults, self.acknowledged, self.verified, self.lost, self.corrupted
        );
        if self.partial > 0 {
            s.push_str(&format!(", partial: {}", self.partial));
        }
        s.push('\n');
        if self.unreported > 0 {
            s.push_str(&format!(
                "  {} of the lost were never reported by the verifier (counted as lost)\n",
                self.unreported
            ));
        }
        for (what, ids) in [("lost", &self.lost_ids), ("corrupted", &self.corrupted_ids)] {
            if !ids.is_empty() {
                s.push_str(&format!("  {what}: {}\n", ids.join(", ")));
            }
        }
        s.push_str(if self.ok() {
            "verify: ok\n"
        } else {
            "verify: FAILED: acknowledged data is missing or damaged\n"
        });
        s
    }
}

/// A verdict line's status, if the line holds one.
fn verdict(line: &str) -> Option<(&str, &str)> {
    let at = line.find("verify: ")?;
    let mut words = line[at + 8..].split_whitespace();
    let status = words.next()?;
    // A logger may quote the message (`msg="verify: lost a"`): the quote is not the id's.
    let id = words.next()?.trim_end_matches(['"', '\'']);
    matches!(status, "verified" | "ok" | "lost" | "corrupted" | "partial").then_some((status, id))
}

/// Count verdicts against the ledger's entries (the last verdict on an id wins).
pub fn tally<'a>(contents: &Contents, lines: impl IntoIterator<Item = &'a str>) -> Report {
    let mut by_id: BTreeMap<&str, &str> = BTreeMap::new();
    let mut partial = 0;
    let lines: Vec<&str> = lines.into_iter().collect();
    for l in &lines {
        match verdict(l) {
            Some(("partial", _)) => partial += 1,
            Some((status, id)) => {
                by_id.insert(id, status);
            }
            None => {}
        }
    }
    let mut r = Report {
        faults: contents.faults,
        partial,
        ..Report::default()
    };
    // An id acknowledged twice (a retried write) is one thing to check.
    let mut seen = std::collections::BTreeSet::new();
    for e in &contents.entries {
        if !seen.insert(e.id.as_str()) {
            continue;
        }
        r.acknowledged += 1;
        match by_id.get(e.id.as_str()).copied() {
            Some("verified" | "ok") => r.verified += 1,
            Some("corrupted") => {
                r.corrupted += 1;
                if r.corrupted_ids.len() < SHOWN {
                    r.corrupted_ids.push(e.id.clone());
                }
            }
            other => {
                r.lost += 1;
                if other.is_none() {
                    r.unreported += 1;
                }
                if r.lost_ids.len() < SHOWN {
                    r.lost_ids.push(e.id.clone());
                }
            }
        }
    }
    r
}

/// Verdicts given in-process (a script's `ledger.verified(id)` ...), as verdict lines.
static VERDICTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Most in-process verdicts kept (a verifier looping forever cannot exhaust memory).
const MAX_VERDICTS: usize = 10_000_000;

/// Record a verdict (`verified`, `lost`, `corrupted`, `partial`) on `id`.
pub fn record_verdict(status: &str, id: &str) -> Result<(), String> {
    if !matches!(status, "verified" | "lost" | "corrupted" | "partial") {
        return Err(format!("unknown verdict '{status}'"));
    }
    let mut v = VERDICTS.lock().unwrap();
    if v.len() < MAX_VERDICTS {
        v.push(format!("verify: {status} {id}"));
    }
    Ok(())
}

/// The verdicts recorded so far (and forget them).
pub fn take_verdicts() -> Vec<String> {
    std::mem::take(&mut *VERDICTS.lock().unwrap())
}

/// Run `cmd` as the verifier of the ledger at `path`; its other output passes through to
/// stderr.
pub fn run_command(path: &Path, contents: &Contents, cmd: &[String]) -> Result<Report, String> {
    let (prog, args) = cmd.split_first().ok_or(
        "volley verify: no command given\n  hint: volley verify --ledger FILE -- CMD ARGS",
    )?;
    let stdin = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut child = Command::new(prog)
        .args(args)
        .env("VOLLEY_LEDGER", path)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the verifier '{prog}': {e}"))?;
    let collect = |r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for line in BufReader::new(r).lines().map_while(Result::ok) {
                if verdict(&line).is_some() {
                    // Bounded: a verifier repeating itself cannot exhaust memory.
                    if kept.len() < MAX_VERDICTS {
                        kept.push(line);
                    }
                } else {
                    eprintln!("{line}");
                }
            }
            kept
        })
    };
    let out = collect(Box::new(child.stdout.take().expect("piped")));
    let err = collect(Box::new(child.stderr.take().expect("piped")));
    let status = child
        .wait()
        .map_err(|e| format!("verifier '{prog}': {e}"))?;
    let mut lines = out.join().unwrap_or_default();
    lines.extend(err.join().unwrap_or_default());
    if lines.is_empty() && !status.success() && !contents.entries.is_empty() {
        return Err(format!(
            "the verifier '{prog}' failed ({status}) without a verdict\n  hint: it must print \
             'verify: verified ID', 'verify: lost ID' or 'verify: corrupted ID' per entry"
        ));
    }
    Ok(tally(contents, lines.iter().map(String::as_str)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Entry;

    fn contents(ids: &[&str]) -> Contents {
        Contents {
            entries: ids
                .iter()
                .map(|id| Entry {
                    kind: "upload".into(),
                    id: id.to_string(),
                    fields: Default::default(),
                })
                .collect(),
            faults: 1,
            torn_tail: false,
        }
    }

    #[test]
    fn silence_counts_as_lost_and_fails() {
        let c = contents(&["a", "b", "c", "d"]);
        let r = tally(
            &c,
            [
                "verify: verified a",
                "time=\"...\" level=info msg=\"verify: corrupted b\" source=console",
                "noise",
                "verify: verified c",
            ],
        );
        assert_eq!(
            (r.acknowledged, r.verified, r.corrupted, r.lost),
            (4, 2, 1, 1)
        );
        assert_eq!(r.unreported, 1);
        assert!(!r.ok());
        assert!(r.render().contains("lost: 1"), "{}", r.render());
        let r = tally(&contents(&["a"]), ["verify: ok a"]);
        assert!(r.ok(), "{}", r.render());
        let r = tally(&contents(&["a"]), ["verify: ok a", "verify: partial tmp-1"]);
        assert!(!r.ok());
    }
}
