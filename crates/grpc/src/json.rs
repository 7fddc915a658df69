//! Dynamic messages from and to JSON, as k6 does it with Go's protojson: field names in
//! lowerCamelCase (`json_name`; the proto names are accepted on input too), every field
//! emitted even when unpopulated (`EmitUnpopulated`), 64-bit integers as strings, enums by
//! name, bytes as standard base64; an unknown field in a request is an error.

use prost::Message;
use prost_reflect::{
    DeserializeOptions, DynamicMessage, MessageDescriptor, ReflectMessage, SerializeOptions,
};

/// A request object (JSON text) → the encoded protobuf message.
pub fn encode(desc: &MessageDescriptor, json: &str) -> Result<Vec<u8>, String> {
    Ok(from_json(desc, json)?.encode_to_vec())
}

/// JSON text → a message of type `desc`. The error reads as k6's.
pub fn from_json(desc: &MessageDescriptor, json: &str) -> Result<DynamicMessage, String> {
    let mut de = serde_json::Deserializer::from_str(json);
    let msg =
        DynamicMessage::deserialize_with_options(desc.clone(), &mut de, &DeserializeOptions::new())
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| format!("unable to serialise request object to protocol buffer: {e}"))?;
    Ok(msg)
}

/// Protobuf bytes of type `desc` → JSON text (k6's shape of `response.message`).
pub fn decode(desc: &MessageDescriptor, bytes: &[u8]) -> Result<String, String> {
    let msg = DynamicMessage::decode(desc.clone(), bytes)
        .map_err(|e| format!("failed to unmarshal the message: {e}"))?;
    to_json(&msg)
}

/// A message → JSON text with every field present.
pub fn to_json(msg: &DynamicMessage) -> Result<String, String> {
    let opts = SerializeOptions::new().skip_default_fields(false);
    let mut v = msg
        .serialize_with_options(serde_json::value::Serializer, &opts)
        .map_err(|e| format!("failed to marshal the message: {e}"))?;
    fill_nulls(&msg.descriptor(), &mut v);
    serde_json::to_string(&v).map_err(|e| e.to_string())
}

/// protojson's `EmitUnpopulated` also writes unset message fields, as `null` (oneof members
/// and proto3 `optional` fields stay out); prost-reflect leaves them out.
fn fill_nulls(desc: &MessageDescriptor, v: &mut serde_json::Value) {
    use prost_reflect::Kind;
    let Some(obj) = v.as_object_mut() else { return };
    for f in desc.fields() {
        let Kind::Message(sub) = f.kind() else {
            continue;
        };
        if f.containing_oneof().is_some() || f.is_map() {
            continue;
        }
        // Well-known types have their own JSON forms.
        if sub.full_name().starts_with("google.protobuf.") {
            obj.entry(f.json_name()).or_insert(serde_json::Value::Null);
            continue;
        }
        match obj.get_mut(f.json_name()) {
            None => {
                obj.insert(f.json_name().to_owned(), serde_json::Value::Null);
            }
            Some(serde_json::Value::Array(items)) => {
                for i in items {
                    fill_nulls(&sub, i);
                }
            }
            Some(inner) => fill_nulls(&sub, inner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> MessageDescriptor {
        let pool = crate::proto::load_source(
            "j.proto",
            "syntax = \"proto3\"; package j; enum K { K_ZERO = 0; K_ONE = 1; } \
             message In { string name = 1; repeated int32 v = 2; } \
             message M { string snake_name = 1; int64 big = 2; K kind = 3; bytes raw = 4; \
             In inner = 5; map<string,string> labels = 6; double ratio = 7; }",
        )
        .unwrap();
        pool.get_message_by_name("j.M").unwrap()
    }

    #[test]
    fn k6_conventions_round_trip() {
        let d = desc();
        let bytes = encode(
            &d,
            r#"{"snakeName":"a","big":"9007199254740993","kind":"K_ONE","raw":"AAE=","inner":{"name":"n","v":[1,2]}}"#,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&decode(&d, &bytes).unwrap()).unwrap();
        assert_eq!(v["snakeName"], "a");
        assert_eq!(v["big"], "9007199254740993");
        assert_eq!(v["kind"], "K_ONE");
        assert_eq!(v["raw"], "AAE=");
        assert_eq!(v["inner"]["v"], serde_json::json!([1, 2]));
        // Unpopulated fields are present.
        assert_eq!(v["labels"], serde_json::json!({}));
        assert_eq!(v["ratio"], 0.0);
    }

    #[test]
    fn unpopulated_message_fields_and_proto_names() {
        let d = desc();
        let bytes = encode(&d, r#"{"snake_name":"x","big":5}"#).unwrap();
        let v: serde_json::Value = serde_json::from_str(&decode(&d, &bytes).unwrap()).unwrap();
        assert_eq!(v["snakeName"], "x");
        assert_eq!(v["big"], "5");
        assert_eq!(v["kind"], "K_ZERO");
        assert_eq!(v["raw"], "");
        assert_eq!(v["inner"], serde_json::Value::Null, "{v}");
    }

    #[test]
    fn unknown_field_is_an_error() {
        let e = encode(&desc(), r#"{"nope":1}"#).unwrap_err();
        assert!(
            e.starts_with("unable to serialise request object to protocol buffer: "),
            "{e}"
        );
        assert!(e.contains("nope"), "{e}");
    }
}
