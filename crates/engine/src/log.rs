//! k6's log lines, written as k6's logrus setup writes them: the one place that formats and
//! writes every `level=... msg=...` line of a run (console.*, iteration exceptions, warnings,
//! the run's errors). It lives here, not in the JS crate, because the engine logs too
//! (insufficient VUs) and cannot depend on the script runtime.
//!
//! - `text` to a terminal (and colours allowed): `INFO[0001] msg<pad to 44>  source=console`;
//! - `text` anywhere else: logfmt, `time="2026-11-25T14:00:00Z" level=info msg=hi source=console`;
//! - `json`: `{"level":"info","msg":"hi","source":"console","time":"..."}` (keys sorted);
//! - `raw`: the message alone.
//!
//! Until [`init`] is called (library use, tests) lines go to stderr in text format.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Log levels, most severe first (so `a <= b` means "a is at least as severe as b").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    /// logrus' level names (`warning`, not `warn`).
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// The terminal form's 4-letter tag and its ANSI colour.
    fn tag(self) -> (&'static str, u8) {
        match self {
            Level::Error => ("ERRO", 31),
            Level::Warn => ("WARN", 33),
            Level::Info => ("INFO", 36),
            Level::Debug => ("DEBU", 37),
        }
    }

    /// logrus' `ParseLevel` names (panic and fatal count as error, trace as debug).
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.to_ascii_lowercase().as_str() {
            "panic" | "fatal" | "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" | "trace" => Level::Debug,
            _ => return None,
        })
    }
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Raw,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "text" | "" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "raw" => Ok(Format::Raw),
            _ => Err(format!(
                "unknown log format '{s}': expected text, json or raw"
            )),
        }
    }
}

/// `--log-output`: k6's syntax (`stderr`, `stdout`, `none`, `file=PATH[,level=LEVEL]`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Output {
    #[default]
    Stderr,
    Stdout,
    None,
    /// Lines at `level` or more severe go to the file (appended, as k6).
    File {
        path: PathBuf,
        level: Level,
    },
}

impl Output {
    pub fn parse(s: &str) -> Result<Output, String> {
        match s {
            "stderr" | "" => return Ok(Output::Stderr),
            "stdout" => return Ok(Output::Stdout),
            "none" => return Ok(Output::None),
            _ => {}
        }
        if s.starts_with("loki") {
            return Err(format!(
                "log output '{s}': loki is not supported by volley (use stderr, stdout, none or \
                 file=PATH)"
            ));
        }
        if !(s == "file" || s.starts_with("file=")) {
            return Err(format!(
                "unsupported log output '{s}': expected stderr, stdout, none or \
                 file=PATH[,level=LEVEL]"
            ));
        }
        let (mut path, mut level) = (None, Level::Debug);
        for kv in s.split(',') {
            match kv.split_once('=') {
                Some(("file", p)) if !p.is_empty() => path = Some(PathBuf::from(p)),
                Some(("level", l)) => {
                    level = Level::parse(l).ok_or_else(|| {
                        format!(
                        "log output '{s}': unknown log level '{l}' (error, warning, info, debug)"
                    )
                    })?
                }
                Some(("file", _)) | None if kv.starts_with("file") => {
                    return Err(format!("log output '{s}': the file path must not be empty"))
                }
                _ => return Err(format!("log output '{s}': unknown key in '{kv}'")),
            }
        }
        let path =
            path.ok_or_else(|| format!("log output '{s}': the file path must not be empty"))?;
        Ok(Output::File { path, level })
    }
}

/// How the run logs (from `--log-format`, `--log-output`, `--console-output`, `-v`,
/// `--no-color` and their `K6_*` variables).
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub format: Format,
    pub output: Output,
    /// console.* lines go to this file (appended; without the `source=console` field, as k6).
    pub console_output: Option<PathBuf>,
    /// Debug lines too (console.debug).
    pub verbose: bool,
    pub no_color: bool,
}

enum Sink {
    Stderr,
    Stdout,
    None,
    File(Mutex<File>),
}

struct Logger {
    format: Format,
    colored: bool,
    sink: Sink,
    /// Least severe level logged at all (info, or debug with `-v`): k6's logger level.
    max: Level,
    /// Least severe level the sink takes (`file=...,level=` may raise it).
    sink_max: Level,
    console: Option<Mutex<File>>,
}

