//! A protobuf message to a JS value through serde: a `Serializer` that builds QuickJS
//! objects, driven by prost-reflect's protojson serialisation (so k6's conventions — names,
//! 64-bit integers as strings, enums by name, base64 bytes, well-known types — are exactly
//! volley-grpc's `json` module's), then protojson's `null`s for unset message fields.
//!
//! Responses take the faster descriptor walk (`direct`); this route remains for well-known
//! types and extensions, and as the reference `direct`'s table test compares against.

use rquickjs::object::Property;
use rquickjs::{Array, Atom, Ctx, Object, Value};
use serde::ser::{self, Serialize};
use volley_grpc::prost_reflect::{
    DynamicMessage, Kind, MessageDescriptor, ReflectMessage, SerializeOptions,
};

/// `msg` as k6 shows `response.message`.
pub(super) fn message<'js>(ctx: &Ctx<'js>, msg: &DynamicMessage) -> Result<Value<'js>, String> {
    let v = serialized(ctx, msg)?;
    fill_nulls(&msg.descriptor(), &v).map_err(|e| e.to_string())?;
    Ok(v)
}

/// `msg` as prost-reflect's protojson writes it (no `null`s added).
pub(super) fn serialized<'js>(ctx: &Ctx<'js>, msg: &DynamicMessage) -> Result<Value<'js>, String> {
    let opts = SerializeOptions::new().skip_default_fields(false);
    msg.serialize_with_options(Js(ctx), &opts)
        .map_err(|e| format!("failed to marshal the message: {}", e.0))
}

/// protojson's `EmitUnpopulated` writes unset message fields as `null` (oneof members and
/// maps aside); prost-reflect leaves them out. Mirrors volley-grpc's `json::fill_nulls`.
fn fill_nulls(desc: &MessageDescriptor, v: &Value<'_>) -> rquickjs::Result<()> {
    let Some(obj) = v.as_object() else {
        return Ok(());
    };
    for f in desc.fields() {
        let Kind::Message(sub) = f.kind() else {
            continue;
        };
        if f.containing_oneof().is_some() || f.is_map() {
            continue;
        }
        let name = f.json_name();
        let inner: Value = obj.get(name)?;
        if inner.is_undefined() {
            obj.set(name, Value::new_null(v.ctx().clone()))?;
        } else if sub.full_name().starts_with("google.protobuf.") {
            // Well-known types have their own JSON forms.
        } else if let Some(items) = inner.as_array() {
            for i in items.iter::<Value>() {
                fill_nulls(&sub, &i?)?;
            }
        } else {
            fill_nulls(&sub, &inner)?;
        }
    }
    Ok(())
}

/// What went wrong building the value (a JS exception, or serde's own message).
#[derive(Debug)]
pub(super) struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

impl From<rquickjs::Error> for Error {
    fn from(e: rquickjs::Error) -> Self {
        Error(e.to_string())
    }
}

struct Js<'a, 'js>(&'a Ctx<'js>);

impl<'js> Js<'_, 'js> {
    fn str(&self, s: &str) -> Result<Value<'js>, Error> {
        Ok(rquickjs::String::from_str(self.0.clone(), s)?.into_value())
    }
}

type R<'js> = Result<Value<'js>, Error>;

impl<'a, 'js> ser::Serializer for Js<'a, 'js> {
    type Ok = Value<'js>;
    type Error = Error;
    type SerializeSeq = Seq<'a, 'js>;
    type SerializeTuple = Seq<'a, 'js>;
    type SerializeTupleStruct = Seq<'a, 'js>;
    type SerializeTupleVariant = Seq<'a, 'js>;
    type SerializeMap = Map<'a, 'js>;
    type SerializeStruct = Map<'a, 'js>;
    type SerializeStructVariant = Map<'a, 'js>;

    fn serialize_bool(self, v: bool) -> R<'js> {
        Ok(Value::new_bool(self.0.clone(), v))
    }
    fn serialize_i8(self, v: i8) -> R<'js> {
        self.serialize_i32(v.into())
    }
    fn serialize_i16(self, v: i16) -> R<'js> {
        self.serialize_i32(v.into())
    }
    fn serialize_i32(self, v: i32) -> R<'js> {
        Ok(Value::new_int(self.0.clone(), v))
    }
    fn serialize_i64(self, v: i64) -> R<'js> {
        Ok(Value::new_number(self.0.clone(), v as f64))
    }
    fn serialize_u8(self, v: u8) -> R<'js> {
        self.serialize_i32(v.into())
    }
    fn serialize_u16(self, v: u16) -> R<'js> {
        self.serialize_i32(v.into())
    }
    fn serialize_u32(self, v: u32) -> R<'js> {
        Ok(Value::new_number(self.0.clone(), v.into()))
    }
    fn serialize_u64(self, v: u64) -> R<'js> {
        Ok(Value::new_number(self.0.clone(), v as f64))
    }
    fn serialize_f32(self, v: f32) -> R<'js> {
        // As JSON text would carry it (the shortest decimal form of the f32).
        let shown: f64 = v.to_string().parse().unwrap_or(v.into());
        Ok(Value::new_number(self.0.clone(), shown))
    }
    fn serialize_f64(self, v: f64) -> R<'js> {
        Ok(Value::new_number(self.0.clone(), v))
    }
    fn serialize_char(self, v: char) -> R<'js> {
        self.str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> R<'js> {
        self.str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> R<'js> {
        let a = Array::new(self.0.clone())?;
        for (i, b) in v.iter().enumerate() {
            a.set(i, *b)?;
        }
        Ok(a.into_value())
    }
    fn serialize_none(self) -> R<'js> {
        Ok(Value::new_null(self.0.clone()))
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> R<'js> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R<'js> {
        Ok(Value::new_null(self.0.clone()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> R<'js> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R<'js> {
        self.str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> R<'js> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R<'js> {
        let o = Object::new(self.0.clone())?;
        o.set(variant, v.serialize(Js(self.0))?)?;
        Ok(o.into_value())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a, 'js>, Error> {
        Ok(Seq(self.0, Array::new(self.0.clone())?, 0))
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a, 'js>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a, 'js>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Seq<'a, 'js>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Map<'a, 'js>, Error> {
        Ok(Map(self.0, Object::new(self.0.clone())?, None))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Map<'a, 'js>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Map<'a, 'js>, Error> {
        self.serialize_map(Some(len))
    }
    fn collect_str<T: ?Sized + std::fmt::Display>(self, v: &T) -> R<'js> {
        self.str(&v.to_string())
    }
}

/// An array being filled (the next index in `.2`).
pub(super) struct Seq<'a, 'js>(&'a Ctx<'js>, Array<'js>, usize);

impl<'js> Seq<'_, 'js> {
    fn push<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        self.1.set(self.2, v.serialize(Js(self.0))?)?;
        self.2 += 1;
        Ok(())
    }
}

/// The four sequence traits serde has (sequences, tuples and their struct/variant forms)
/// all append to the array.
macro_rules! seq_impl {
    ($($tr:ident :: $f:ident),*) => {$(
        impl<'js> ser::$tr for Seq<'_, 'js> {
            type Ok = Value<'js>;
            type Error = Error;
            fn $f<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
                self.push(v)
            }
            fn end(self) -> R<'js> {
                Ok(self.1.into_value())
            }
        }
    )*};
}

