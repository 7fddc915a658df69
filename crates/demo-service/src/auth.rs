//! Accounts and sessions.
//!
//! Passwords are argon2id hashes (PHC strings) with deliberately **low, demo-only** cost
//! parameters ([`DEMO_PARAMS`]: 4 MiB, 2 passes), so a login benchmark measures real hashing
//! work without taking a production-grade 50+ ms per attempt. Never reuse them elsewhere.
//!
//! Logging in creates a session: an access token (15 minutes), a refresh token (7 days) and a
//! CSRF token. They are returned in the JSON body and set as cookies (`volley_access`,
//! `volley_refresh` — both `HttpOnly` — and `volley_csrf`, readable by scripts). A request is
//! authenticated by `Authorization: Bearer ACCESS` or by the access cookie; with the cookie, a
//! state-changing method (anything but GET, HEAD, OPTIONS, PROPFIND) must also send
//! `X-CSRF-Token` equal to the session's CSRF token (double submit, bound to the session).
//! Cookies carry no `Secure` flag because the demo serves plain HTTP on loopback.
//!
//! Sessions live in memory, bounded: expired ones are pruned as new ones are made, and past
//! [`MAX_SESSIONS`] the oldest go first, so a long login soak cannot grow memory forever.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use hyper::header::{self, HeaderMap};
use hyper::{Method, StatusCode};

use crate::error::ApiError;
use crate::store::random_hex;

/// argon2id, m = 4 MiB, t = 2, p = 1: demo-only (see the module docs).
pub(crate) const DEMO_PARAMS: (u32, u32, u32) = (4096, 2, 1);
pub(crate) const ACCESS_TTL: Duration = Duration::from_secs(15 * 60);
pub(crate) const REFRESH_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
pub(crate) const MAX_SESSIONS: usize = 200_000;

pub(crate) const ACCESS_COOKIE: &str = "volley_access";
pub(crate) const REFRESH_COOKIE: &str = "volley_refresh";
pub(crate) const CSRF_COOKIE: &str = "volley_csrf";
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

fn argon2() -> Argon2<'static> {
    let (m, t, p) = DEMO_PARAMS;
    Argon2::new(
        Algorithm::Argon2id,
        Version::V0x13,
        Params::new(m, t, p, None).expect("valid argon2 parameters"),
    )
}

pub(crate) fn hash_password(password: &str) -> Result<String, ApiError> {
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(ApiError::internal)
}

pub(crate) fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| argon2().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

/// A hash of a random password, verified against when the user does not exist.
pub(crate) fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password(&random_hex(16)).unwrap_or_default())
}

/// Who a request is from.
#[derive(Debug, Clone)]
pub(crate) struct Principal {
    pub user_id: i64,
    pub username: String,
    pub root: i64,
}

#[derive(Clone)]
struct Access {
    who: Principal,
    csrf: String,
    refresh: String,
    expires: Instant,
}

#[derive(Clone)]
struct Refresh {
    who: Principal,
    access: String,
    expires: Instant,
}

#[derive(Default)]
struct Inner {
    access: HashMap<String, Access>,
    refresh: HashMap<String, Refresh>,
    /// Creation order (= expiry order, since each kind has one TTL).
    access_order: VecDeque<String>,
    refresh_order: VecDeque<String>,
}

/// The tokens of a new session.
pub(crate) struct Issued {
    pub access: String,
    pub refresh: String,
    pub csrf: String,
}

#[derive(Default)]
pub(crate) struct Sessions {
    inner: Mutex<Inner>,
}

impl Sessions {
    pub(crate) fn issue(&self, who: Principal) -> Issued {
        let issued = Issued {
            access: random_hex(32),
            refresh: random_hex(32),
            csrf: random_hex(16),
        };
        let now = Instant::now();
        let mut g = self.lock();
        g.prune(now);
        g.access.insert(
            issued.access.clone(),
            Access {
                who: who.clone(),
                csrf: issued.csrf.clone(),
                refresh: issued.refresh.clone(),
                expires: now + ACCESS_TTL,
            },
        );
        g.access_order.push_back(issued.access.clone());
        g.refresh.insert(
            issued.refresh.clone(),
            Refresh {
                who,
                access: issued.access.clone(),
                expires: now + REFRESH_TTL,
            },
        );
        g.refresh_order.push_back(issued.refresh.clone());
        issued
    }

    /// Ends the session of a refresh token and returns whose it was, so the caller can
    /// issue a new one (rotation: each refresh token works once).
    pub(crate) fn redeem(&self, token: &str) -> Option<Principal> {
        let mut g = self.lock();
        let r = g.refresh.remove(token)?;
        g.access.remove(&r.access);
        (r.expires > Instant::now()).then_some(r.who)
    }

