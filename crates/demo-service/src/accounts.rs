//! The account handlers: register, login, refresh, logout, current user (sessions, cookies
//! and CSRF are in `auth`).

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, StatusCode};
use serde_json::{json, Value};

use crate::auth::{self, Principal};
use crate::body::{self, Resp};
use crate::error::ApiError;
use crate::files::{blocking, json_body, str_field, who};
use crate::server::App;

pub(crate) async fn register(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let m = json_body(app, req).await?;
    let username = str_field(&m, "username")?.to_owned();
    let password = str_field(&m, "password")?.to_owned();
    let email = m.get("email").and_then(Value::as_str).map(str::to_owned);
    let ok_name = (3..=64).contains(&username.len())
        && username
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !ok_name {
        return Err(ApiError::bad_request(
            "invalid_username",
            "username: 3-64 characters, letters, digits, _ . -",
        ));
    }
    if !(8..=128).contains(&password.chars().count()) {
        return Err(ApiError::bad_request(
            "invalid_password",
            "password: 8-128 characters",
        ));
    }
    let a = app.clone();
    let user = blocking(move || {
        let hash = auth::hash_password(&password)?;
        a.db.register(&username, email.as_deref(), &hash)
    })
    .await?;
    Ok(body::json(
        StatusCode::CREATED,
        &json!({ "user": user.json() }),
    ))
}

/// Checks a username and password (argon2, on the blocking pool).
pub(crate) async fn check_password(
    app: &Arc<App>,
    username: String,
    password: String,
) -> Result<Principal, ApiError> {
    let a = app.clone();
    blocking(move || {
        let user = a.db.user_by_name(&username)?;
        match user {
            Some(u) if auth::verify_password(&password, &u.password_hash) => Ok(Principal {
                user_id: u.id,
                username: u.username,
                root: u.root,
            }),
            other => {
                if other.is_none() {
                    // Same work for an unknown user as for a wrong password: no timing
                    // difference that reveals which usernames exist.
                    auth::verify_password(&password, auth::dummy_hash());
                }
                Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "invalid_credentials",
                    "wrong username or password",
                ))
            }
        }
    })
    .await
}

fn session_response(app: &App, who: &Principal, status: StatusCode) -> Resp {
    let issued = app.sessions.issue(who.clone());
    let mut resp = body::json(
        status,
        &json!({
            "access_token": issued.access,
            "refresh_token": issued.refresh,
            "csrf_token": issued.csrf,
            "token_type": "Bearer",
            "expires_in": auth::ACCESS_TTL.as_secs(),
            "user": {"id": who.user_id, "username": who.username, "root_folder_id": who.root},
        }),
    );
    for c in auth::session_cookies(&issued) {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}

pub(crate) async fn login(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let m = json_body(app, req).await?;
    let who = check_password(
        app,
        str_field(&m, "username")?.to_owned(),
        str_field(&m, "password")?.to_owned(),
    )
    .await?;
    Ok(session_response(app, &who, StatusCode::OK))
}

/// The refresh token comes from the JSON body (`refresh_token`), or from the refresh cookie —
/// then, as a state change authenticated by cookie, with `X-CSRF-Token` equal to the CSRF
/// cookie.
pub(crate) async fn refresh(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let headers = req.headers().clone();
    let m = json_body(app, req).await?;
    let token = match m.get("refresh_token").and_then(Value::as_str) {
        Some(t) => t.to_owned(),
        None => {
            let Some(t) = auth::cookie(&headers, auth::REFRESH_COOKIE) else {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthenticated",
                    "no refresh token",
                ));
            };
            let csrf = auth::cookie(&headers, auth::CSRF_COOKIE);
            let sent = headers.get(auth::CSRF_HEADER).and_then(|v| v.to_str().ok());
            if csrf.is_none() || csrf != sent {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "csrf",
                    "refreshing by cookie needs the X-CSRF-Token header",
                ));
            }
            t.to_owned()
        }
    };
    let Some(issued) = app.sessions.redeem(&token) else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "the refresh token is unknown, used or expired",
        ));
    };
    Ok(session_response(app, &issued, StatusCode::OK))
}

pub(crate) fn logout(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let (_, token) = auth::authenticate(&app.sessions, req.method(), req.headers())?;
    app.sessions.end(&token);
    let mut resp = body::json(StatusCode::OK, &json!({"ok": true}));
    for c in auth::clear_cookies() {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    Ok(resp)
}

pub(crate) async fn me(app: &Arc<App>, req: Request<Incoming>) -> Result<Resp, ApiError> {
    let p = who(app, &req)?;
    let a = app.clone();
    let user = blocking(move || {
        a.db.user_by_name(&p.username)?
            .ok_or_else(|| ApiError::not_found("user"))
    })
    .await?;
    Ok(body::json(StatusCode::OK, &json!({ "user": user.json() })))
}