seq_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// An object being filled; `.2` holds a key until its value comes.
pub(super) struct Map<'a, 'js>(&'a Ctx<'js>, Object<'js>, Option<Atom<'js>>);

/// Map keys are strings in protojson; other key types get their JSON text. Keys become
/// atoms straight from the field names (no `String` per key).
struct KeyOf<'a, 'js>(&'a Ctx<'js>);

impl<'js> KeyOf<'_, 'js> {
    fn atom(&self, s: &str) -> Result<Atom<'js>, Error> {
        Ok(Atom::from_str(self.0.clone(), s)?)
    }
}

type K<'js> = Result<Atom<'js>, Error>;

/// A scalar key as its text.
macro_rules! key_as_text {
    ($($f:ident : $t:ty),*) => {$(
        fn $f(self, v: $t) -> K<'js> {
            self.atom(&v.to_string())
        }
    )*};
}

impl<'js> ser::Serializer for KeyOf<'_, 'js> {
    type Ok = Atom<'js>;
    type Error = Error;
    type SerializeSeq = ser::Impossible<Atom<'js>, Error>;
    type SerializeTuple = ser::Impossible<Atom<'js>, Error>;
    type SerializeTupleStruct = ser::Impossible<Atom<'js>, Error>;
    type SerializeTupleVariant = ser::Impossible<Atom<'js>, Error>;
    type SerializeMap = ser::Impossible<Atom<'js>, Error>;
    type SerializeStruct = ser::Impossible<Atom<'js>, Error>;
    type SerializeStructVariant = ser::Impossible<Atom<'js>, Error>;

    key_as_text!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char
    );
    fn serialize_str(self, v: &str) -> K<'js> {
        self.atom(v)
    }
    fn serialize_bytes(self, _: &[u8]) -> K<'js> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_none(self) -> K<'js> {
        self.atom("null")
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> K<'js> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> K<'js> {
        self.atom("null")
    }
    fn serialize_unit_struct(self, _: &'static str) -> K<'js> {
        self.atom("null")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> K<'js> {
        self.atom(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> K<'js> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> K<'js> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error("a map key must be a string".into()))
    }
    fn collect_str<T: ?Sized + std::fmt::Display>(self, v: &T) -> K<'js> {
        self.atom(&v.to_string())
    }
}

/// A property as `JSON.parse` makes it: defined, not assigned (an own data property even
/// for `__proto__`, and no setter of `Object.prototype` runs); cheaper than a `set` too.
fn entry<'js>(o: &Object<'js>, k: Atom<'js>, v: Value<'js>) -> Result<(), Error> {
    o.prop(k, Property::from(v).writable().enumerable().configurable())?;
    Ok(())
}

impl<'js> ser::SerializeMap for Map<'_, 'js> {
    type Ok = Value<'js>;
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> Result<(), Error> {
        self.2 = Some(k.serialize(KeyOf(self.0))?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        let k = match self.2.take() {
            Some(k) => k,
            None => KeyOf(self.0).atom("")?,
        };
        entry(&self.1, k, v.serialize(Js(self.0))?)
    }
    fn serialize_entry<K: ?Sized + Serialize, V: ?Sized + Serialize>(
        &mut self,
        k: &K,
        v: &V,
    ) -> Result<(), Error> {
        let k = k.serialize(KeyOf(self.0))?;
        entry(&self.1, k, v.serialize(Js(self.0))?)
    }
    fn end(self) -> R<'js> {
        Ok(self.1.into_value())
    }
}

/// Structs (and struct variants) are objects keyed by field name.
macro_rules! struct_impl {
    ($($tr:ident),*) => {$(
        impl<'js> ser::$tr for Map<'_, 'js> {
            type Ok = Value<'js>;
            type Error = Error;
            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                k: &'static str,
                v: &T,
            ) -> Result<(), Error> {
                let k = KeyOf(self.0).atom(k)?;
                entry(&self.1, k, v.serialize(Js(self.0))?)
            }
            fn end(self) -> R<'js> {
                Ok(self.1.into_value())
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);
