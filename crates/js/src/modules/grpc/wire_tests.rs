//! The wire route against the old one (`DynamicMessage` + `to_js`/`direct`): the same JS
//! value on every case of `direct`'s table and on hand-made wire bytes (unknown fields,
//! unpacked repeated fields, fields that come twice, oneofs, map entries missing their key
//! or value), and the old route (with its exact error) wherever the wire route declines.

use super::*;
use crate::modules::grpc::direct;
use crate::modules::grpc::direct::tests::{desc, CASES};
use crate::modules::grpc::invoke::message_value;

/// Map fields of `t.All` (the old route shows them in hash order: compared sorted).
const MAPS: &str = r#"["labels","byInt","byBool","byU64","byS64"]"#;

/// JSON text of `v` with map fields' keys sorted, every other key in its own order.
const CANON: &str = r#"(function canon(v, maps) {
  if (Array.isArray(v)) return v.map((x) => canon(x, maps));
  if (v === null || typeof v !== "object") return v;
  const def = (o, k, x) => Object.defineProperty(o, k,
    { value: x, enumerable: true, writable: true, configurable: true });
  const o = {};
  for (const k of Object.keys(v)) {
    let x = v[k];
    if (maps.includes(k) && x !== null && typeof x === "object") {
      const m = {};
      for (const mk of Object.keys(x).sort()) def(m, mk, canon(x[mk], []));
      x = m;
    } else {
      x = canon(x, maps);
    }
    def(o, k, x);
  }
  return o;
})"#;

fn text<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> String {
    let canon: rquickjs::Function = ctx.eval(CANON).unwrap();
    let maps: Value = ctx.json_parse(MAPS).unwrap();
    let c: Value = canon.call((v, maps)).unwrap();
    ctx.json_stringify(c).unwrap().unwrap().to_string().unwrap()
}

/// `f` in a fresh context whose userdata is dropped before the context.
fn with_ctx(f: impl for<'js> FnOnce(Ctx<'js>)) {
    let rt = rquickjs::Runtime::new().unwrap();
    let cx = rquickjs::Context::full(&rt).unwrap();
    cx.with(|ctx| {
        let _d = crate::rt::DropVuData(&ctx);
        f(ctx.clone())
    });
}

/// The old route's result as text, or its error.
fn old(ctx: &Ctx<'_>, d: &MessageDescriptor, bytes: &[u8]) -> Result<String, String> {
    let msg = DynamicMessage::decode(d.clone(), bytes)
        .map_err(|e| format!("failed to unmarshal the message: {e}"))?;
    let serde = to_js::message(ctx, &msg)?;
    let walked = direct::message(ctx, &msg)?;
    let t = text(ctx, serde);
    assert_eq!(text(ctx, walked), t, "direct and serde routes differ");
    Ok(t)
}

// Hand-made wire format.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}
fn tag(n: u32, w: u8) -> Vec<u8> {
    varint(u64::from(n) << 3 | u64::from(w))
}
fn vint(n: u32, v: u64) -> Vec<u8> {
    [tag(n, VARINT), varint(v)].concat()
}
fn len(n: u32, b: &[u8]) -> Vec<u8> {
    [tag(n, LEN), varint(b.len() as u64), b.to_vec()].concat()
}
fn f64s(n: u32, x: f64) -> Vec<u8> {
    [tag(n, I64), x.to_le_bytes().to_vec()].concat()
}

