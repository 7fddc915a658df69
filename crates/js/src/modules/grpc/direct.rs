//! A decoded protobuf message straight to the JS value of `response.message`, walking the
//! descriptor's fields: no serde in between (the serde route, `to_js`, cost about half of a
//! response's conversion in a profile of unary calls).
//!
//! The output is `to_js::message`'s exactly — prost-reflect's protojson (fields in number
//! order, only fields with presence left out when unset, 64-bit integers as strings, enums
//! by name, bytes as base64, non-finite floats as strings), then `null` appended for each
//! unset message field that `to_js::fill_nulls` would fill (not oneof members, not map
//! values, not inside well-known types). Well-known types and messages carrying extensions
//! still go through `to_js` (their JSON forms are prost-reflect's). The table test below
//! compares both routes on messages with every kind of field.

use super::to_js;
use base64::Engine as _;
use rquickjs::object::Property;
use rquickjs::{Array, Ctx, Object, Value};
use volley_grpc::prost_reflect::{DynamicMessage, Kind, MapKey, ReflectMessage, Value as PValue};

type R<'js> = Result<Value<'js>, String>;

/// `msg` as k6 shows `response.message`.
pub(super) fn message<'js>(ctx: &Ctx<'js>, msg: &DynamicMessage) -> R<'js> {
    object(ctx, msg, true)
}

fn js<T>(r: rquickjs::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("failed to marshal the message: {e}"))
}

/// Has its own JSON form in protojson (`google.protobuf.Timestamp`, `Struct`, wrappers...).
fn well_known(msg: &DynamicMessage) -> bool {
    msg.descriptor().full_name().starts_with("google.protobuf.")
}

/// A message as an object; `fill`: add the `null`s of unset message fields.
fn object<'js>(ctx: &Ctx<'js>, msg: &DynamicMessage, fill: bool) -> R<'js> {
    if well_known(msg) || msg.extensions().next().is_some() {
        return if fill {
            to_js::message(ctx, msg)
        } else {
            to_js::serialized(ctx, msg)
        };
    }
    let desc = msg.descriptor();
    let o = js(Object::new(ctx.clone()))?;
    for f in desc.fields() {
        if f.supports_presence() && !msg.has_field(&f) {
            continue;
        }
        let v = msg.get_field(&f);
        let inner_fill = fill && f.containing_oneof().is_none() && !f.is_map();
        define(&o, f.json_name(), value(ctx, &v, &f.kind(), inner_fill)?)?;
    }
    if fill {
        // After every other key, as `fill_nulls` appends them.
        for f in desc.fields() {
            if matches!(f.kind(), Kind::Message(_))
                && f.containing_oneof().is_none()
                && !f.is_map()
                && f.supports_presence()
                && !msg.has_field(&f)
            {
                define(&o, f.json_name(), Value::new_null(ctx.clone()))?;
            }
        }
    }
    Ok(o.into_value())
}

/// A property as `JSON.parse` makes it (see `to_js::entry`).
fn define<'js>(o: &Object<'js>, key: &str, v: Value<'js>) -> Result<(), String> {
    js(o.prop(
        key,
        Property::from(v).writable().enumerable().configurable(),
    ))
}

fn string<'js>(ctx: &Ctx<'js>, s: &str) -> R<'js> {
    Ok(js(rquickjs::String::from_str(ctx.clone(), s))?.into_value())
}