    /// Ends the session of an access token (its refresh token too).
    pub(crate) fn end(&self, access: &str) {
        let mut g = self.lock();
        if let Some(a) = g.access.remove(access) {
            g.refresh.remove(&a.refresh);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().access.len()
    }

    fn check(&self, token: &str) -> Option<(Principal, String)> {
        let g = self.lock();
        let a = g.access.get(token)?;
        (a.expires > Instant::now()).then(|| (a.who.clone(), a.csrf.clone()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn prune(&mut self, now: Instant) {
        while let Some(t) = self.access_order.front() {
            let gone = match self.access.get(t) {
                None => true,
                Some(a) => a.expires <= now || self.access.len() >= MAX_SESSIONS,
            };
            if !gone {
                break;
            }
            let t = self.access_order.pop_front().expect("front exists");
            self.access.remove(&t);
        }
        while let Some(t) = self.refresh_order.front() {
            let gone = match self.refresh.get(t) {
                None => true,
                Some(r) => r.expires <= now || self.refresh.len() >= MAX_SESSIONS,
            };
            if !gone {
                break;
            }
            let t = self.refresh_order.pop_front().expect("front exists");
            self.refresh.remove(&t);
        }
    }
}

/// The value of cookie `name` in the request's `Cookie` header(s).
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer`, `BEARER` are Bearer too.
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn safe_method(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS) || m.as_str() == "PROPFIND"
}

/// Authenticates an API request (bearer token, or cookie + CSRF for state changes). Returns
/// the principal and the access token used.
pub(crate) fn authenticate(
    sessions: &Sessions,
    method: &Method,
    headers: &HeaderMap,
) -> Result<(Principal, String), ApiError> {
    if let Some(token) = bearer(headers) {
        return sessions
            .check(token)
            .map(|(p, _)| (p, token.to_owned()))
            .ok_or_else(invalid_token);
    }
    let Some(token) = cookie(headers, ACCESS_COOKIE) else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "authentication required: Authorization: Bearer TOKEN or the session cookie",
        )
        .with_header(header::WWW_AUTHENTICATE, "Bearer"));
    };
    let (who, csrf) = sessions.check(token).ok_or_else(invalid_token)?;
    if !safe_method(method) {
        let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if sent != Some(csrf.as_str()) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "csrf",
                "cookie-authenticated requests that change state need the X-CSRF-Token header",
            ));
        }
    }
    Ok((who, token.to_owned()))
}

fn invalid_token() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        "the access token is unknown or expired",
    )
    .with_header(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")
}

/// `Set-Cookie` values for a new session.
pub(crate) fn session_cookies(i: &Issued) -> [String; 3] {
    [
        format!(
            "{ACCESS_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}",
            i.access,
            ACCESS_TTL.as_secs()
        ),
        format!(
            "{REFRESH_COOKIE}={}; Path=/api/auth; HttpOnly; SameSite=Strict; Max-Age={}",
            i.refresh,
            REFRESH_TTL.as_secs()
        ),
        format!(
            "{CSRF_COOKIE}={}; Path=/; SameSite=Lax; Max-Age={}",
            i.csrf,
            REFRESH_TTL.as_secs()
        ),
    ]
}

pub(crate) fn clear_cookies() -> [String; 3] {
    [
        format!("{ACCESS_COOKIE}=; Path=/; HttpOnly; Max-Age=0"),
        format!("{REFRESH_COOKIE}=; Path=/api/auth; HttpOnly; Max-Age=0"),
        format!("{CSRF_COOKIE}=; Path=/; Max-Age=0"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_carry_demo_params() {
        let h = hash_password("bench-pass-1234").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=4096,t=2,p=1$"), "{h}");
        assert!(verify_password("bench-pass-1234", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn refresh_rotates_and_logout_ends() {
        let s = Sessions::default();
        let who = Principal {
            user_id: 1,
            username: "u".into(),
            root: 1,
        };
        let a = s.issue(who);
        assert!(s.check(&a.access).is_some());
        let who = s.redeem(&a.refresh).expect("refresh works once");
        assert!(s.check(&a.access).is_none(), "old access ends");
        assert!(s.redeem(&a.refresh).is_none(), "old refresh is single-use");
        let b = s.issue(who);
        s.end(&b.access);
        assert!(s.check(&b.access).is_none());
        assert!(s.redeem(&b.refresh).is_none());
    }
}