/// Wire bytes the wire route reads itself (field numbers: `direct`'s `t.All`).
fn read_here() -> Vec<(&'static str, Vec<u8>)> {
    let inner = |name: &str| len(1, name.as_bytes());
    vec![
        (
            "unknown fields of every wire type, at the top and nested",
            [
                vint(100, 5),
                f64s(101, 2.0),
                len(102, b"abc"),
                [tag(103, I32), vec![1, 2, 3, 4]].concat(),
                f64s(1, 1.5),
                len(27, &[inner("i"), vint(9, 1)].concat()),
                vint(1 << 20, 1),
            ]
            .concat(),
        ),
        (
            "unpacked repeated scalars and enums, packed and unpacked mixed",
            [
                vint(19, 1),
                vint(19, 9),
                len(19, &[0, 1]),
                f64s(20, 0.5),
                f64s(20, f64::NAN),
                len(
                    18,
                    &[vint(2, 3), vint(2, u64::MAX), len(2, &[4, 5])].concat(),
                ),
            ]
            .concat(),
        ),
        (
            "a scalar field twice: the last wins",
            [vint(3, 7), len(14, b"a"), vint(3, u64::MAX), len(14, b"b")].concat(),
        ),
        (
            "oneof: the member set last wins (message, then text)",
            [len(30, &inner("x")), len(29, b"t")].concat(),
        ),
        (
            "oneof: text, then message",
            [len(29, b"t"), len(30, &inner("x"))].concat(),
        ),
        (
            "map entries without key or value, a key twice, an unknown field inside",
            [
                len(22, &len(2, b"no key")),
                len(22, &len(1, b"no value")),
                len(22, &[len(1, b"k"), len(2, b"1")].concat()),
                len(22, &[len(1, b"k"), vint(3, 1), len(2, b"2")].concat()),
                len(23, &vint(1, u64::MAX)),
                len(
                    23,
                    &[vint(1, 2), len(2, &[inner("m"), len(3, &[])].concat())].concat(),
                ),
                len(24, &vint(1, 1)),
                len(25, &[vint(1, u64::MAX), vint(2, 1)].concat()),
                len(26, &[vint(1, 3), f64s(2, -0.25)].concat()),
            ]
            .concat(),
        ),
        (
            "ten-byte varints, negative int32 and sint64 extremes",
            [
                vint(3, (-5i64) as u64),
                vint(4, (i64::MIN) as u64),
                vint(8, u64::MAX),
                vint(7, 1),
            ]
            .concat(),
        ),
        (
            "proto3 optional set to its default; empty nested messages; WKT nested",
            [
                vint(31, 0),
                len(32, &[]),
                len(27, &len(3, &len(2, &[]))),
                len(33, &[vint(1, 5), vint(2, 6)].concat()),
            ]
            .concat(),
        ),
    ]
}

/// Wire bytes the wire route leaves to the old one (which merges, or fails with its error).
fn left_to_old() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "a message field twice (protobuf merges them)",
            [len(27, &len(1, b"a")), len(27, &len(2, &[1, 2]))].concat(),
        ),
        (
            "truncated length",
            [tag(14, LEN), vec![10, b'a', b'b']].concat(),
        ),
        ("truncated varint", vec![0x18, 0x80]),
        ("invalid UTF-8", len(14, &[0xff, 0xfe])),
        ("wrong wire type for a known field", len(3, b"x")),
        ("field number 0", vint(0, 1)),
        (
            "a group (unknown field)",
            [tag(100, 3), vint(1, 1), tag(100, 4)].concat(),
        ),
        (
            "an eleven-byte varint",
            [tag(3, VARINT), vec![0xff; 10], vec![1]].concat(),
        ),
        (
            "a tenth varint byte over 1",
            [tag(3, VARINT), vec![0xff; 9], vec![2]].concat(),
        ),
        (
            "a nested message truncated",
            len(27, &[tag(1, LEN), vec![5, b'a']].concat()),
        ),
    ]
}

#[test]
fn wire_route_matches_the_old_route_on_every_kind_of_field() {
    let d = desc();
    let mut cases: Vec<(String, Vec<u8>)> = CASES
        .iter()
        .map(|c| (c.to_string(), volley_grpc::json::encode(&d, c).unwrap()))
        .collect();
    cases.extend(read_here().into_iter().map(|(n, b)| (n.to_string(), b)));
    with_ctx(|ctx| {
        for (name, bytes) in &cases {
            let want = old(&ctx, &d, bytes).unwrap();
            let got = message(&ctx, &d, bytes).unwrap_or_else(|| panic!("declined: {name}"));
            assert_eq!(text(&ctx, got), want, "{name}");
            // Again, from the kept plan and templates.
            let again = message(&ctx, &d, bytes).unwrap();
            assert_eq!(text(&ctx, again), want, "{name} (second time)");
        }
    });
}

#[test]
fn what_the_wire_route_declines_reads_as_before_errors_included() {
    let d = desc();
    with_ctx(|ctx| {
        for (name, bytes) in left_to_old() {
            assert!(
                message(&ctx, &d, &bytes).is_none(),
                "{name}: read by the wire route"
            );
            let want = old(&ctx, &d, &bytes);
            let got = message_value(&ctx, &d, &bytes).map(|v| text(&ctx, v));
            assert_eq!(got, want, "{name}");
        }
        // Not vacuous: the merge case succeeds, the others fail.
        assert!(old(&ctx, &d, &left_to_old()[0].1).is_ok());
        assert!(old(&ctx, &d, &left_to_old()[1].1).is_err());
    });
}