/// protojson's text for a non-finite float.
pub(super) fn non_finite(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// One value of a field of kind `kind` (a list's items and a map's values have the field's
/// kind and its value field's kind).
fn value<'js>(ctx: &Ctx<'js>, v: &PValue, kind: &Kind, fill: bool) -> R<'js> {
    let c = || ctx.clone();
    Ok(match v {
        PValue::Bool(b) => Value::new_bool(c(), *b),
        PValue::I32(n) => Value::new_int(c(), *n),
        PValue::U32(n) => Value::new_number(c(), (*n).into()),
        PValue::I64(n) => string(ctx, &n.to_string())?,
        PValue::U64(n) => string(ctx, &n.to_string())?,
        PValue::F32(x) if x.is_finite() => {
            // As JSON text carries it: the shortest decimal form of the f32.
            let shown: f64 = x.to_string().parse().unwrap_or((*x).into());
            Value::new_number(c(), shown)
        }
        PValue::F32(x) => string(ctx, non_finite((*x).into()))?,
        PValue::F64(x) if x.is_finite() => Value::new_number(c(), *x),
        PValue::F64(x) => string(ctx, non_finite(*x))?,
        PValue::String(s) => string(ctx, s)?,
        PValue::Bytes(b) => string(ctx, &base64::engine::general_purpose::STANDARD.encode(b))?,
        PValue::EnumNumber(n) => match kind {
            Kind::Enum(e) if e.full_name() == "google.protobuf.NullValue" => Value::new_null(c()),
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => string(ctx, ev.name())?,
                None => Value::new_int(c(), *n),
            },
            _ => Value::new_int(c(), *n),
        },
        PValue::Message(m) => object(ctx, m, fill && !well_known(m))?,
        PValue::List(items) => {
            let a = js(Array::new(c()))?;
            for (i, x) in items.iter().enumerate() {
                js(a.set(i, value(ctx, x, kind, fill)?))?;
            }
            a.into_value()
        }
        PValue::Map(entries) => {
            let Kind::Message(entry) = kind else {
                return Err("failed to marshal the message: a map without an entry type".into());
            };
            let vk = entry.map_entry_value_field().kind();
            let o = js(Object::new(c()))?;
            for (k, x) in entries {
                let key = match k {
                    MapKey::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
                    MapKey::Bool(b) => b.to_string().into(),
                    MapKey::I32(n) => n.to_string().into(),
                    MapKey::I64(n) => n.to_string().into(),
                    MapKey::U32(n) => n.to_string().into(),
                    MapKey::U64(n) => n.to_string().into(),
                };
                define(&o, &key, value(ctx, x, &vk, false)?)?;
            }
            o.into_value()
        }
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use volley_grpc::prost_reflect::{DescriptorPool, MessageDescriptor};

    /// Every kind of field: scalars of each type, enums (known and unknown numbers), bytes,
    /// repeated scalars and messages, maps with each key type and message values, nested
    /// messages set and unset, a oneof with a message member, proto3 `optional`, and
    /// well-known types (set and unset).
    const PROTO: &str = r#"
        syntax = "proto3";
        package t;
        import "google/protobuf/timestamp.proto";
        import "google/protobuf/duration.proto";
        import "google/protobuf/struct.proto";
        import "google/protobuf/wrappers.proto";
        import "google/protobuf/empty.proto";
        enum E { E_ZERO = 0; E_ONE = 1; }
        message Leaf { string s = 1; Leaf next = 2; }
        message Inner { string name = 1; repeated int32 values = 2; Leaf leaf = 3; }
        message All {
          double d = 1; float f = 2; int32 i32 = 3; int64 i64 = 4; uint32 u32 = 5;
          uint64 u64 = 6; sint32 s32 = 7; sint64 s64 = 8; fixed32 fx32 = 9; fixed64 fx64 = 10;
          sfixed32 sf32 = 11; sfixed64 sf64 = 12; bool b = 13; string snake_case_name = 14;
          bytes raw = 15; E e = 16;
          repeated string tags = 17; repeated Inner inners = 18; repeated E es = 19;
          repeated double ds = 20; repeated bytes raws = 21;
          map<string, string> labels = 22; map<int32, Inner> by_int = 23;
          map<bool, int64> by_bool = 24; map<uint64, E> by_u64 = 25;
          map<sint64, double> by_s64 = 26;
          Inner inner = 27; Inner unset_inner = 28;
          oneof choice { string pick_text = 29; Inner pick_inner = 30; }
          optional int32 maybe = 31; optional Inner maybe_inner = 32;
          google.protobuf.Timestamp ts = 33; google.protobuf.Duration dur = 34;
          google.protobuf.Struct st = 35; google.protobuf.Int64Value wrapped = 36;
          google.protobuf.Empty empty = 37; google.protobuf.Timestamp unset_ts = 38;
          repeated google.protobuf.Value vals = 39; google.protobuf.Value one_val = 40;
          google.protobuf.ListValue list = 41;
        }
    "#;

    pub(in crate::modules::grpc) fn desc() -> MessageDescriptor {
        let pool: DescriptorPool = volley_grpc::proto::load_source("t.proto", PROTO).unwrap();
        pool.get_message_by_name("t.All").unwrap()
    }

    /// Request-side JSON texts (k6's protojson), each encoded then shown by both routes.
    pub(in crate::modules::grpc) const CASES: &[&str] = &[
        "{}",
        r#"{"d":1.5,"f":0.1,"i32":-7,"i64":"-9007199254740993","u32":4294967295,
            "u64":"18446744073709551615","s32":-3,"s64":"-4","fx32":5,"fx64":"6","sf32":-8,
            "sf64":"-9","b":true,"snakeCaseName":"x","raw":"AAEC/w==","e":"E_ONE"}"#,
        r#"{"d":"NaN","f":"Infinity","ds":["-Infinity",2.25,"NaN"],"e":7,"es":["E_ONE",9,"E_ZERO"]}"#,
        r#"{"tags":["a","","c"],"raws":["","AQ=="],
            "inners":[{"name":"n","values":[1,2]},{},{"leaf":{"s":"deep","next":{}}}]}"#,
        r#"{"labels":{"k":"v","__proto__":"p","1":"one","":"e"},
            "byInt":{"-1":{"name":"m"},"2":{}},"byBool":{"true":"5","false":"-6"},
            "byU64":{"18446744073709551615":"E_ONE"},"byS64":{"-2":0.5}}"#,
        r#"{"inner":{"name":"i","leaf":{}},"pickInner":{"values":[3]},"maybe":0,"maybeInner":{}}"#,
        r#"{"pickText":"t","maybe":5}"#,
        r#"{"ts":"2024-01-02T03:04:05.678Z","dur":"1.5s","st":{"a":[1,"b",null,{"c":true}]},
            "wrapped":"12","empty":{},"vals":[1,"s",null,{"x":[]}],"oneVal":{"n":null},
            "list":[1,[2]]}"#,
    ];

    fn text<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> String {
        ctx.json_stringify(v).unwrap().unwrap().to_string().unwrap()
    }

    /// `f` in a fresh JS context, with `case` encoded and decoded as a `t.All`.
    fn with_case(case: &str, f: impl for<'js> FnOnce(Ctx<'js>, DynamicMessage)) {
        let d = desc();
        let bytes = volley_grpc::json::encode(&d, case).unwrap();
        let msg = DynamicMessage::decode(d, bytes.as_slice()).unwrap();
        let rt = rquickjs::Runtime::new().unwrap();
        let cx = rquickjs::Context::full(&rt).unwrap();
        cx.with(|ctx| f(ctx, msg));
    }

    #[test]
    fn direct_walk_matches_the_serde_route_on_every_kind_of_field() {
        for (i, case) in CASES.iter().enumerate() {
            with_case(case, |ctx, msg| {
                let old = to_js::message(&ctx, &msg).unwrap();
                let new = message(&ctx, &msg).unwrap();
                let (old, new) = (text(&ctx, old), text(&ctx, new));
                assert_eq!(new, old, "case {i}: {case}");
                // Not vacuous: each case shows its fields (nulls for unset messages too).
                assert!(new.contains("\"unsetInner\":null"), "case {i}: {new}");
            });
        }
    }

    #[test]
    fn key_order_types_and_nulls_as_k6_shows_them() {
        with_case(CASES[1], |ctx, msg| {
            let v = message(&ctx, &msg).unwrap();
            let o = v.as_object().unwrap();
            let keys: Vec<String> = o.keys::<String>().map(|k| k.unwrap()).collect();
            assert_eq!(keys[..4], ["d", "f", "i32", "i64"]);
            // Unset message fields come last (`fill_nulls` appends them), in field order.
            let at = |k: &str| keys.iter().position(|x| x == k).unwrap();
            assert!(
                at("inner") > at("byS64") && at("inner") < at("unsetInner"),
                "{keys:?}"
            );
            assert_eq!(keys.last().unwrap(), "list");
            assert!(
                !keys.iter().any(|k| k == "maybe" || k == "pickText"),
                "{keys:?}"
            );
            let i64s: String = o.get("i64").unwrap();
            assert_eq!(i64s, "-9007199254740993");
            let f: f64 = o.get("f").unwrap();
            assert_eq!(f, 0.1);
            let raw: String = o.get("raw").unwrap();
            assert_eq!(raw, "AAEC/w==");
            let e: String = o.get("e").unwrap();
            assert_eq!(e, "E_ONE");
            assert!(o.get::<_, Value>("inner").unwrap().is_null());
        });
    }
}
