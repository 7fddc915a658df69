//! volley-k8s: the Kubernetes manifests of a distributed run (`volley k8s render`,
//! docs/distributed.md). Plain data → YAML; no Kubernetes client, nothing is applied.
//!
//! # Layout
//!
//! - [`spec`]: what is asked for ([`Spec`]) and its checks (names, quantities, selectors,
//!   the ConfigMap's 1 MiB limit), each error naming the flag with a hint.
//! - [`objects`]: the objects as JSON values — ConfigMap (archive), Secret (token), the
//!   coordinator's Service and Job, the agents' Indexed Job.
//! - [`yaml`]: a block-style YAML writer for those values.
//!
//! [`render`] ties them: a checked spec → the files to write.

pub mod objects;
pub mod spec;
pub mod yaml;

pub use spec::{ArchiveSource, Quantity, Resources, Spec, SpecError, Token};

/// One file of the rendered set.
#[derive(Debug)]
pub struct Manifest {
    /// File name (`configmap.yaml`, `secret.yaml`, `coordinator.yaml`, `agents.yaml`).
    pub file: &'static str,
    /// The objects in it, in order.
    pub objects: Vec<serde_json::Value>,
    /// Holds the token: written readable by the owner only.
    pub secret: bool,
}

impl Manifest {
    /// The file's text: its objects as YAML documents separated by `---`.
    pub fn yaml(&self) -> String {
        let docs: Vec<String> = self.objects.iter().map(yaml::to_yaml).collect();
        docs.join("---\n")
    }
}

/// The manifests of `s`, after its checks.
pub fn render(s: &Spec) -> Result<Vec<Manifest>, SpecError> {
    s.check()?;
    let mut out = Vec::new();
    if let Some(cm) = objects::configmap(s) {
        out.push(Manifest {
            file: "configmap.yaml",
            objects: vec![cm],
            secret: false,
        });
    }
    if let Some(sec) = objects::secret(s) {
        out.push(Manifest {
            file: "secret.yaml",
            objects: vec![sec],
            secret: true,
        });
    }
    out.push(Manifest {
        file: "coordinator.yaml",
        objects: vec![objects::service(s), objects::coordinator_job(s)],
        secret: false,
    });
    out.push(Manifest {
        file: "agents.yaml",
        objects: vec![objects::agents_job(s)],
        secret: false,
    });
    Ok(out)
}

/// A random token (32 bytes from the kernel, hex): the coordinator's port is a way into the
/// cluster, so the rendered Secret must not hold a guessable one.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests;
