use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn latency_window_on_a_proxy() {
    let f = Fault::parse("at=10s,for=5s,proxy=api,latency=200ms,jitter=20ms").unwrap();
    assert_eq!(f.trigger, Trigger::At(ms(10_000)));
    assert_eq!(f.window, Some(ms(5_000)));
    assert_eq!(
        f.action,
        Action::Proxy {
            proxy: "api".into(),
            toxic: Toxic::Latency {
                latency: ms(200),
                jitter: ms(20),
                dir: Direction::Down
            },
            share: 1.0,
            seed: 0
        }
    );
    assert_eq!(f.detail(), "latency=200ms,jitter=20ms");
    assert_eq!(f.kind(), "latency");
    assert_eq!(f.target(), "api");
}

#[test]
fn process_faults_and_iteration_triggers() {
    let f = Fault::parse("after=500 iterations,kill=pid:1234").unwrap();
    assert_eq!(f.trigger, Trigger::AfterIterations(500));
    assert_eq!(
        f.action,
        Action::Process {
            target: Target::Pid(1234),
            op: ProcessOp::Kill
        }
    );
    let f = Fault::parse("at=2s,for=1s,pause=api").unwrap();
    assert_eq!(
        f.action,
        Action::Process {
            target: Target::Named("api".into()),
            op: ProcessOp::Pause
        }
    );
}

#[test]
fn every_toxic_parses() {
    let toxic = |s: &str| match Fault::parse(&format!("at=1s,proxy=p,{s}")).unwrap().action {
        Action::Proxy { toxic, .. } => toxic,
        a => panic!("{a:?}"),
    };
    assert_eq!(
        toxic("bandwidth=100KB/s,direction=up"),
        Toxic::Bandwidth {
            bytes_per_s: 100_000,
            dir: Direction::Up
        }
    );
    assert_eq!(toxic("reset"), Toxic::Reset { existing: true });
    assert_eq!(toxic("reset=new"), Toxic::Reset { existing: false });
    assert_eq!(toxic("blackhole"), Toxic::Blackhole);
    assert_eq!(toxic("slow_close=2s"), Toxic::SlowClose(ms(2000)));
    assert_eq!(toxic("limit_data=1KiB"), Toxic::LimitData(1024));
}

#[test]
fn errors_name_the_token_and_hint() {
    let e = Fault::parse("at=10s,proxy=api,latncy=200ms").unwrap_err();
    assert_eq!(e.token, "latncy=200ms");
    assert!(e.message.contains("unknown key"), "{e}");
    let e = Fault::parse("at=soon,kill=pid:1").unwrap_err();
    assert_eq!(e.token, "at=soon");
    let e = Fault::parse("at=1s,latency=200ms").unwrap_err();
    assert!(e.hint.contains("proxy=NAME"), "{e}");
    let e = Fault::parse("proxy=a,latency=1ms").unwrap_err();
    assert!(e.message.contains("no start"), "{e}");
    let e = Fault::parse("at=1s,pause=pid:3").unwrap_err();
    assert!(e.hint.contains("for="), "{e}");
    let e = Fault::parse("at=1s,proxy=a,share=1.5,reset").unwrap_err();
    assert_eq!(e.token, "share=1.5");
    let e = Fault::parse("at=1s,proxy=a,reset,blackhole").unwrap_err();
    assert_eq!(e.token, "blackhole");
    assert!(e.to_string().contains("hint: "), "{e}");
}

#[test]
fn byte_units() {
    assert_eq!(bytes("4096"), Some(4096));
    assert_eq!(bytes("2.5MiB"), Some(2_621_440));
    assert_eq!(bytes("1GB/s"), Some(1_000_000_000));
    assert_eq!(bytes("lots"), None);
    assert_eq!(bytes("1e30"), None);
}
