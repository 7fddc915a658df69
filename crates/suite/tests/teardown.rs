//! The services guard: a panic while services run (a bug anywhere in a step) still stops
//! every service's whole process group while unwinding.

use volley_engine::RunControl;
use volley_suite::file::interp::Ctx;
use volley_suite::services::{expose, process, Services};

#[test]
fn a_panic_mid_run_still_tears_every_service_down() {
    let dir = volley_testkit::scratch("volley-suite", "panic");
    std::fs::write(
        dir.join("volley.toml"),
        "[services.a]\ncommand = \"sleep 41 & echo up; exec sleep 40\"\nready.log = \"up\"\n\n\
         [services.b]\ncommand = \"trap '' TERM; sleep 42 & echo up; wait\"\nready.log = \"up\"\n\
         depends_on = [\"a\"]\nstop_timeout = \"200ms\"\n\n\
         [profiles.smoke]\nsteps = [{ command = \"true\" }]\n",
    )
    .unwrap();
    let suite = volley_suite::runner::load(&dir.join("volley.toml")).unwrap();
    let mut ctx = Ctx::default();
    ctx.services = expose(&suite, &ctx).unwrap();
    let groups = std::sync::Mutex::new(Vec::new());
    let r = std::panic::catch_unwind(|| {
        let s =
            Services::start(&suite, &ctx, &dir.join("logs"), &RunControl::new(), |_| {}).unwrap();
        for r in &s.list {
            groups.lock().unwrap().push(r.pid);
            assert!(
                process::group_members(r.pid).len() >= 2,
                "{} forked",
                r.name
            );
        }
        panic!("a bug in a step");
    });
    assert!(r.is_err());
    let groups = groups.into_inner().unwrap();
    assert_eq!(groups.len(), 2);
    for g in groups {
        assert!(
            process::group_members(g).is_empty(),
            "group {g} survived the panic"
        );
    }
}
