//! `${...}` in suite file strings: `${port}` (this service's port), `${services.NAME.port}`,
//! `${services.NAME.url}`, `${services.NAME.host}`, `${env.NAME}` (or `${env.NAME:-default}`),
//! `${suite.dir}`, `${profile}`, `${results}`, `${tmp}` (a scratch directory removed after
//! teardown, for service data that should not land in the results), `${volley}` (this `volley` binary, so a suite
//! can start `volley target` or `volley demo serve` without PATH). `$${` is a literal `${` (for
//! a shell's own `${VAR}`); any other `$` is left alone, so `$HOME` and `$$` reach the shell. Ports are allocated for
//! every service before any starts, so any string may name any service; the check runs the
//! same expansion against a dry context, so a bad reference fails `volley suite check` too.

use std::collections::BTreeMap;

/// What a service exposes to the others.
#[derive(Clone, Debug, Default)]
pub struct Exposed {
    pub port: u16,
    pub url: String,
}

/// The values `${...}` can take.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    pub services: BTreeMap<String, Exposed>,
    pub suite_dir: String,
    pub profile: String,
    pub results: String,
    /// A scratch directory of this run, removed after teardown.
    pub tmp: String,
    /// The running `volley` executable.
    pub volley: String,
    /// The service whose strings are expanded (`${port}`), if any.
    pub this: Option<String>,
    /// The environment `${env.NAME}` reads (the process's at run time).
    pub env: BTreeMap<String, String>,
}

impl Ctx {
    /// Expands every `${...}` in `s`. An error names the reference and what exists.
    pub fn expand(&self, s: &str) -> Result<String, String> {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            rest = &rest[i..];
            if let Some(r) = rest.strip_prefix("$${") {
                out.push_str("${");
                rest = r;
            } else if let Some(r) = rest.strip_prefix("${") {
                let end = r.find('}').ok_or_else(|| {
                    format!("'{s}': '${{' without a closing '}}' (write $${{ for a literal ${{)")
                })?;
                out.push_str(&self.lookup(r[..end].trim())?);
                rest = &r[end + 1..];
            } else {
                out.push('$');
                rest = &rest[1..];
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    fn lookup(&self, key: &str) -> Result<String, String> {
        if key == "port" {
            let this = self.this.as_ref().ok_or(
                "${port} is a service's own port; in steps use ${services.NAME.port}".to_string(),
            )?;
            return Ok(self.services.get(this).map_or(0, |e| e.port).to_string());
        }
        match key {
            "suite.dir" => return Ok(self.suite_dir.clone()),
            "profile" => return Ok(self.profile.clone()),
            "results" => return Ok(self.results.clone()),
            "volley" => return Ok(self.volley.clone()),
            "tmp" => return Ok(self.tmp.clone()),
            _ => {}
        }
        if let Some(name) = key.strip_prefix("env.") {
            let (name, default) = match name.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (name, None),
            };
            return match (self.env.get(name), default) {
                (Some(v), _) => Ok(v.clone()),
                (None, Some(d)) => Ok(d.to_string()),
                (None, None) => Err(format!(
                    "${{env.{name}}}: the environment has no {name} (give a default: ${{env.{name}:-value}})"
                )),
            };
        }
        if let Some(rest) = key.strip_prefix("services.") {
            let (name, field) = rest.rsplit_once('.').unwrap_or((rest, ""));
            let e = self.services.get(name).ok_or_else(|| {
                let known: Vec<&str> = self.services.keys().map(String::as_str).collect();
                format!(
                    "${{{key}}}: no service '{name}' (the suite has: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )
            })?;
            return match field {
                "port" => Ok(e.port.to_string()),
                "url" => Ok(e.url.clone()),
                "host" => Ok("127.0.0.1".into()),
                _ => Err(format!(
                    "${{{key}}}: a service exposes .port, .url and .host"
                )),
            };
        }
        Err(format!(
            "${{{key}}}: unknown; use ${{port}}, ${{services.NAME.port|url|host}}, ${{env.NAME}}, \
             ${{suite.dir}}, ${{profile}}, ${{results}}, ${{tmp}} or ${{volley}} ($${{ is a literal ${{)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        let mut c = Ctx::default();
        c.services.insert(
            "db".into(),
            Exposed {
                port: 5433,
                url: "postgres://volley@127.0.0.1:5433/volley".into(),
            },
        );
        c.services.insert(
            "api".into(),
            Exposed {
                port: 8080,
                url: "http://127.0.0.1:8080".into(),
            },
        );
        c.env.insert("HOME".into(), "/root".into());
        c
    }

    #[test]
    fn expands_services_env_and_own_port() {
        let mut c = ctx();
        c.this = Some("api".into());
        assert_eq!(
            c.expand("--listen 127.0.0.1:${port} --database ${services.db.url}")
                .unwrap(),
            "--listen 127.0.0.1:8080 --database postgres://volley@127.0.0.1:5433/volley"
        );
        assert_eq!(c.expand("${env.HOME}/x").unwrap(), "/root/x");
        assert_eq!(c.expand("${env.NOPE:-7}").unwrap(), "7");
        assert_eq!(
            c.expand("$HOME $$ $${HOME} ${ services.db.port }$")
                .unwrap(),
            "$HOME $$ ${HOME} 5433$"
        );
    }

    #[test]
    fn bad_references_say_what_exists() {
        let c = ctx();
        let e = c.expand("${services.cache.port}").unwrap_err();
        assert!(
            e.contains("no service 'cache'") && e.contains("api, db"),
            "{e}"
        );
        assert!(c
            .expand("${port}")
            .unwrap_err()
            .contains("services.NAME.port"));
        assert!(c.expand("${env.NOPE}").unwrap_err().contains(":-value"));
        assert!(c.expand("${services.db.pid}").unwrap_err().contains(".url"));
        assert!(c.expand("${oops").unwrap_err().contains("closing"));
        assert!(c.expand("${what}").unwrap_err().contains("unknown"));
    }
}
