//! The PostgreSQL backend: the `postgres` crate through `volley-postgres` (TLS per the URL's
//! `sslmode`, every login method PostgreSQL offers). Statements use the history's `?N`
//! placeholders, sent as `$N` parameters of whatever type the server infers for them.

use crate::{Backend, Value};
use volley_postgres::postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use volley_postgres::postgres::{Client, Row};

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    volley_postgres::redact(url)
}

/// Whether `url` is a usable connection URL (syntax only: nothing is contacted).
pub fn check_url(url: &str) -> Result<(), String> {
    match volley_postgres::connect::parse_url(url) {
        Ok(_) => Ok(()),
        Err(volley_postgres::Error::Url { message, .. }) => Err(message),
        Err(e) => Err(e.to_string()),
    }
}

pub struct Postgres {
    client: Client,
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, String> {
        let client = volley_postgres::connect(url).map_err(|e| e.to_string())?;
        Ok(Postgres { client })
    }
}

/// `?N` placeholders as PostgreSQL's `$N` (the templates never hold `?` in quotes).
pub(crate) fn placeholders(sql: &str) -> String {
    sql.replace('?', "$")
}

/// A [`Value`] bound to a parameter of the type the server inferred for it.
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::FLOAT8 => (*i as f64).to_sql(ty, out),
            Value::Int(i) => i.to_sql(ty, out),
            Value::Real(f) if *ty == Type::FLOAT4 => (*f as f32).to_sql(ty, out),
            Value::Real(f) => f.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn value(row: &Row, i: usize) -> Value {
    let ty = row.columns()[i].type_();
    let got = if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|x| Value::Int(x.into())))
    } else if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)
            .map(|v| v.map(|x| Value::Int(x.into())))
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real))
    } else if *ty == Type::FLOAT4 {
        row.try_get::<_, Option<f32>>(i)
            .map(|v| v.map(|x| Value::Real(x.into())))
    } else if *ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)
            .map(|v| v.map(Value::Blob))
    } else {
        row.try_get::<_, Option<String>>(i)
            .map(|v| v.map(Value::Text))
    };
    got.ok().flatten().unwrap_or(Value::Null)
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
    result BYTEA NOT NULL,
    max_rate DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS volley_runs_test ON volley_runs (test, started_unix_ms);
-- Histories made before the column existed.
ALTER TABLE volley_runs ADD COLUMN IF NOT EXISTS max_rate DOUBLE PRECISION;
";

fn db_error(e: volley_postgres::postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

impl Backend for Postgres {
    fn init(&mut self) -> Result<(), String> {
        self.client.batch_execute(SCHEMA).map_err(db_error)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let params: Vec<Param> = params.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let rows = self
            .client
            .query(&placeholders(sql), &refs)
            .map_err(db_error)?;
        Ok(rows
            .iter()
            .map(|r| (0..r.len()).map(|i| value(r, i)).collect())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollar_parameters() {
        assert_eq!(
            placeholders("SELECT a FROM t WHERE x = ?1 AND y LIKE ?10 ESCAPE '!'"),
            "SELECT a FROM t WHERE x = $1 AND y LIKE $10 ESCAPE '!'"
        );
    }

    #[test]
    fn urls_are_checked_and_redacted() {
        assert!(check_url("postgres://u@127.0.0.1:nope/db").is_err());
        assert!(check_url("postgres://u:pw@127.0.0.1/db?sslmode=verify-full").is_ok());
        assert_eq!(redact("postgres://a:pw@h:1/d"), "postgres://a@h:1/d");
    }
}
