//! The Kubernetes objects of one distributed run, as JSON values: ConfigMap (the archive),
//! Secret (the token), the coordinator's Service and Job, and the agents' Indexed Job.

use crate::spec::{ArchiveSource, Quantity, Resources, Spec, Token, ARCHIVE_KEY};
use base64::Engine;
use serde_json::{json, Map, Value};

/// Where the pods see the archive's ConfigMap, the scratch space and the results.
const TEST_DIR: &str = "/volley/test";
const RESULTS_DIR: &str = "/volley/results";
/// The distroless `nonroot` user (and any image built from the repository's Dockerfile).
const RUN_AS: u32 = 65532;

pub fn configmap_name(s: &Spec) -> String {
    format!("{}-test", s.name)
}
pub fn secret_name(s: &Spec) -> String {
    match &s.token {
        Token::Existing(n) => n.clone(),
        Token::Generated(_) => format!("{}-token", s.name),
    }
}
pub fn service_name(s: &Spec) -> String {
    format!("{}-coordinator", s.name)
}
pub fn agents_name(s: &Spec) -> String {
    format!("{}-agents", s.name)
}

fn labels(s: &Spec, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "volley",
        "app.kubernetes.io/instance": s.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "volley",
    })
}

fn metadata(s: &Spec, name: &str, component: &str) -> Value {
    let mut m = json!({ "name": name, "labels": labels(s, component) });
    if let Some(ns) = &s.namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The archive's ConfigMap, or None when the archive is in the image.
pub fn configmap(s: &Spec) -> Option<Value> {
    let ArchiveSource::ConfigMap(bytes) = &s.archive else {
        return None;
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    Some(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(s, &configmap_name(s), "test"),
        "binaryData": { ARCHIVE_KEY: b64 },
        // A run's test must not change under it.
        "immutable": true,
    }))
}

/// The token's Secret, or None when an existing one is named.
pub fn secret(s: &Spec) -> Option<Value> {
    let Token::Generated(t) = &s.token else {
        return None;
    };
    Some(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(s, &secret_name(s), "token"),
        "type": "Opaque",
        "stringData": { "token": t },
    }))
}

pub fn service(s: &Spec) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(s, &service_name(s), "coordinator"),
        "spec": {
            "type": "ClusterIP",
            "selector": {
                "app.kubernetes.io/instance": s.name,
                "app.kubernetes.io/component": "coordinator",
            },
            "ports": [{ "name": "volley", "port": s.port, "targetPort": "volley", "protocol": "TCP" }],
        },
    })
}

fn quantity(r: &Resources, pick: fn(&Quantity) -> &String) -> Value {
    json!({ "cpu": pick(&r.cpu), "memory": pick(&r.memory) })
}

fn resources(r: &Resources) -> Value {
    json!({ "requests": quantity(r, |q| &q.request), "limits": quantity(r, |q| &q.limit) })
}

fn token_env(s: &Spec) -> Value {
    json!({
        "name": "VOLLEY_TOKEN",
        "valueFrom": { "secretKeyRef": { "name": secret_name(s), "key": "token" } },
    })
}

/// Non-root, read-only root filesystem, no capabilities, no privilege escalation: a load
/// generator needs none of them (scratch space is an emptyDir at /tmp).
fn container_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "readOnlyRootFilesystem": true,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"] },
    })
}

/// The pod spec both Jobs share; `extra` adds fields (volumes, affinity).
fn pod(s: &Spec, container: Value, volumes: Vec<Value>, extra: Map<String, Value>) -> Value {
    let mut p = json!({
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": { "type": "RuntimeDefault" },
        },
        "containers": [container],
        "volumes": volumes,
    });
    match &s.service_account {
        Some(sa) => p["serviceAccountName"] = json!(sa),
        // Volley never talks to the Kubernetes API: no token in the pod.
        None => p["automountServiceAccountToken"] = json!(false),
    }
    if !s.node_selector.is_empty() {
        let sel: Map<String, Value> = s
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        p["nodeSelector"] = Value::Object(sel);
    }
    for (k, v) in extra {
        p[k] = v;
    }
    p
}

fn tmp_volume() -> (Value, Value) {
    (
        json!({ "name": "tmp", "emptyDir": {} }),
        json!({ "name": "tmp", "mountPath": "/tmp" }),
    )
}

