//! [`Cluster`]: one throwaway PostgreSQL server, from `initdb` to a removed data dir.
//!
//! Readiness is a real login (not `pg_isready`, which says "accepting connections" before the
//! requested role and auth work), first over the unix socket in our own data dir — no other
//! process can answer there, while a stranger holding the TCP port could accept and never
//! reply — then over TCP (postgres binds TCP before the socket, so that one is ours too). Teardown is PostgreSQL's fast shutdown (SIGINT: sessions
//! are cut, the server exits cleanly), escalated to immediate (SIGQUIT) and SIGKILL when it
//! hangs, so nothing survives `stop` or `drop`.

use crate::binaries::{find_binaries, PgBinaries};
use crate::error::Error;
use crate::user::{self, RunAs};
use crate::ClusterOptions;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How many log lines an error shows.
const LOG_TAIL: usize = 20;

/// A running PostgreSQL server; stopped (and a temporary data dir removed) by [`Cluster::stop`]
/// or on drop.
#[derive(Debug)]
pub struct Cluster {
    child: Option<Child>,
    port: u16,
    user: String,
    password: Option<String>,
    database: String,
    data_dir: PathBuf,
    log_file: PathBuf,
    /// The temporary root (holding `data`) to remove on stop; `None` for a given data dir.
    temp_root: Option<PathBuf>,
}

impl Cluster {
    /// Finds the binaries and starts a cluster; `timeout` bounds initdb, start and readiness.
    pub fn start(opts: &ClusterOptions, timeout: Duration) -> Result<Cluster, Error> {
        Cluster::start_with(&find_binaries()?, opts, timeout)
    }

    /// [`Cluster::start`] with given binaries.
    pub fn start_with(
        bins: &PgBinaries,
        opts: &ClusterOptions,
        timeout: Duration,
    ) -> Result<Cluster, Error> {
        let deadline = Instant::now() + timeout;
        let run_as = user::unprivileged();
        let (data_dir, temp_root) = match &opts.data_dir {
            Some(d) => {
                fs::create_dir_all(d)
                    .map_err(|e| Error::io(format!("cannot create data dir {}", d.display()), e))?;
                (d.clone(), None)
            }
            None => {
                let root = temp_root()?;
                (root.join("data"), Some(root))
            }
        };
        let log_file = opts
            .log_file
            .clone()
            .unwrap_or_else(|| data_dir.join("volley-postgres.log"));
        // From here on, Drop cleans up whatever exists.
        let mut cluster = Cluster {
            child: None,
            port: 0,
            user: opts.user.clone(),
            password: opts.password.clone(),
            database: opts.database.clone(),
            data_dir,
            log_file,
            temp_root,
        };
        if let Some(ids) = run_as {
            let dir = cluster.temp_root.as_ref().unwrap_or(&cluster.data_dir);
            chown(dir, ids)?;
        }
        if !cluster.data_dir.join("PG_VERSION").exists() {
            cluster.initdb(bins, opts, run_as)?;
        }
        // A free port can be taken between our probe and the server's bind: retry then.
        let mut attempts = if opts.port.is_some() { 1 } else { 3 };
        loop {
            cluster.port = opts.port.map_or_else(free_port, Ok)?;
            match cluster.serve(bins, run_as, deadline) {
                Err(Error::Failed { detail, .. })
                    if attempts > 1 && detail.contains("could not bind") =>
                {
                    attempts -= 1;
                }
                other => {
                    other?;
                    break;
                }
            }
        }
        cluster.create_database()?;
        for file in &opts.init_sql {
            cluster.run_sql_file(file)?;
        }
        Ok(cluster)
    }

    /// The server's TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://user[:password]@127.0.0.1:PORT/database` ([`url`]).
    pub fn url(&self) -> String {
        url(
            &self.user,
            self.password.as_deref(),
            self.port,
            &self.database,
        )
    }

    /// The postmaster's process id (0 once stopped).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where the server's output goes.
    pub fn log_file(&self) -> &Path {
        &self.log_file
    }

