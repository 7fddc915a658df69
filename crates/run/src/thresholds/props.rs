//! Property tests of the threshold grammar with a fixed-seed generator (no dev-dependency):
//! the same ground as `fuzz/fuzz_targets/thresholds.rs`, on the stable toolchain.

use super::*;

/// Deterministic xorshift64* (failures reproduce).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
    fn number(&mut self) -> String {
        match self.below(4) {
            0 => self.below(1000).to_string(),
            1 => format!("{}.{}", self.below(100), self.below(1000)),
            2 => format!("-{}", self.below(50)),
            _ => format!("{}e{}", 1 + self.below(9), self.below(5)),
        }
    }
}

const STATS: [(&str, Stat); 7] = [
    ("count", Stat::Count),
    ("rate", Stat::Rate),
    ("value", Stat::Value),
    ("avg", Stat::Avg),
    ("min", Stat::Min),
    ("max", Stat::Max),
    ("med", Stat::Med),
];
const OPS: [(&str, Op); 7] = [
    ("<", Op::Lt),
    ("<=", Op::Le),
    (">", Op::Gt),
    (">=", Op::Ge),
    ("==", Op::Eq),
    ("===", Op::Eq),
    ("!=", Op::Ne),
];

/// Property: `AGG OP NUMBER` with random spacing parses to its parts.
#[test]
fn property_expressions_parse_to_their_parts() {
    let mut rng = Rng(0x7e57_7e57);
    for _ in 0..5000 {
        let (stat_s, stat) = if rng.below(3) == 0 {
            let p = format!("{}.{}", rng.below(100), rng.below(10));
            (format!("p({p})"), Stat::P(p.parse().unwrap()))
        } else {
            let (s, st) = &STATS[rng.below(STATS.len())];
            (s.to_string(), st.clone())
        };
        let (op_s, op) = OPS[rng.below(OPS.len())];
        let n = rng.number();
        let sp = |r: &mut Rng| r.pick(&["", " ", "  ", "\t"]);
        let src = format!(
            "{}{stat_s}{}{op_s}{}{n}{}",
            sp(&mut rng),
            sp(&mut rng),
            sp(&mut rng),
            sp(&mut rng)
        );
        let got = parse_expression(&src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
        assert_eq!(got, (stat, op, n.parse().unwrap()), "{src:?}");
    }
}

/// Property: a metric key with a random tag list parses to its name and tags (quotes and
/// spaces around names and values dropped), and its canonical form parses to the same.
#[test]
fn property_metric_keys_round_trip() {
    let mut rng = Rng(0x00c0_ffee);
    let keys = ["name", "status", "url", "a", "b_c", "x-y"];
    // A value may hold ':' (the first one separates the tag name).
    let values = ["GET", "200", "a", "http://h/p?q=1", "x y", "é"];
    for _ in 0..5000 {
        let name = rng.pick(&[
            volley_metrics::names::HTTP_REQ_DURATION,
            "checks",
            "my_metric",
        ]);
        let mut tags = Vec::new();
        let mut list = Vec::new();
        for _ in 0..rng.below(4) {
            let (k, v) = (rng.pick(&keys), rng.pick(&values));
            let q = rng.pick(&["", "\"", "'"]);
            list.push(format!(" {k}{}:{q}{v}{q} ", rng.pick(&["", " "])));
            tags.push((k.to_string(), v.to_string()));
        }
        let key = if list.is_empty() {
            name.to_string()
        } else {
            format!("{name}{{{}}}", list.join(","))
        };
        let got = parse_metric_key(&key).unwrap_or_else(|e| panic!("{key:?}: {e}"));
        assert_eq!(got, (name.to_string(), tags.clone()), "{key:?}");
        if !tags.is_empty() {
            let canon: Vec<String> = tags.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            let canon = format!("{name}{{{}}}", canon.join(","));
            assert_eq!(parse_metric_key(&canon).unwrap(), got, "{canon:?}");
        }
    }
}

/// Property: random text over the grammar's alphabet never panics in any of the parsers
/// (k6 expressions, drift checks, metric keys, `options.thresholds`).
#[test]
fn property_random_threshold_text_never_panics() {
    let mut rng = Rng(0xbad_f00d);
    let bits = [
        "p(",
        ")",
        "95",
        ".",
        "<",
        ">",
        "=",
        "!",
        "rate",
        "count",
        "max",
        "slope",
        "drift(",
        "MB",
        "/h",
        "%",
        "{",
        "}",
        ":",
        ",",
        "\"",
        " ",
        "-",
        "e",
        "µ",
        volley_metrics::names::HTTP_REQ_DURATION,
        "monitor_rss_bytes",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        for _ in 0..rng.below(8) {
            s.push_str(rng.pick(&bits));
        }
        if let Ok((stat, op, target)) = parse_expression(&s) {
            assert!(target.is_finite(), "{s:?}");
            assert!(!matches!(stat, Stat::P(p) if !(0.0..=100.0).contains(&p)));
            let _ = op;
        }
        let _ = parse_metric_key(&s);
        let _ = volley_monitor::Check::parse(&s);
        let opts = serde_json::json!({ s.clone(): [s.clone()], "http_req_duration": [s.clone()] });
        let _ = parse(&opts, |n| {
            volley_metrics::names::BUILTIN
                .iter()
                .find(|(m, _)| *m == n)
                .map(|(_, k)| *k)
                .or_else(|| n.starts_with("monitor_").then_some(MetricKind::Gauge))
        });
    }
}