fn job(s: &Spec, name: &str, component: &str, spec: Value, pod: Value) -> Value {
    let mut spec = spec;
    // A retried coordinator or agent would start the test again, not resume it.
    spec["backoffLimit"] = json!(0);
    spec["ttlSecondsAfterFinished"] = json!(s.ttl_seconds);
    spec["template"] = json!({ "metadata": { "labels": labels(s, component) }, "spec": pod });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(s, name, component),
        "spec": spec,
    })
}

pub fn coordinator_job(s: &Spec) -> Value {
    let archive = match &s.archive {
        ArchiveSource::ConfigMap(_) => format!("{TEST_DIR}/{ARCHIVE_KEY}"),
        ArchiveSource::InImage(p) => p.clone(),
    };
    let mut args = vec![
        json!("coordinator"),
        json!(archive),
        json!("--instances"),
        json!(s.parallelism.to_string()),
        json!("--listen"),
        json!(format!("0.0.0.0:{}", s.port)),
        json!("--start-timeout"),
        json!(s.start_timeout),
    ];
    if let Some(p) = &s.on_agent_loss {
        args.extend([json!("--on-agent-loss"), json!(p)]);
    }
    for (k, v) in &s.env {
        args.extend([json!("-e"), json!(format!("{k}={v}"))]);
    }
    let (tmp, tmp_mount) = tmp_volume();
    let mut volumes = vec![tmp];
    let mut mounts = vec![tmp_mount];
    if matches!(s.archive, ArchiveSource::ConfigMap(_)) {
        volumes.push(json!({ "name": "test", "configMap": { "name": configmap_name(s) } }));
        mounts.push(json!({ "name": "test", "mountPath": TEST_DIR, "readOnly": true }));
    }
    if let Some(pvc) = &s.results_pvc {
        volumes.push(json!({ "name": "results", "persistentVolumeClaim": { "claimName": pvc } }));
        mounts.push(json!({ "name": "results", "mountPath": RESULTS_DIR }));
        args.extend([
            json!("--save"),
            json!(format!("{RESULTS_DIR}/result.json")),
            json!("--summary-export"),
            json!(format!("{RESULTS_DIR}/summary.json")),
        ]);
    }
    let container = json!({
        "name": "coordinator",
        "image": s.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "env": [token_env(s)],
        "ports": [{ "name": "volley", "containerPort": s.port, "protocol": "TCP" }],
        "resources": resources(&s.coordinator),
        "securityContext": container_security(),
        "volumeMounts": mounts,
    });
    job(
        s,
        &service_name(s),
        "coordinator",
        json!({ "completions": 1, "parallelism": 1 }),
        pod(s, container, volumes, Map::new()),
    )
}

pub fn agents_job(s: &Spec) -> Value {
    let (tmp, tmp_mount) = tmp_volume();
    let container = json!({
        "name": "agent",
        "image": s.image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "agent",
            "--coordinator", format!("{}:{}", service_name(s), s.port),
            // Expanded by the kubelet from the env entry below.
            "--name", "agent-$(JOB_COMPLETION_INDEX)",
            "--retry-for", s.start_timeout,
        ],
        "env": [
            // The Job controller sets this too; declaring it makes `$(...)` expansion in args
            // independent of that.
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": { "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                } },
            },
            token_env(s),
        ],
        "resources": resources(&s.agent),
        "securityContext": container_security(),
        "volumeMounts": [tmp_mount],
    });
    // Agents on different nodes where the cluster allows: more network paths, more source
    // addresses, no two agents competing for one node's CPU.
    let mut extra = Map::new();
    extra.insert(
        "affinity".into(),
        json!({ "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": { "matchLabels": {
                    "app.kubernetes.io/instance": s.name,
                    "app.kubernetes.io/component": "agent",
                } },
            },
        }] } }),
    );
    job(
        s,
        &agents_name(s),
        "agent",
        json!({
            "completionMode": "Indexed",
            // All agents at once: the coordinator starts the test when every one registered.
            "completions": s.parallelism,
            "parallelism": s.parallelism,
        }),
        pod(s, container, vec![tmp], extra),
    )
}