    /// A new client session on the cluster's database.
    pub fn connect(&self) -> Result<postgres::Client, Error> {
        self.connect_to(&self.database)
    }

    /// Runs an SQL file (many statements) against the database; a failing statement's error
    /// names `file:line:column`.
    pub fn run_sql_file(&self, path: &Path) -> Result<(), Error> {
        let sql = fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read SQL file {}", path.display()), e))?;
        let mut client = self.connect()?;
        client
            .batch_execute(&sql)
            .map_err(|e| sql_error(path, &sql, e))
    }

    /// Turns TLS on (`ssl = on` and a reload): the PEM certificate and key go into the data
    /// dir, owned by the server's user. Returns once a new session is offered TLS.
    pub fn enable_tls(&self, cert_pem: &str, key_pem: &str) -> Result<(), Error> {
        self.write_server_file("server.crt", cert_pem)?;
        self.write_server_file("server.key", key_pem)?;
        let mut client = self.connect()?;
        // Two statements: ALTER SYSTEM refuses to run in a multi-statement (implicit) transaction.
        for sql in ["ALTER SYSTEM SET ssl = on", "SELECT pg_reload_conf()"] {
            client.batch_execute(sql).map_err(|source| Error::Client {
                context: "cannot turn TLS on".into(),
                source,
            })?;
        }
        // The postmaster applies a reload asynchronously: wait until sessions see it.
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let on: bool = self
                .connect()?
                .query_one("SHOW ssl", &[])
                .map(|r| r.get::<_, String>(0) == "on")
                .unwrap_or(false);
            if on {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(Error::failed(
                    "TLS did not come on after a reload",
                    self.log_tail(),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes a file into the data dir that the server (maybe another user) owns, mode 0600.
    pub fn write_server_file(&self, name: &str, content: &str) -> Result<(), Error> {
        let path = self.data_dir.join(name);
        let io = |e| Error::io(format!("cannot write {}", path.display()), e);
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true).mode(0o600);
        let mut file = opts.open(&path).map_err(io)?;
        std::io::Write::write_all(&mut file, content.as_bytes()).map_err(io)?;
        let owner = fs::metadata(&self.data_dir).map_err(io)?;
        std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid())).map_err(io)
    }

    /// Fast shutdown, then removes a temporary data dir.
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn initdb(
        &self,
        bins: &PgBinaries,
        opts: &ClusterOptions,
        run_as: Option<RunAs>,
    ) -> Result<(), Error> {
        let mut cmd = Command::new(&bins.initdb);
        cmd.arg("-D").arg(&self.data_dir);
        cmd.args(["-U", &opts.user, "-E", "UTF8", "--no-locale"]);
        if self.temp_root.is_some() {
            // Nothing to keep across a crash of a throwaway cluster.
            cmd.arg("--no-sync");
        }
        let pwfile = match &opts.password {
            Some(pw) => {
                let file = self.scratch_file("pwfile", pw, run_as)?;
                cmd.args(["--auth-local=trust", "--auth-host=scram-sha-256"]);
                cmd.arg(format!("--pwfile={}", file.display()));
                Some(file)
            }
            None => {
                cmd.arg("--auth=trust");
                None
            }
        };
        prepare(&mut cmd, run_as, &self.data_dir);
        let out = cmd.output();
        if let Some(f) = pwfile {
            let _ = fs::remove_file(f);
        }
        let out = out.map_err(|e| Error::io(format!("cannot run {}", bins.initdb.display()), e))?;
        if out.status.success() {
            return Ok(());
        }
        let mut detail = String::from_utf8_lossy(&out.stderr).into_owned();
        detail.push_str(&String::from_utf8_lossy(&out.stdout));
        if let Some(ids) = run_as {
            detail.push_str(&format!(
                "\nhint: as root the server runs as uid {}: the data dir and its parents must be reachable by it",
                ids.uid
            ));
        }
        Err(Error::failed(
            format!("initdb failed ({})", out.status),
            detail,
        ))
    }

    /// Starts the server and waits until a login works.
    fn serve(
        &mut self,
        bins: &PgBinaries,
        run_as: Option<RunAs>,
        deadline: Instant,
    ) -> Result<(), Error> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_file)
            .map_err(|e| {
                Error::io(
                    format!("cannot open log file {}", self.log_file.display()),
                    e,
                )
            })?;
        let log2 = log
            .try_clone()
            .map_err(|e| Error::io("cannot duplicate the log file", e))?;
        let mut cmd = Command::new(&bins.postgres);
        cmd.arg("-D").arg(&self.data_dir);
        cmd.args(["-p", &self.port.to_string(), "-h", "127.0.0.1", "-k"]);
        cmd.arg(&self.data_dir);
        cmd.stdout(log).stderr(log2);
        prepare(&mut cmd, run_as, &self.data_dir);
        let child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("cannot start {}", bins.postgres.display()), e))?;
        self.child = Some(child);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(Error::failed(
                    format!(
                        "postgres exited ({status}) before accepting connections on 127.0.0.1:{}",
                        self.port
                    ),
                    self.log_tail(),
                ));
            }
            let last = match self.connect_via(Via::Socket, "postgres") {
                Ok(_) => return self.connect_to("postgres").map(drop),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                let _ = self.shutdown_server();
                return Err(Error::failed(
                    format!(
                        "PostgreSQL not ready on 127.0.0.1:{} in time (last attempt: {last})",
                        self.port
                    ),
                    self.log_tail(),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn connect_to(&self, database: &str) -> Result<postgres::Client, Error> {
        self.connect_via(Via::Tcp, database)
    }

    fn connect_via(&self, via: Via, database: &str) -> Result<postgres::Client, Error> {
        let mut config = postgres::Config::new();
        match via {
            Via::Tcp => config.host("127.0.0.1"),
            Via::Socket => config.host_path(&self.data_dir),
        };
        config
            .port(self.port)
            .user(&self.user)
            .dbname(database)
            .connect_timeout(Duration::from_secs(5));
        if let Some(pw) = &self.password {
            config.password(pw);
        }
        config
            .connect(postgres::NoTls)
            .map_err(|source| Error::Client {
                context: format!("cannot connect to 127.0.0.1:{}/{database}", self.port),
                source,
            })
    }

    fn create_database(&self) -> Result<(), Error> {
        let mut client = self.connect_to("postgres")?;
        let exists = client
            .query_opt(
                "SELECT 1 FROM pg_database WHERE datname = $1",
                &[&self.database],
            )
            .map_err(|source| Error::Client {
                context: "cannot list databases".into(),
                source,
            })?;
        if exists.is_none() {
            let quoted = format!("\"{}\"", self.database.replace('"', "\"\""));
            client
                .batch_execute(&format!("CREATE DATABASE {quoted}"))
                .map_err(|source| Error::Client {
                    context: format!("cannot create database {quoted}"),
                    source,
                })?;
        }
        Ok(())
    }

    /// A file for initdb in the temporary root (or the system temp dir), readable by `run_as`.
    fn scratch_file(
        &self,
        name: &str,
        content: &str,
        run_as: Option<RunAs>,
    ) -> Result<PathBuf, Error> {
        let dir = self.temp_root.clone().unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!(
            "volley-pg-{name}-{}-{}",
            std::process::id(),
            next_id()
        ));
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true).mode(0o600);
        let write = |f: &mut File| std::io::Write::write_all(f, content.as_bytes());
        opts.open(&path)
            .and_then(|mut f| write(&mut f))
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        if let Some(ids) = run_as {
            chown(&path, ids)?;
        }
        Ok(path)
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log_file).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
        format!("last lines of {}:\n{tail}", self.log_file.display())
    }

    /// Stops the server: fast, then immediate, then SIGKILL.
    fn shutdown_server(&mut self) -> Result<(), Error> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        for (signal, grace) in [(libc::SIGINT, 15), (libc::SIGQUIT, 5), (libc::SIGKILL, 5)] {
            if child.try_wait().ok().flatten().is_some() {
                return Ok(());
            }
            // SAFETY: kill has no memory preconditions; the pid is our own unreaped child.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let until = Instant::now() + Duration::from_secs(grace);
            while Instant::now() < until {
                if child.try_wait().ok().flatten().is_some() {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(Error::failed(
            format!("postgres (pid {}) did not exit after SIGKILL", child.id()),
            "",
        ))
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        let stopped = self.shutdown_server();
        if let Some(root) = self.temp_root.take() {
            fs::remove_dir_all(&root)
                .map_err(|e| Error::io(format!("cannot remove {}", root.display()), e))?;
        }
        stopped
    }
}

#[derive(Clone, Copy)]
enum Via {
    Tcp,
    Socket,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Runs as `run_as`, outside any directory it cannot enter, without the caller's PG*
/// settings (PGDATA, PGPORT… would override ours).
fn prepare(cmd: &mut Command, run_as: Option<RunAs>, data_dir: &Path) {
    cmd.stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(
        data_dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("/")),
    );
    if let Some(ids) = run_as {
        // std drops supplementary groups too when we are root.
        cmd.uid(ids.uid).gid(ids.gid);
    }
}

fn chown(path: &Path, ids: RunAs) -> Result<(), Error> {
    std::os::unix::fs::chown(path, Some(ids.uid), Some(ids.gid)).map_err(|e| {
        Error::io(
            format!("cannot hand {} to uid {}", path.display(), ids.uid),
            e,
        )
    })
}

fn next_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A fresh 0700 dir under the system temp dir.
fn temp_root() -> Result<PathBuf, Error> {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = base.join(format!(
        "volley-pg-{}-{}-{nanos}",
        std::process::id(),
        next_id()
    ));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
    Ok(path)
}

fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::io("cannot find a free port on 127.0.0.1", e))
}