#[test]
fn proto2_and_top_level_well_known_types_take_the_old_route() {
    let pool = volley_grpc::proto::load_source(
        "p2.proto",
        "syntax = \"proto2\"; package p; message M { optional string s = 1 [default = \"d\"]; }",
    )
    .unwrap();
    let m = pool.get_message_by_name("p.M").unwrap();
    let ts = desc().get_field_by_name("ts").unwrap().kind();
    let ts = ts.as_message().unwrap().clone();
    with_ctx(|ctx| {
        let bytes = len(1, b"x");
        assert!(message(&ctx, &m, &bytes).is_none());
        let v = message_value(&ctx, &m, &bytes).unwrap();
        assert_eq!(text(&ctx, v), r#"{"s":"x"}"#);
        let bytes = [vint(1, 5), vint(2, 6)].concat();
        assert!(message(&ctx, &ts, &bytes).is_none());
        let v = message_value(&ctx, &ts, &bytes).unwrap();
        assert_eq!(text(&ctx, v), r#""1970-01-01T00:00:05.000000006Z""#);
    });
}

#[test]
fn objects_of_each_layout_are_distinct_and_keep_their_key_order() {
    let d = desc();
    with_ctx(|ctx| {
        let set = volley_grpc::json::encode(&d, r#"{"inner":{"name":"a"},"maybe":1}"#).unwrap();
        let unset = volley_grpc::json::encode(&d, r#"{"d":2}"#).unwrap();
        let keys = |v: &Value| -> Vec<String> {
            let o = v.as_object().unwrap();
            o.keys::<String>().map(|k| k.unwrap()).collect()
        };
        let a = message(&ctx, &d, &set).unwrap();
        let b = message(&ctx, &d, &unset).unwrap();
        let a2 = message(&ctx, &d, &set).unwrap();
        let (ka, kb) = (keys(&a), keys(&b));
        // Set: `inner` in number order, `maybe` shown; unset: `inner` null after the rest.
        let at = |k: &[String], n: &str| k.iter().position(|x| x == n).unwrap();
        assert!(at(&ka, "inner") < at(&ka, "unsetInner"), "{ka:?}");
        assert!(at(&ka, "maybe") > at(&ka, "inner"), "{ka:?}");
        assert!(at(&kb, "inner") == at(&kb, "vals") + 1, "{kb:?}");
        assert!(at(&ka, "inner") < at(&ka, "vals"), "{ka:?}");
        assert_eq!(kb.last().unwrap(), "list");
        assert!(!kb.iter().any(|k| k == "maybe"), "{kb:?}");
        assert_eq!(keys(&a2), ka);
        // A script changing one response does not change the next.
        let ao = a.as_object().unwrap();
        ao.set("d", 99).unwrap();
        ao.remove("inner").unwrap();
        ao.set("extra", 1).unwrap();
        let a3 = message(&ctx, &d, &set).unwrap();
        assert_eq!(keys(&a3), ka);
        let d3: f64 = a3.as_object().unwrap().get("d").unwrap();
        assert_eq!(d3, 0.0);
        // Nested objects are fresh too.
        let i1: Object = a2.as_object().unwrap().get("inner").unwrap();
        let i3: Object = a3.as_object().unwrap().get("inner").unwrap();
        assert!(i1 != i3);
        // One plan per message type met (All, Inner), kept between calls.
        assert_eq!(cache(&ctx).plans.borrow().len(), 2);
    });
}

#[test]
fn the_response_object_has_k6s_keys_in_order() {
    with_ctx(|ctx| {
        let v = |n: i32| Value::new_int(ctx.clone(), n);
        let r1 = response(&ctx, &[v(0), v(1), v(2), v(3), v(4)]).unwrap();
        let r2 = response(&ctx, &[v(5), v(6), v(7), v(8), v(9)]).unwrap();
        assert_eq!(
            text(&ctx, r1.into_value()),
            r#"{"status":0,"message":1,"headers":2,"trailers":3,"error":4}"#
        );
        assert_eq!(
            text(&ctx, r2.into_value()),
            r#"{"status":5,"message":6,"headers":7,"trailers":8,"error":9}"#
        );
    });
}
