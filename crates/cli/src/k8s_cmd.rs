//! `volley k8s render TEST.tar --parallelism N -o manifests/`: flags → [`volley_k8s::Spec`]
//! → YAML files for `kubectl apply` (docs/distributed.md). Exit 2 for a bad flag or value,
//! 1 when the archive cannot be read or the files cannot be written.

use crate::exit;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use volley_k8s::spec::{self, ArchiveSource, Resources, Spec, SpecError, Token};

#[derive(Args, Debug)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub action: K8sAction,
}

#[derive(Subcommand, Debug)]
pub enum K8sAction {
    /// Write the manifests of a distributed run: ConfigMap (the archive), Secret (the token),
    /// the coordinator's Job and Service, the agents' Indexed Job
    Render(Box<RenderArgs>),
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The test as an archive (volley archive script.js -o test.tar)
    pub test: PathBuf,
    /// Agents (pods of the Indexed Job), each running its segment of the test
    #[arg(long, value_name = "N")]
    pub parallelism: u32,
    /// Directory to write the *.yaml files to (created if absent), or - for stdout
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: PathBuf,
    /// Prefix of every object's name (default: from the archive's file name)
    #[arg(long)]
    pub name: Option<String>,
    /// Namespace of the objects (default: kubectl's current one)
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Container image with the volley binary (built from the repository's Dockerfile)
    #[arg(long, default_value = concat!("volley:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Each agent's CPU, REQUEST[:LIMIT] (one value sets both)
    #[arg(long, default_value = "1", value_name = "QTY")]
    pub agent_cpu: String,
    /// Each agent's memory, REQUEST[:LIMIT]
    #[arg(long, default_value = "512Mi", value_name = "QTY")]
    pub agent_memory: String,
    /// The coordinator's CPU, REQUEST[:LIMIT]
    #[arg(long, default_value = "500m", value_name = "QTY")]
    pub coordinator_cpu: String,
    /// The coordinator's memory, REQUEST[:LIMIT]
    #[arg(long, default_value = "256Mi", value_name = "QTY")]
    pub coordinator_memory: String,
    /// Use this existing Secret's `token` key instead of rendering one with a random token
    #[arg(long, value_name = "SECRET")]
    pub token_secret: Option<String>,
    /// Run the pods under this service account (default: none, and no API token mounted)
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// Schedule the pods on nodes with this label, KEY=VALUE (repeatable)
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Set an __ENV variable of the test: -e KEY=VALUE (repeatable; given to the coordinator)
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The coordinator's port (container and Service)
    #[arg(long, default_value_t = spec::DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// How long the coordinator waits for every agent, and the agents for the coordinator
    #[arg(long, default_value = "5m", value_parser = parse_duration_text)]
    pub start_timeout: String,
    /// What the coordinator does when an agent is lost: continue or abort
    #[arg(long, value_parser = ["continue", "abort"])]
    pub on_agent_loss: Option<String>,
    /// Seconds a finished Job (and its pods' logs) is kept before Kubernetes deletes it
    #[arg(long, default_value_t = 3600)]
    pub ttl_after_finished: u32,
    /// A PersistentVolumeClaim the coordinator saves result.json and summary.json to
    #[arg(long, value_name = "CLAIM")]
    pub results_pvc: Option<String>,
    /// The archive is in the image at this path (for archives over a ConfigMap's 1 MiB):
    /// no ConfigMap is rendered
    #[arg(long, value_name = "PATH")]
    pub archive_in_image: Option<String>,
}

/// Checked like every duration flag, passed on as written (`5m`, `90s`).
fn parse_duration_text(s: &str) -> Result<String, String> {
    volley_engine::parse_duration(s).map(|_| s.to_string())
}

pub fn run(a: K8sArgs) -> i32 {
    match a.action {
        K8sAction::Render(r) => render(*r),
    }
}

fn usage(e: SpecError) -> i32 {
    exit::usage(&e.to_string())
}

fn render(a: RenderArgs) -> i32 {
    let archive = match read_archive(&a.test, a.archive_in_image.is_some()) {
        Ok(b) => b,
        Err(e) => return exit::fail(&e),
    };
    let s = match spec_of(&a, archive) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let manifests = match volley_k8s::render(&s) {
        Ok(m) => m,
        Err(e) => return usage(e),
    };
    if a.output.as_os_str() == "-" {
        let docs: Vec<String> = manifests.iter().map(|m| m.yaml()).collect();
        exit::print(&docs.join("---\n"));
        return exit::OK;
    }
    if let Err(e) = write_all(&a.output, &manifests) {
        return exit::fail(&e);
    }
    eprintln!(
        "wrote {} to {}\n  next: kubectl apply --server-side -f {}  (docs/distributed.md)",
        manifests
            .iter()
            .map(|m| m.file)
            .collect::<Vec<_>>()
            .join(", "),
        a.output.display(),
        a.output.display()
    );
    exit::OK
}

/// The archive's bytes (checked to be an archive); with `--archive-in-image` only checked.
fn read_archive(path: &Path, in_image: bool) -> Result<Vec<u8>, String> {
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{name}: {e}"))?;
    if !volley_js::archive::is_archive(path) {
        return Err(format!(
            "{name}: not an archive\n  hint: make one with volley archive script.js -o test.tar"
        ));
    }
    volley_js::archive::read(path)?;
    if in_image {
        return Ok(Vec::new());
    }
    // Too large for a ConfigMap: said before reading it whole.
    spec::check_archive_size(meta.len()).map_err(|e| format!("{name}: {e}"))?;
    std::fs::read(path).map_err(|e| format!("{name}: {e}"))
}

fn spec_of(a: &RenderArgs, archive: Vec<u8>) -> Result<Spec, SpecError> {
    let name = match &a.name {
        Some(n) => n.clone(),
        None => spec::name_from_stem(
            &a.test
                .file_stem()
                .map(|s| s.to_string_lossy())
                .unwrap_or_default(),
        ),
    };
    let token = match &a.token_secret {
        Some(s) => Token::Existing(s.clone()),
        None => Token::Generated(volley_k8s::random_token().map_err(|e| SpecError {
            flag: "--token-secret",
            message: format!("cannot make a random token: {e}"),
            hint: "name an existing Secret with a `token` key".into(),
        })?),
    };
    Ok(Spec {
        name,
        namespace: a.namespace.clone(),
        image: a.image.clone(),
        parallelism: a.parallelism,
        port: a.port,
        archive: match &a.archive_in_image {
            Some(p) => ArchiveSource::InImage(p.clone()),
            None => ArchiveSource::ConfigMap(archive),
        },
        token,
        agent: Resources {
            cpu: spec::parse_quantity("--agent-cpu", &a.agent_cpu)?,
            memory: spec::parse_quantity("--agent-memory", &a.agent_memory)?,
        },
        coordinator: Resources {
            cpu: spec::parse_quantity("--coordinator-cpu", &a.coordinator_cpu)?,
            memory: spec::parse_quantity("--coordinator-memory", &a.coordinator_memory)?,
        },
        service_account: a.service_account.clone(),
        node_selector: a
            .node_selector
            .iter()
            .map(|v| spec::parse_node_selector(v))
            .collect::<Result<_, _>>()?,
        env: a
            .env
            .iter()
            .map(|v| spec::parse_env(v))
            .collect::<Result<_, _>>()?,
        start_timeout: a.start_timeout.clone(),
        on_agent_loss: a.on_agent_loss.clone(),
        ttl_seconds: a.ttl_after_finished,
        results_pvc: a.results_pvc.clone(),
    })
}

fn write_all(dir: &Path, manifests: &[volley_k8s::Manifest]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for m in manifests {
        let p = dir.join(m.file);
        write_file(&p, m.yaml().as_bytes(), m.secret)
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// The Secret's file is the token in clear: readable by its owner only.
fn write_file(p: &Path, bytes: &[u8], secret: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = o.open(p)?;
    // An earlier, wider file keeps its mode on open: narrow it before writing.
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(bytes)
}