/// `postgres://user[:password]@127.0.0.1:PORT/database`, user, password and database
/// percent-encoded: the URL of a cluster on loopback, also known before it starts (a suite's
/// `${services.NAME.url}`).
pub fn url(user: &str, password: Option<&str>, port: u16, database: &str) -> String {
    let auth = match password {
        Some(pw) => format!("{}:{}", encode(user), encode(pw)),
        None => encode(user),
    };
    format!("postgres://{auth}@127.0.0.1:{port}/{}", encode(database))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An SQL file's error at `file:line:column` when the server reports a position.
fn sql_error(path: &Path, sql: &str, err: postgres::Error) -> Error {
    let Some(db) = err.as_db_error() else {
        return Error::Client {
            context: format!("{}", path.display()),
            source: err,
        };
    };
    let location = match db.position() {
        Some(postgres::error::ErrorPosition::Original(pos)) => {
            let (line, col) = line_col(sql, *pos as usize);
            format!("{}:{line}:{col}", path.display())
        }
        _ => path.display().to_string(),
    };
    let mut message = format!("{}: {}", db.severity(), db.message());
    if let Some(hint) = db.hint() {
        message.push_str(&format!("\nhint: {hint}"));
    }
    Error::Sql { location, message }
}

/// 1-based line and column of the 1-based character position `pos`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let (mut line, mut col) = (1, 1);
    for c in text.chars().take(pos.saturating_sub(1)) {
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_become_line_and_column() {
        let sql = "SELECT 1;\nSELEC 2;\n";
        assert_eq!(line_col(sql, 1), (1, 1));
        assert_eq!(line_col(sql, 11), (2, 1));
        assert_eq!(line_col(sql, 13), (2, 3));
    }

    #[test]
    fn url_parts_are_percent_encoded() {
        assert_eq!(encode("a b@c:d/é"), "a%20b%40c%3Ad%2F%C3%A9");
        assert_eq!(encode("volley_1-x.y~"), "volley_1-x.y~");
    }
}
