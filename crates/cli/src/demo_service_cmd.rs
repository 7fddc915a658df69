//! `volley demo serve` and `volley demo seed`: the demo service (crate
//! `volley-demo-service`) in the foreground, and its idempotent data set.

use crate::args::{DemoAction, DemoSeedArgs, DemoServeArgs};
use crate::exit;

pub fn run(action: DemoAction) -> i32 {
    match action {
        DemoAction::Serve(a) => serve(a),
        DemoAction::Seed(a) => seed(a),
    }
}

fn serve(a: DemoServeArgs) -> i32 {
    let data = a
        .data
        .unwrap_or_else(|| std::env::temp_dir().join("volley-demo-service"));
    if data.exists() && !data.is_dir() {
        return exit::usage(&format!(
            "--data {}: is a file, not a directory; give a directory (created if missing)",
            data.display()
        ));
    }
    let mut cfg = volley_demo_service::DemoConfig::new(&data);
    cfg.listen = a.listen;
    cfg.threads = a.threads.max(1);
    cfg.max_upload_bytes = a.max_upload;
    cfg.max_json_bytes = a.max_json;
    cfg.database = a.database.clone();
    let db = match &a.database {
        Some(url) => format!("database {}", volley_postgres::redact(url)),
        None => "SQLite".to_owned(),
    };
    match volley_demo_service::run_blocking(cfg, |addr| {
        outln!(
            "volley demo service listening on {} (data in {}, {db})",
            volley_demo_service::url(addr),
            data.display()
        );
    }) {
        Ok(()) => exit::OK,
        Err(e) => exit::fail(&format!(
            "cannot start the demo service on {}: {e}",
            a.listen
        )),
    }
}

fn seed(a: DemoSeedArgs) -> i32 {
    let r = match volley_demo_service::seed::seed_blocking(&a.url, a.small) {
        Ok(r) => r,
        Err(e) => return exit::fail(&format!("seeding {} failed: {e}", a.url)),
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
        return exit::OK;
    }
    outln!(
        "seeded {} in {:.1}s ({} created)",
        r.url,
        r.took_ms as f64 / 1000.0,
        r.created
    );
    outln!("  user {} / {}", r.user, r.password);
    outln!(
        "  WebDAV {} / {} at {}{} ({} files)",
        r.webdav_user,
        r.webdav_password,
        r.url,
        r.webdav_path,
        r.webdav_files
    );
    for (name, f) in &r.folders {
        outln!("  folder {name:<12} id {:<6} {} files", f.id, f.files);
    }
    outln!(
        "  download fixture: file {} ({} bytes); search term: {:?}",
        r.fixture_id,
        r.fixture_size,
        r.search_term
    );
    exit::OK
}
