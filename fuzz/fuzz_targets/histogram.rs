//! The histograms inside result files (base64 of HDR V2 + deflate): never panics or
//! allocates without bound; a decoded histogram re-encodes to a fixed point with the same
//! count and percentiles. The input is the raw (un-base64'd) encoding, so the fuzzer
//! mutates the binary format itself.
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use volley_metrics::hist;

fuzz_target!(|data: &[u8]| {
    let text = base64::engine::general_purpose::STANDARD.encode(data);
    if let Ok(t) = hist::decode_trend(&text) {
        let enc = t.encode();
        let t2 = hist::decode_trend(&enc).expect("a re-encoded histogram decodes");
        assert_eq!(t2.len(), t.len());
        for p in [0.0, 50.0, 99.0, 100.0] {
            assert_eq!(t2.value_at_percentile(p), t.value_at_percentile(p), "p{p}");
        }
        assert_eq!(t2.encode(), enc, "encoding is not a fixed point");
        let _ = hist::percentile(&t, 95.0);
    }
    if let Ok(h) = hist::decode(&text) {
        let enc = hist::encode(&h);
        let h2 = hist::decode(&enc).expect("a re-encoded histogram decodes");
        assert_eq!(h2.len(), h.len());
    }
});