static LOGGER: OnceLock<Logger> = OnceLock::new();
/// How many lines of a live display (the progress lines) are on stderr below the last log
/// line. Locked before stderr by both writers, so a log line and a redraw never interleave.
static LIVE: Mutex<usize> = Mutex::new(0);
/// logrus' base timestamp: the `[0001]` seconds of the terminal form count from it.
static START: OnceLock<Instant> = OnceLock::new();

fn append(path: &Path, what: &str) -> Result<File, String> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{what}: cannot open {}: {e}", path.display()))
}

/// Set up the process' logger. Files are opened here, so a bad path fails before the run
/// starts. The first setup stays for the life of the process (a second is ignored).
pub fn init(cfg: &Config) -> Result<(), String> {
    START.get_or_init(Instant::now);
    let verbose = if cfg.verbose {
        Level::Debug
    } else {
        Level::Info
    };
    let (sink, sink_max, tty) = match &cfg.output {
        Output::Stderr => (Sink::Stderr, verbose, std::io::stderr().is_terminal()),
        Output::Stdout => (Sink::Stdout, verbose, std::io::stdout().is_terminal()),
        Output::None => (Sink::None, verbose, false),
        Output::File { path, level } => (
            Sink::File(Mutex::new(append(path, "--log-output")?)),
            verbose.min(*level),
            false,
        ),
    };
    let console = match &cfg.console_output {
        Some(p) => Some(Mutex::new(append(p, "--console-output")?)),
        None => None,
    };
    let logger = Logger {
        format: cfg.format,
        colored: cfg.format == Format::Text && tty && !cfg.no_color,
        sink,
        max: verbose,
        sink_max,
        console,
    };
    let _ = LOGGER.set(logger);
    Ok(())
}

fn logger() -> &'static Logger {
    LOGGER.get_or_init(|| {
        START.get_or_init(Instant::now);
        Logger {
            format: Format::Text,
            colored: std::io::stderr().is_terminal(),
            sink: Sink::Stderr,
            max: Level::Info,
            sink_max: Level::Info,
            console: None,
        }
    })
}

/// Whether a line at `level` would be written anywhere (skip building debug messages).
pub fn enabled(level: Level) -> bool {
    level <= logger().max
}

/// Log one line with extra fields (written sorted by key, as logrus does).
pub fn log(level: Level, msg: &str, fields: &[(&str, &str)]) {
    let l = logger();
    if level > l.sink_max || matches!(l.sink, Sink::None) {
        return;
    }
    let line = render(l.format, l.colored, level, msg, fields);
    let out = |w: &mut dyn Write| {
        let _ = w.write_all(line.as_bytes());
    };
    match &l.sink {
        Sink::Stderr => {
            let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
            under_live(&mut std::io::stderr().lock(), &mut live, &line);
        }
        Sink::Stdout => out(&mut std::io::stdout().lock()),
        Sink::None => {}
        Sink::File(f) => out(&mut *f.lock().unwrap_or_else(|p| p.into_inner())),
    }
}

/// Draw a live display (`text`, whole lines) on stderr in place of the one drawn before.
pub fn draw_live(text: &str) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    redraw_live(&mut std::io::stderr().lock(), &mut live, text);
}

/// Write a log line where the `live` lines are (erasing them; the next draw follows it).
fn under_live(w: &mut dyn Write, live: &mut usize, line: &str) {
    if *live > 0 {
        let _ = write!(w, "\x1b[{}A\x1b[J", *live);
        *live = 0;
    }
    let _ = w.write_all(line.as_bytes());
}

/// Move up over the `live` lines and write `text` (whose lines clear themselves) instead.
fn redraw_live(w: &mut dyn Write, live: &mut usize, text: &str) {
    if *live > 0 {
        let _ = write!(w, "\x1b[{}A", *live);
    }
    let _ = w.write_all(text.as_bytes()).and_then(|_| w.flush());
    *live = text.lines().count();
}

/// Erase the live display, if one is drawn.
pub fn clear_live() {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if *live > 0 {
        eprint!("\x1b[{}A\x1b[J", *live);
        *live = 0;
    }
}

pub fn error(msg: &str) {
    log(Level::Error, msg, &[]);
}

pub fn warn(msg: &str) {
    log(Level::Warn, msg, &[]);
}

/// A console.* line: `source=console`, or into `--console-output`'s file (k6 gives that
/// logger no source field, and the logger's format and level).
pub fn console(level: Level, msg: &str) {
    let l = logger();
    match &l.console {
        None => log(level, msg, &[("source", "console")]),
        Some(f) if level <= l.max => {
            let line = render(l.format, false, level, msg, &[]);
            let _ = f
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .write_all(line.as_bytes());
        }
        Some(_) => {}
    }
}

