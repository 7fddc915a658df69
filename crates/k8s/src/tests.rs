//! Rendering: the objects' key fields and what bad specs are refused with.

use super::*;
use base64::Engine;
use serde_json::Value;

fn spec(archive: &[u8]) -> Spec {
    let q = |v: &str| Quantity {
        request: v.into(),
        limit: v.into(),
    };
    Spec {
        name: "checkout".into(),
        namespace: Some("load".into()),
        image: "registry.example.com/volley:0.1.0".into(),
        parallelism: 4,
        port: spec::DEFAULT_PORT,
        archive: ArchiveSource::ConfigMap(archive.to_vec()),
        token: Token::Generated("abc".into()),
        agent: Resources {
            cpu: q("1"),
            memory: q("512Mi"),
        },
        coordinator: Resources {
            cpu: q("500m"),
            memory: q("256Mi"),
        },
        service_account: None,
        node_selector: vec![("pool".into(), "load".into())],
        env: vec![("BASE_URL".into(), "http://checkout:8080".into())],
        start_timeout: "5m".into(),
        on_agent_loss: None,
        ttl_seconds: 3600,
        results_pvc: None,
    }
}

fn find<'a>(ms: &'a [Manifest], kind: &str, name: &str) -> &'a Value {
    ms.iter()
        .flat_map(|m| &m.objects)
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn args(job: &Value) -> Vec<String> {
    job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn configmap_holds_the_archive_bytes() {
    let archive: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let ms = render(&spec(&archive)).unwrap();
    let cm = find(&ms, "ConfigMap", "checkout-test");
    let b64 = cm["binaryData"]["test.tar"].as_str().unwrap();
    let back = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(back, archive);
    assert_eq!(cm["metadata"]["namespace"], "load");
}

#[test]
fn agents_are_an_indexed_job_as_wide_as_the_parallelism() {
    let ms = render(&spec(b"tar")).unwrap();
    let agents = find(&ms, "Job", "checkout-agents");
    let js = &agents["spec"];
    assert_eq!(js["completionMode"], "Indexed");
    assert_eq!(js["completions"], 4);
    assert_eq!(js["parallelism"], 4);
    assert_eq!(js["backoffLimit"], 0);
    assert_eq!(js["template"]["spec"]["restartPolicy"], "Never");
    let a = args(agents);
    assert_eq!(
        &a[..5],
        [
            "agent",
            "--coordinator",
            "checkout-coordinator:6570",
            "--name",
            "agent-$(JOB_COMPLETION_INDEX)"
        ]
    );
    let c = &js["template"]["spec"]["containers"][0];
    assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        c["env"][1]["valueFrom"]["secretKeyRef"]["name"],
        "checkout-token"
    );
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["resources"]["limits"]["cpu"], "1");
    assert_eq!(js["template"]["spec"]["nodeSelector"]["pool"], "load");
}

#[test]
fn coordinator_job_and_service_agree_on_the_port_and_labels() {
    let ms = render(&spec(b"tar")).unwrap();
    let svc = find(&ms, "Service", "checkout-coordinator");
    let job = find(&ms, "Job", "checkout-coordinator");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["ports"][0]["port"], 6570);
    let pod_labels = &job["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "selector {k}");
    }
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["ports"][0]["containerPort"], 6570);
    assert_eq!(
        args(job),
        [
            "coordinator",
            "/volley/test/test.tar",
            "--instances",
            "4",
            "--listen",
            "0.0.0.0:6570",
            "--start-timeout",
            "5m",
            "-e",
            "BASE_URL=http://checkout:8080"
        ]
    );
    assert_eq!(
        job["spec"]["template"]["spec"]["automountServiceAccountToken"],
        false
    );
}

#[test]
fn existing_secret_image_archive_and_results_claim() {
    let mut s = spec(b"tar");
    s.token = Token::Existing("shared-token".into());
    s.archive = ArchiveSource::InImage("/opt/test.tar".into());
    s.results_pvc = Some("volley-results".into());
    s.service_account = Some("loadgen".into());
    let ms = render(&s).unwrap();
    let files: Vec<&str> = ms.iter().map(|m| m.file).collect();
    assert_eq!(files, ["coordinator.yaml", "agents.yaml"]);
    let job = find(&ms, "Job", "checkout-coordinator");
    let a = args(job);
    assert_eq!(a[1], "/opt/test.tar");
    assert!(a.ends_with(&[
        "--save".into(),
        "/volley/results/result.json".into(),
        "--summary-export".into(),
        "/volley/results/summary.json".into()
    ]));
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "loadgen");
    assert_eq!(
        pod["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "shared-token"
    );
}

#[test]
fn oversized_archive_and_bad_values_are_refused_with_a_hint() {
    let big = vec![0u8; spec::CONFIGMAP_MAX_BYTES];
    let e = render(&spec(&big)).unwrap_err();
    assert!(e.message.contains("at most 1048576"), "{e}");
    assert!(e.hint.contains("--archive-in-image"), "{e}");
    // Just under the limit (the key's bytes count too) renders.
    let fits = vec![0u8; spec::CONFIGMAP_MAX_BYTES - spec::ARCHIVE_KEY.len()];
    assert!(render(&spec(&fits)).is_ok());

    let mut s = spec(b"tar");
    s.parallelism = 0;
    assert_eq!(render(&s).unwrap_err().flag, "--parallelism");
    let mut s = spec(b"tar");
    s.namespace = Some("Load".into());
    assert_eq!(render(&s).unwrap_err().flag, "--namespace");
    let mut s = spec(b"tar");
    s.archive = ArchiveSource::InImage("test.tar".into());
    assert_eq!(render(&s).unwrap_err().flag, "--archive-in-image");
}

#[test]
fn secret_file_is_marked_and_yaml_documents_are_separated() {
    let ms = render(&spec(b"tar")).unwrap();
    let secret = ms.iter().find(|m| m.file == "secret.yaml").unwrap();
    assert!(secret.secret);
    assert_eq!(secret.objects[0]["stringData"]["token"], "abc");
    let coord = ms.iter().find(|m| m.file == "coordinator.yaml").unwrap();
    let text = coord.yaml();
    assert_eq!(text.matches("\n---\n").count(), 1, "{text}");
    assert!(
        text.starts_with("apiVersion: v1\nkind: Service\n"),
        "{text}"
    );
}

#[test]
fn random_tokens_differ() {
    let (a, b) = (random_token().unwrap(), random_token().unwrap());
    assert_eq!(a.len(), 64);
    assert_ne!(a, b);
}
