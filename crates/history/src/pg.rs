//! A small PostgreSQL client for the history: blocking TCP, the simple-query protocol
//! (protocol 3.0), logins by trust, cleartext password or SCRAM-SHA-256 (PostgreSQL's
//! default). Parameters are sent as quoted literals, so one round trip runs one statement.
//!
//! Why not the `postgres` crate: it brings an async stack and some thirty crates for what
//! amounts to a dozen statements per run; this file is the whole of what the history needs.

use crate::{Backend, Value};
use base64::Engine;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Connection settings from a `postgres://user:password@host:port/db` URL.
#[derive(Clone, Debug, PartialEq)]
pub struct PgUrl {
    pub user: String,
    pub password: Option<String>,
    pub host: String,
    pub port: u16,
    pub dbname: String,
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match PgUrl::parse(url) {
        Ok(u) => format!("postgres://{}@{}:{}/{}", u.user, u.host, u.port, u.dbname),
        Err(_) => "postgres://...".into(),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl PgUrl {
    pub fn parse(url: &str) -> Result<PgUrl, String> {
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| format!("'{url}' is not a postgres:// URL"))?;
        let rest = rest.split('?').next().unwrap_or("");
        let (auth, hostdb) = match rest.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, rest),
        };
        let (hostport, db) = hostdb.split_once('/').unwrap_or((hostdb, ""));
        let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
            let (h, p) = h.split_once(']').ok_or("unclosed '[' in the host")?;
            (h.to_string(), p.strip_prefix(':').unwrap_or(""))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (hostport.to_string(), ""),
            }
        };
        let port = if port.is_empty() {
            5432
        } else {
            port.parse()
                .map_err(|_| format!("bad port '{port}' in the postgres URL"))?
        };
        let (user, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (percent_decode(u), Some(percent_decode(p))),
                None => (percent_decode(a), None),
            },
            None => ("postgres".to_string(), None),
        };
        let user = if user.is_empty() {
            "postgres".into()
        } else {
            user
        };
        let dbname = if db.is_empty() {
            user.clone()
        } else {
            percent_decode(db)
        };
        Ok(PgUrl {
            user,
            password,
            host: if host.is_empty() {
                "localhost".into()
            } else {
                host
            },
            port,
            dbname,
        })
    }
}

pub struct Postgres {
    rd: BufReader<TcpStream>,
    wr: TcpStream,
}

/// A backend message: its type byte and body.
type Msg = (u8, Vec<u8>);

fn cstr(b: &[u8], at: &mut usize) -> String {
    let end = b[*at..]
        .iter()
        .position(|&c| c == 0)
        .map_or(b.len(), |p| *at + p);
    let s = String::from_utf8_lossy(&b[*at..end]).into_owned();
    *at = (end + 1).min(b.len());
    s
}

fn be_i32(b: &[u8], at: &mut usize) -> i32 {
    let v = b
        .get(*at..*at + 4)
        .map_or(0, |s| i32::from_be_bytes([s[0], s[1], s[2], s[3]]));
    *at += 4;
    v
}

fn be_i16(b: &[u8], at: &mut usize) -> i16 {
    let v = b
        .get(*at..*at + 2)
        .map_or(0, |s| i16::from_be_bytes([s[0], s[1]]));
    *at += 2;
    v
}

/// An ErrorResponse's severity and message.
fn error_text(body: &[u8]) -> String {
    let (mut at, mut sev, mut msg) = (0, String::new(), String::new());
    while at < body.len() && body[at] != 0 {
        let field = body[at];
        at += 1;
        let v = cstr(body, &mut at);
        match field {
            b'S' => sev = v,
            b'M' => msg = v,
            _ => {}
        }
    }
    format!("{sev}: {msg}")
}

fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(body.len() + 5);
    m.push(kind);
    m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, String> {
        let u = PgUrl::parse(url)?;
        let where_ = format!("postgres://{}@{}:{}", u.user, u.host, u.port);
        let addr = (u.host.as_str(), u.port);
        let stream = {
            use std::net::ToSocketAddrs;
            let a = addr
                .to_socket_addrs()
                .map_err(|e| format!("{where_}: {e}"))?
                .next()
                .ok_or_else(|| format!("{where_}: no address"))?;
            TcpStream::connect_timeout(&a, Duration::from_secs(10))
                .map_err(|e| format!("{where_}: {e}"))?
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
        let _ = stream.set_nodelay(true);
        let wr = stream.try_clone().map_err(|e| e.to_string())?;
        let mut pg = Postgres {
            rd: BufReader::new(stream),
            wr,
        };
        pg.startup(&u).map_err(|e| format!("{where_}: {e}"))?;
        Ok(pg)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.wr.write_all(bytes).map_err(|e| e.to_string())
    }

    fn recv(&mut self) -> Result<Msg, String> {
        let mut head = [0u8; 5];
        self.rd
            .read_exact(&mut head)
            .map_err(|e| format!("connection lost: {e}"))?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        if !(4..=(1 << 30)).contains(&len) {
            return Err(format!("bad message length {len}"));
        }
        let mut body = vec![0u8; len as usize - 4];
        self.rd
            .read_exact(&mut body)
            .map_err(|e| format!("connection lost: {e}"))?;
        Ok((head[0], body))
    }

    fn startup(&mut self, u: &PgUrl) -> Result<(), String> {
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for (k, v) in [
            ("user", u.user.as_str()),
            ("database", u.dbname.as_str()),
            ("client_encoding", "UTF8"),
            ("application_name", "volley"),
        ] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        self.send(&msg)?;
        let mut scram: Option<Scram> = None;
        loop {
            let (kind, body) = self.recv()?;
            match kind {
                b'R' => {
                    let mut at = 0;
                    match be_i32(&body, &mut at) {
                        0 => {}
                        3 => {
                            let pw = u.password.clone().ok_or("the server wants a password")?;
                            let mut b = pw.into_bytes();
                            b.push(0);
                            self.send(&frame(b'p', &b))?;
                        }
                        10 => {
                            let mechs = String::from_utf8_lossy(&body[4..]).into_owned();
                            if !mechs.split('\0').any(|m| m == "SCRAM-SHA-256") {
                                return Err(format!("unsupported SASL mechanisms: {mechs}"));
                            }
                            let pw = u.password.clone().ok_or("the server wants a password")?;
                            let s = Scram::new(pw)?;
                            let first = s.client_first();
                            let mut b = b"SCRAM-SHA-256\0".to_vec();
                            b.extend_from_slice(&(first.len() as i32).to_be_bytes());
                            b.extend_from_slice(first.as_bytes());
                            self.send(&frame(b'p', &b))?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_ref().ok_or("unexpected SASL continue")?;
                            let server_first = String::from_utf8_lossy(&body[4..]).into_owned();
                            let fin = s.client_final(&server_first)?;
                            self.send(&frame(b'p', fin.as_bytes()))?;
                        }
                        12 => {}
                        5 => {
                            return Err("MD5 password login is not supported; use \
                                        scram-sha-256 (PostgreSQL's default) or trust"
                                .into())
                        }
                        n => return Err(format!("unsupported login method {n}")),
                    }
                }
                b'E' => return Err(error_text(&body)),
                b'Z' => return Ok(()),
                _ => {}
            }
        }
    }
}

/// One SCRAM-SHA-256 exchange (RFC 5802 / 7677, without channel binding).
struct Scram {
    password: String,
    nonce: String,
}

impl Scram {
    fn new(password: String) -> Result<Scram, String> {
        use ring::rand::SecureRandom;
        let mut raw = [0u8; 18];
        ring::rand::SystemRandom::new()
            .fill(&mut raw)
            .map_err(|_| "no randomness for the login nonce")?;
        Ok(Scram {
            password,
            nonce: base64::engine::general_purpose::STANDARD.encode(raw),
        })
    }

    fn client_first_bare(&self) -> String {
        format!("n=,r={}", self.nonce)
    }

    fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare())
    }

    fn client_final(&self, server_first: &str) -> Result<String, String> {
        let (mut r, mut s, mut i) = (None, None, None);
        for part in server_first.split(',') {
            match part.split_at_checked(2) {
                Some(("r=", v)) => r = Some(v),
                Some(("s=", v)) => s = Some(v),
                Some(("i=", v)) => i = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let (r, s, i) = match (r, s, i) {
            (Some(r), Some(s), Some(i)) if r.starts_with(&self.nonce) && i > 0 => (r, s, i),
            _ => return Err("bad SCRAM server message".into()),
        };
        let salt = base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|_| "bad SCRAM salt")?;
        let mut salted = [0u8; 32];
        ring::pbkdf2::derive(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            std::num::NonZeroU32::new(i).ok_or("bad SCRAM iteration count")?,
            &salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let hmac = |key: &[u8], data: &[u8]| {
            let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
            ring::hmac::sign(&k, data).as_ref().to_vec()
        };
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = ring::digest::digest(&ring::digest::SHA256, &client_key);
        let without_proof = format!("c=biws,r={r}");
        let auth = format!(
            "{},{server_first},{without_proof}",
            self.client_first_bare()
        );
        let sig = hmac(stored_key.as_ref(), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        Ok(format!(
            "{without_proof},p={}",
            base64::engine::general_purpose::STANDARD.encode(proof)
        ))
    }
}

/// A value as an SQL literal (standard_conforming_strings, PostgreSQL's default since 9.1).
fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Real(f) if f.is_finite() => format!("{f:?}::double precision"),
        Value::Real(_) => "NULL".into(),
        Value::Text(s) => format!("'{}'", s.replace('\0', "").replace('\'', "''")),
        Value::Blob(b) => {
            let mut s = String::with_capacity(b.len() * 2 + 16);
            s.push_str("'\\x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s.push_str("'::bytea");
            s
        }
    }
}

/// Replace `?N` placeholders with literals (the templates never hold `?` in quotes).
pub(crate) fn bind(sql: &str, params: &[Value]) -> Result<String, String> {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'?' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let n: usize = sql[start..j]
                .parse()
                .map_err(|_| "bare '?' in a statement".to_string())?;
            let v = params
                .get(n.wrapping_sub(1))
                .ok_or_else(|| format!("no parameter ?{n}"))?;
            out.push_str(&literal(v));
            i = j;
        } else {
            let ch = sql[i..].chars().next().unwrap_or('\0');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    Ok(out)
}

fn hex_decode(s: &str) -> Vec<u8> {
    let h = s.strip_prefix("\\x").unwrap_or(s).as_bytes();
    h.chunks(2)
        .filter_map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS volley_runs (
    id BIGSERIAL PRIMARY KEY,
    test TEXT NOT NULL,
    mode TEXT NOT NULL,
    started_at TEXT NOT NULL,
    started_unix_ms BIGINT NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    git_rev TEXT,
    labels TEXT NOT NULL DEFAULT '',
    requests BIGINT NOT NULL,
    rps DOUBLE PRECISION NOT NULL,
    p50_ms DOUBLE PRECISION,
    p95_ms DOUBLE PRECISION,
    p99_ms DOUBLE PRECISION,
    error_rate DOUBLE PRECISION,
    interrupted INTEGER NOT NULL DEFAULT 0,
    result BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS volley_runs_test ON volley_runs (test, started_unix_ms);
";

impl Backend for Postgres {
    fn init(&mut self) -> Result<(), String> {
        self.query(SCHEMA, &[]).map(|_| ())
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let mut text = bind(sql, params)?.into_bytes();
        text.push(0);
        self.send(&frame(b'Q', &text))?;
        let (mut types, mut rows, mut err) = (Vec::<i32>::new(), Vec::new(), None);
        loop {
            let (kind, body) = self.recv()?;
            match kind {
                b'T' => {
                    let mut at = 0;
                    let n = be_i16(&body, &mut at).max(0) as usize;
                    types.clear();
                    for _ in 0..n {
                        let _name = cstr(&body, &mut at);
                        at += 6; // table oid, column number
                        types.push(be_i32(&body, &mut at));
                        at += 8; // type size, modifier, format
                    }
                }
                b'D' => {
                    let mut at = 0;
                    let n = be_i16(&body, &mut at).max(0) as usize;
                    let mut row = Vec::with_capacity(n);
                    for c in 0..n {
                        let len = be_i32(&body, &mut at);
                        if len < 0 {
                            row.push(Value::Null);
                            continue;
                        }
                        let start = at.min(body.len());
                        let end = (start + len as usize).min(body.len());
                        let s = String::from_utf8_lossy(&body[start..end]).into_owned();
                        at = end;
                        row.push(match types.get(c).copied().unwrap_or(25) {
                            20 | 21 | 23 => s.parse().map_or(Value::Text(s), Value::Int),
                            700 | 701 | 1700 => s.parse().map_or(Value::Null, Value::Real),
                            17 => Value::Blob(hex_decode(&s)),
                            _ => Value::Text(s),
                        });
                    }
                    rows.push(row);
                }
                b'E' => err = Some(error_text(&body)),
                b'Z' => break,
                _ => {}
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = PgUrl::parse("postgres://bob:s%40cret@127.0.0.1:5433/hist").unwrap();
        assert_eq!(u.user, "bob");
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 5433));
        assert_eq!(u.dbname, "hist");
        let u = PgUrl::parse("postgresql://me@[::1]/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.dbname.as_str()),
            ("::1", 5432, "me")
        );
        assert_eq!(redact("postgres://a:pw@h:1/d"), "postgres://a@h:1/d");
    }

    #[test]
    fn literals_are_quoted() {
        let s = bind(
            "SELECT ?1, ?2, ?3, ?10",
            &[
                Value::Text("it's ?2".into()),
                Value::Int(-3),
                Value::Blob(vec![0, 255]),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Real(1.5),
            ],
        )
        .unwrap();
        assert_eq!(
            s,
            "SELECT 'it''s ?2', -3, '\\x00ff'::bytea, 1.5::double precision"
        );
        assert_eq!(hex_decode("\\x00ff"), vec![0, 255]);
    }

    #[test]
    fn scram_matches_rfc7677_example() {
        // RFC 7677 §3, with the client nonce fixed.
        let s = Scram {
            password: "pencil".into(),
            nonce: "rOprNGfwEbeRWgbNEkqO".into(),
        };
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = s.client_final(server_first).unwrap();
        // The RFC's client-first uses n=user; PostgreSQL sends an empty name, so only the
        // shape is checked here and the real exchange is tested against a server.
        assert!(fin.starts_with("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p="));
    }
}