/// One line in `format` (with its newline).
pub fn render(
    format: Format,
    colored: bool,
    level: Level,
    msg: &str,
    fields: &[(&str, &str)],
) -> String {
    let mut fields: Vec<(&str, &str)> = fields.to_vec();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    match format {
        Format::Raw => format!("{msg}\n"),
        Format::Json => {
            let mut m = serde_json::Map::new();
            for (k, v) in &fields {
                m.insert((*k).into(), (*v).into());
            }
            m.insert("level".into(), level.name().into());
            m.insert("msg".into(), msg.into());
            m.insert("time".into(), now_rfc3339().into());
            // serde_json's map is sorted (as Go's encoder sorts map keys); Go also escapes
            // HTML characters and the JS line separators.
            let s = serde_json::Value::Object(m).to_string();
            let mut out = String::with_capacity(s.len() + 1);
            for c in s.chars() {
                match c {
                    '<' => out.push_str("\\u003c"),
                    '>' => out.push_str("\\u003e"),
                    '&' => out.push_str("\\u0026"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    c => out.push(c),
                }
            }
            out.push('\n');
            out
        }
        Format::Text if colored => {
            let (tag, c) = level.tag();
            let secs = START.get_or_init(Instant::now).elapsed().as_secs();
            let msg = msg.strip_suffix('\n').unwrap_or(msg);
            let mut out = format!("\x1b[{c}m{tag}\x1b[0m[{secs:04}] {msg:<44} ");
            for (k, v) in &fields {
                out.push_str(&format!(" \x1b[{c}m{k}\x1b[0m="));
                push_value(&mut out, v);
            }
            out.push('\n');
            out
        }
        Format::Text => {
            let mut out = String::from("time=");
            push_value(&mut out, &now_rfc3339());
            out.push_str(" level=");
            out.push_str(level.name());
            if !msg.is_empty() {
                out.push_str(" msg=");
                push_value(&mut out, msg);
            }
            for (k, v) in &fields {
                out.push(' ');
                out.push_str(k);
                out.push('=');
                push_value(&mut out, v);
            }
            out.push('\n');
            out
        }
    }
}

/// logrus' value quoting: bare when only `[A-Za-z0-9-._/@^+]`, else Go's `%q`.
fn push_value(out: &mut String, v: &str) {
    let bare = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._/@^+".contains(c));
    if bare {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || c == '\u{feff}' => {
                let n = c as u32;
                if n <= 0xffff {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Now as Go's `time.RFC3339` in local time (`2026-11-25T14:00:00Z`, `...T15:00:00+01:00`).
fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    rfc3339(secs, local_offset(secs))
}

fn rfc3339(secs: i64, offset: i64) -> String {
    let local = secs + offset;
    let (y, mo, d) = volley_metrics::time::civil_from_days(local.div_euclid(86_400));
    let sod = local.rem_euclid(86_400);
    let zone = if offset == 0 {
        "Z".to_string()
    } else {
        let (sign, a) = if offset < 0 {
            ('-', -offset)
        } else {
            ('+', offset)
        };
        format!("{sign}{:02}:{:02}", a / 3600, (a / 60) % 60)
    };
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}{zone}",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// The local zone's offset from UTC in seconds at `secs` (TZ / /etc/localtime, as Go reads).
#[cfg(unix)]
fn local_offset(secs: i64) -> i64 {
    let t = secs as libc::time_t;
    // SAFETY: localtime_r only writes the tm we own; a zeroed tm is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff as i64
    } else {
        0
    }
}

#[cfg(not(unix))]
fn local_offset(_secs: i64) -> i64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logfmt(level: Level, msg: &str, fields: &[(&str, &str)]) -> String {
        let s = render(Format::Text, false, level, msg, fields);
        // Drop the time field: `time="..." `.
        let rest = s.split_once("\" ").unwrap().1;
        rest.to_string()
    }

    #[test]
    fn logfmt_quotes_and_escapes_values_as_logrus() {
        assert_eq!(
            logfmt(
                Level::Warn,
                "with \"quotes\" and\nnewline",
                &[("source", "console")]
            ),
            "level=warning msg=\"with \\\"quotes\\\" and\\nnewline\" source=console\n"
        );
        assert_eq!(
            logfmt(Level::Error, "plain_value", &[("source", "console")]),
            "level=error msg=plain_value source=console\n"
        );
        // An empty message is left out, as logrus does.
        assert_eq!(
            logfmt(Level::Info, "", &[("source", "console")]),
            "level=info source=console\n"
        );
    }

    #[test]
    fn fields_are_sorted_by_key() {
        assert_eq!(
            logfmt(
                Level::Error,
                "Error: boom\n",
                &[("source", "stacktrace"), ("scenario", "default"), ("executor", "a b")]
            ),
            "level=error msg=\"Error: boom\\n\" executor=\"a b\" scenario=default source=stacktrace\n"
        );
    }

    #[test]
    fn terminal_form_pads_the_message_and_colours_the_keys() {
        let s = render(
            Format::Text,
            true,
            Level::Info,
            "hi\n",
            &[("source", "console")],
        );
        let want_tail = format!("] hi{} ", " ".repeat(42));
        assert!(s.starts_with("\x1b[36mINFO\x1b[0m["), "{s:?}");
        assert!(s.contains(&want_tail), "{s:?}");
        assert!(s.ends_with("  \x1b[36msource\x1b[0m=console\n"), "{s:?}");
    }

    #[test]
    fn json_lines_have_sorted_keys_and_escape_html() {
        let s = render(
            Format::Json,
            false,
            Level::Error,
            "a<b",
            &[("source", "console")],
        );
        assert!(
            s.starts_with(r#"{"level":"error","msg":"a\u003cb","source":"console","time":""#),
            "{s}"
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["msg"], "a<b");
        assert_eq!(render(Format::Raw, false, Level::Error, "x", &[]), "x\n");
    }

    /// The screen a terminal shows for `bytes` (cursor up, erase down, erase line, newline).
    fn screen(bytes: &[u8]) -> Vec<String> {
        let s = String::from_utf8_lossy(bytes);
        let (mut rows, mut row) = (vec![String::new()], 0usize);
        let mut rest = s.as_ref();
        while let Some(c) = rest.chars().next() {
            if let Some(esc) = rest.strip_prefix("\x1b[") {
                let n: String = esc.chars().take_while(char::is_ascii_digit).collect();
                let cmd = esc[n.len()..].chars().next().unwrap();
                match cmd {
                    'A' => row -= n.parse::<usize>().unwrap(),
                    'J' => {
                        rows.truncate(row + 1);
                        rows[row].clear();
                    }
                    'K' => rows[row].clear(),
                    _ => {}
                }
                rest = &esc[n.len() + 1..];
                continue;
            }
            if c == '\n' {
                row += 1;
                if rows.len() <= row {
                    rows.push(String::new());
                }
            } else {
                rows[row].push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        rows.into_iter().filter(|r| !r.is_empty()).collect()
    }

    #[test]
    fn a_log_line_between_progress_draws_stays_on_screen() {
        let (mut out, mut live) = (Vec::new(), 0);
        let progress = |n: u32| format!("\x1b[2Krunning {n}\n\x1b[2Kbar {n}\n");
        redraw_live(&mut out, &mut live, &progress(1));
        under_live(&mut out, &mut live, "iter 1\n");
        redraw_live(&mut out, &mut live, &progress(2));
        redraw_live(&mut out, &mut live, &progress(3));
        under_live(&mut out, &mut live, "iter 2\n");
        assert_eq!(screen(&out), ["iter 1", "iter 2"]);
        redraw_live(&mut out, &mut live, &progress(4));
        assert_eq!(screen(&out), ["iter 1", "iter 2", "running 4", "bar 4"]);
    }

    #[test]
    fn times_are_rfc3339_with_go_zone_suffix() {
        assert_eq!(rfc3339(1_795_326_725, 0), "2026-11-22T05:52:05Z");
        assert_eq!(rfc3339(1_795_326_725, 3600), "2026-11-22T06:52:05+01:00");
        assert_eq!(rfc3339(1_795_326_725, -9000), "2026-11-22T03:22:05-02:30");
    }

    #[test]
    fn log_outputs_parse_k6_syntax() {
        assert_eq!(Output::parse("none").unwrap(), Output::None);
        assert_eq!(
            Output::parse("file=./k6.log").unwrap(),
            Output::File {
                path: "./k6.log".into(),
                level: Level::Debug
            }
        );
        assert_eq!(
            Output::parse("file=x.log,level=warning").unwrap(),
            Output::File {
                path: "x.log".into(),
                level: Level::Warn
            }
        );
        for bad in [
            "file",
            "file=",
            "file=x,level=loud",
            "syslog",
            "file=x,color=1",
            "loki",
        ] {
            assert!(Output::parse(bad).is_err(), "{bad}");
        }
        assert!(Format::parse("xml").is_err());
    }
}
