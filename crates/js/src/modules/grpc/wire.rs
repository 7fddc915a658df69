//! Protobuf wire bytes → the JS value of `response.message` in one pass: no prost-reflect
//! `DynamicMessage` in between, field names as atoms made once per VU and objects given
//! their whole shape at once (`shape`).
//!
//! The output is `direct::message`'s (prost-reflect's protojson plus `fill_nulls`' `null`s):
//! fields in the descriptor's order, presence fields left out when unset, unset message
//! fields appended as `null` (not oneof members, not inside maps or well-known types),
//! 64-bit integers as strings, enums by name, bytes as base64, map keys as text.
//!
//! Only the usual case is read here: proto3 messages (their enums and nested messages
//! proto3 too). Anything else — a top-level well-known type, proto2, a message field that
//! comes twice (protobuf merges them), a wire type that does not fit, truncated or invalid
//! bytes, nesting deeper than [`MAX_DEPTH`] — gives `None` and the caller takes the old
//! route (`DynamicMessage` + `direct`), which also words any error exactly as before.
//! Nested well-known types go through `to_js` (their JSON forms are prost-reflect's).
//!
//! Layout: [`Cache`] (per VU: [`Plan`]s by message type, the response's template), the
//! reader, `decode` (wire → slots per field) and `emit` (slots → object).

use super::direct::non_finite;
use super::shape::{self, Key};
use super::to_js;
use crate::rt::VuData;
use base64::Engine as _;
use rquickjs::object::Property;
use rquickjs::qjs::JSAtom;
use rquickjs::{Array, Ctx, Object, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use volley_grpc::prost_reflect::{DynamicMessage, EnumDescriptor, Kind, MessageDescriptor, Syntax};

/// Plans one VU keeps (one per message type it decoded; more go the old route).
const MAX_PLANS: usize = 256;
/// Templates per message type (one per set of present presence-fields).
const MAX_SHAPES: usize = 16;
/// Nesting read here; deeper messages take the old route (prost's limit is 100).
const MAX_DEPTH: u32 = 64;

/// What a VU keeps between calls (in its context's userdata).
#[derive(Default)]
pub(super) struct Cache<'js> {
    plans: RefCell<Vec<Rc<Plan<'js>>>>,
    /// The response object's keys and template.
    response: RefCell<Option<Response<'js>>>,
}

/// The response object's keys (kept alive), their raw ids and its template.
type Response<'js> = (Vec<Key<'js>>, Vec<JSAtom>, Object<'js>);

// SAFETY: `Cache` holds only `'js` values; `Changed` just renames the lifetime.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Cache<'js> {
    type Changed<'to> = Cache<'to>;
}

fn cache<'a, 'js>(ctx: &'a Ctx<'js>) -> &'a Cache<'js> {
    if ctx.vu_userdata::<Cache>().is_none() {
        ctx.store_vu_userdata(Cache::default());
    }
    ctx.vu_userdata::<Cache>().expect("stored above")
}

impl<'js> Cache<'js> {
    /// The plan of `desc` and its index (made on first use), or `None`: not for this route.
    fn find(&self, ctx: &Ctx<'js>, desc: &MessageDescriptor) -> Option<(usize, Rc<Plan<'js>>)> {
        if let Some(i) = self.plans.borrow().iter().position(|p| p.desc == *desc) {
            return Some((i, self.plans.borrow()[i].clone()));
        }
        if self.plans.borrow().len() >= MAX_PLANS {
            return None;
        }
        let p = Rc::new(Plan::new(ctx, desc)?);
        let mut list = self.plans.borrow_mut();
        list.push(p.clone());
        Some((list.len() - 1, p))
    }

    fn at(&self, i: usize) -> Rc<Plan<'js>> {
        self.plans.borrow()[i].clone()
    }
}

/// `{status, message, headers, trailers, error}` in one step (k6's key order).
pub(super) fn response<'js>(
    ctx: &Ctx<'js>,
    vals: &[Value<'js>; 5],
) -> rquickjs::Result<Object<'js>> {
    let c = cache(ctx);
    let mut r = c.response.borrow_mut();
    if r.is_none() {
        let keys = ["status", "message", "headers", "trailers", "error"]
            .iter()
            .map(|n| Key::new(ctx, n))
            .collect::<rquickjs::Result<Vec<_>>>()?;
        let raw: Vec<JSAtom> = keys.iter().map(|k| k.raw).collect();
        let t = shape::template(ctx, &raw)?;
        *r = Some((keys, raw, t));
    }
    let (_, raw, t) = r.as_ref().expect("made above");
    shape::make(ctx, Some(t), raw, vals)
}

/// Protobuf bytes of type `desc` as k6 shows `response.message`; `None`: take the old route.
pub(super) fn message<'js>(
    ctx: &Ctx<'js>,
    desc: &MessageDescriptor,
    bytes: &[u8],
) -> Option<Value<'js>> {
    let c = cache(ctx);
    let (_, p) = c.find(ctx, desc)?;
    decode(ctx, c, &p, bytes, true, 0)
}

/// A field's type as read from the wire.
enum Ty {
    F64,
    F32,
    I32,
    I64,
    U32,
    U64,
    S32,
    S64,
    Fx32,
    Fx64,
    Sfx32,
    Sfx64,
    Bool,
    Str,
    Bytes,
    /// `null`: google.protobuf.NullValue (shown as `null`).
    Enum(EnumDescriptor, bool),
    /// `true`: a well-known type (`to_js`'s route).
    Msg(MessageDescriptor, bool),
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

impl Ty {
    fn of(kind: Kind) -> Option<Ty> {
        Some(match kind {
            Kind::Double => Ty::F64,
            Kind::Float => Ty::F32,
            Kind::Int32 => Ty::I32,
            Kind::Int64 => Ty::I64,
            Kind::Uint32 => Ty::U32,
            Kind::Uint64 => Ty::U64,
            Kind::Sint32 => Ty::S32,
            Kind::Sint64 => Ty::S64,
            Kind::Fixed32 => Ty::Fx32,
            Kind::Fixed64 => Ty::Fx64,
            Kind::Sfixed32 => Ty::Sfx32,
            Kind::Sfixed64 => Ty::Sfx64,
            Kind::Bool => Ty::Bool,
            Kind::String => Ty::Str,
            Kind::Bytes => Ty::Bytes,
            Kind::Enum(e) => {
                // Closed (proto2) enums keep unknown numbers elsewhere: the old route.
                if e.parent_file().syntax() != Syntax::Proto3 {
                    return None;
                }
                let null = e.full_name() == "google.protobuf.NullValue";
                Ty::Enum(e, null)
            }
            Kind::Message(m) => {
                let wkt = m.full_name().starts_with("google.protobuf.");
                Ty::Msg(m, wkt)
            }
        })
    }

    fn wire(&self) -> u8 {
        match self {
            Ty::F64 | Ty::Fx64 | Ty::Sfx64 => I64,
            Ty::F32 | Ty::Fx32 | Ty::Sfx32 => I32,
            Ty::Str | Ty::Bytes | Ty::Msg(..) => LEN,
            _ => VARINT,
        }
    }
}

enum Card {
    Single,
    List,
    /// Key and value types of a map's entries.
    Map(Ty, Ty),
}

struct Field<'js> {
    number: u32,
    key: Key<'js>,
    ty: Ty,
    card: Card,
    /// Left out when unset (`supports_presence`).
    presence: bool,
    /// Its oneof's index in [`Plan::oneofs`].
    oneof: Option<usize>,
    /// Nested messages below it get `null`s (not a oneof member, not a map).
    inner_fill: bool,
    /// Shown as `null` at the end when unset.
    null_fill: bool,
    /// What an unset singular scalar shows (strings are immutable: shared).
    absent: Option<Value<'js>>,
    /// The plan of its message type (or its map's values'), once looked up.
    sub: Cell<Option<usize>>,
}

/// How to read and show one message type.
pub(super) struct Plan<'js> {
    desc: MessageDescriptor,
    /// In the descriptor's order (the order keys are shown in).
    fields: Vec<Field<'js>>,
    /// Field index + 1 by number, for numbers below 64 (0: none).
    small: [u16; 64],
    /// Field indexes of each oneof.
    oneofs: Vec<Vec<usize>>,
    /// Templates by (fields shown in place as bits, nulls appended).
    shapes: RefCell<Vec<(u64, bool, Object<'js>)>>,
}

impl<'js> Plan<'js> {
    fn new(ctx: &Ctx<'js>, desc: &MessageDescriptor) -> Option<Self> {
        if desc.full_name().starts_with("google.protobuf.")
            || desc.parent_file().syntax() != Syntax::Proto3
        {
            return None;
        }
        let mut oneof_names: Vec<String> = Vec::new();
        let mut oneofs: Vec<Vec<usize>> = Vec::new();
        let mut small = [0u16; 64];
        let mut fields = Vec::new();
        for (i, f) in desc.fields().enumerate() {
            if f.is_group() {
                return None;
            }
            let card = if f.is_map() {
                let Kind::Message(entry) = f.kind() else {
                    return None;
                };
                Card::Map(
                    Ty::of(entry.map_entry_key_field().kind())?,
                    Ty::of(entry.map_entry_value_field().kind())?,
                )
            } else if f.is_list() {
                Card::List
            } else {
                Card::Single
            };
            let oneof = match f.containing_oneof() {
                Some(o) => {
                    let k = match oneof_names.iter().position(|n| n == o.full_name()) {
                        Some(k) => k,
                        None => {
                            oneof_names.push(o.full_name().to_owned());
                            oneofs.push(Vec::new());
                            oneofs.len() - 1
                        }
                    };
                    oneofs[k].push(i);
                    Some(k)
                }
                None => None,
            };
            let ty = Ty::of(f.kind())?;
            let is_msg = matches!(f.kind(), Kind::Message(_));
            let absent = match card {
                Card::Single if !is_msg => Some(absent(ctx, &ty)?),
                _ => None,
            };
            if (f.number() as usize) < small.len() {
                small[f.number() as usize] = u16::try_from(i + 1).ok()?;
            }
            fields.push(Field {
                number: f.number(),
                key: Key::new(ctx, f.json_name()).ok()?,
                ty,
                presence: f.supports_presence(),
                inner_fill: oneof.is_none() && !f.is_map(),
                null_fill: is_msg && oneof.is_none() && !f.is_map() && f.supports_presence(),
                oneof,
                card,
                absent,
                sub: Cell::new(None),
            });
        }
        Some(Plan {
            desc: desc.clone(),
            fields,
            small,
            oneofs,
            shapes: RefCell::default(),
        })
    }

    fn index(&self, number: u32) -> Option<usize> {
        match self.small.get(number as usize) {
            Some(&i) => (i as usize).checked_sub(1),
            None => self.fields.iter().position(|x| x.number == number),
        }
    }
}

/// The value an unset singular scalar shows (proto3 defaults).
fn absent<'js>(ctx: &Ctx<'js>, ty: &Ty) -> Option<Value<'js>> {
    let c = || ctx.clone();
    Some(match ty {
        Ty::I64 | Ty::U64 | Ty::S64 | Ty::Fx64 | Ty::Sfx64 => string(ctx, "0")?,
        Ty::F64 | Ty::F32 => Value::new_number(c(), 0.0),
        Ty::I32 | Ty::U32 | Ty::S32 | Ty::Fx32 | Ty::Sfx32 => Value::new_int(c(), 0),
        Ty::Bool => Value::new_bool(c(), false),
        Ty::Str | Ty::Bytes => string(ctx, "")?,
        Ty::Enum(e, null) => enum_value(ctx, e, *null, 0)?,
        Ty::Msg(..) => return None,
    })
}

fn string<'js>(ctx: &Ctx<'js>, s: &str) -> Option<Value<'js>> {
    Some(
        rquickjs::String::from_str(ctx.clone(), s)
            .ok()?
            .into_value(),
    )
}

/// An enum number by name (unknown numbers as numbers; NullValue as `null`).
fn enum_value<'js>(ctx: &Ctx<'js>, e: &EnumDescriptor, null: bool, n: i32) -> Option<Value<'js>> {
    if null {
        return Some(Value::new_null(ctx.clone()));
    }
    match e.get_value(n) {
        Some(v) => string(ctx, v.name()),
        None => Some(Value::new_int(ctx.clone(), n)),
    }
}

/// The wire format, read as prost reads it (a `None` where prost would fail).
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.0.is_empty()
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            // The tenth byte may carry one bit only (prost: "invalid varint").
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn fixed32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn fixed64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.take(n)
    }

    /// A field number and wire type (`None`: field 0, a number beyond protobuf's range).
    fn tag(&mut self) -> Option<(u32, u8)> {
        let t = u32::try_from(self.varint()?).ok()?;
        let (n, w) = (t >> 3, (t & 7) as u8);
        (n != 0).then_some((n, w))
    }

    /// Past a field this plan does not know (groups: the old route).
    fn skip(&mut self, wire: u8) -> Option<()> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            I32 => self.take(4).map(drop),
            _ => None,
        }
    }
}

fn zigzag32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ (-((v & 1) as i32))
}

fn zigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ (-((v & 1) as i64))
}

/// One scalar (not a message) of type `ty` as shown.
fn scalar<'js>(ctx: &Ctx<'js>, ty: &Ty, r: &mut Reader<'_>) -> Option<Value<'js>> {
    let c = || ctx.clone();
    Some(match ty {
        Ty::F64 => {
            let x = f64::from_bits(r.fixed64()?);
            if x.is_finite() {
                Value::new_number(c(), x)
            } else {
                string(ctx, non_finite(x))?
            }
        }
        Ty::F32 => {
            let x = f32::from_bits(r.fixed32()?);
            if x.is_finite() {
                // As JSON text carries it: the shortest decimal form of the f32.
                let shown: f64 = x.to_string().parse().unwrap_or(x.into());
                Value::new_number(c(), shown)
            } else {
                string(ctx, non_finite(x.into()))?
            }
        }
        Ty::I32 => Value::new_int(c(), r.varint()? as i32),
        Ty::I64 => string(ctx, &(r.varint()? as i64).to_string())?,
        Ty::U32 => Value::new_number(c(), f64::from(r.varint()? as u32)),
        Ty::U64 => string(ctx, &r.varint()?.to_string())?,
        Ty::S32 => Value::new_int(c(), zigzag32(r.varint()?)),
        Ty::S64 => string(ctx, &zigzag64(r.varint()?).to_string())?,
        Ty::Fx32 => Value::new_number(c(), f64::from(r.fixed32()?)),
        Ty::Fx64 => string(ctx, &r.fixed64()?.to_string())?,
        Ty::Sfx32 => Value::new_int(c(), r.fixed32()? as i32),
        Ty::Sfx64 => string(ctx, &(r.fixed64()? as i64).to_string())?,
        Ty::Bool => Value::new_bool(c(), r.varint()? != 0),
        Ty::Str => string(ctx, std::str::from_utf8(r.bytes()?).ok()?)?,
        Ty::Bytes => string(
            ctx,
            &base64::engine::general_purpose::STANDARD.encode(r.bytes()?),
        )?,
        Ty::Enum(e, null) => enum_value(ctx, e, *null, r.varint()? as i32)?,
        Ty::Msg(..) => return None,
    })
}

/// A map key as text (`JSON` object keys), read as type `ty`.
fn key_text(ty: &Ty, r: Option<&mut Reader<'_>>) -> Option<String> {
    let Some(r) = r else {
        // Absent: the type's default.
        return Some(match ty {
            Ty::Str => String::new(),
            Ty::Bool => "false".into(),
            _ => "0".into(),
        });
    };
    Some(match ty {
        Ty::I32 => (r.varint()? as i32).to_string(),
        Ty::I64 => (r.varint()? as i64).to_string(),
        Ty::U32 => (r.varint()? as u32).to_string(),
        Ty::U64 => r.varint()?.to_string(),
        Ty::S32 => zigzag32(r.varint()?).to_string(),
        Ty::S64 => zigzag64(r.varint()?).to_string(),
        Ty::Fx32 => r.fixed32()?.to_string(),
        Ty::Fx64 => r.fixed64()?.to_string(),
        Ty::Sfx32 => (r.fixed32()? as i32).to_string(),
        Ty::Sfx64 => (r.fixed64()? as i64).to_string(),
        Ty::Bool => (r.varint()? != 0).to_string(),
        Ty::Str => std::str::from_utf8(r.bytes()?).ok()?.to_owned(),
        _ => return None,
    })
}

/// What one field has gathered so far.
enum Slot<'js> {
    Empty,
    One(Value<'js>),
    List(Array<'js>, usize),
    Map(Object<'js>),
}

/// A nested message of type `ty` (field `f`'s, or its map's values').
fn nested<'js>(
    ctx: &Ctx<'js>,
    c: &Cache<'js>,
    f: &Field<'js>,
    ty: &Ty,
    bytes: &[u8],
    fill: bool,
    depth: u32,
) -> Option<Value<'js>> {
    let Ty::Msg(desc, wkt) = ty else {
        return None;
    };
    if *wkt {
        let m = DynamicMessage::decode(desc.clone(), bytes).ok()?;
        return to_js::serialized(ctx, &m).ok();
    }
    let p = match f.sub.get() {
        Some(i) => c.at(i),
        None => {
            let (i, p) = c.find(ctx, desc)?;
            f.sub.set(Some(i));
            p
        }
    };
    decode(ctx, c, &p, bytes, fill, depth + 1)
}

/// One map entry (key = field 1, value = field 2; either may be absent) as (key, value).
fn entry<'js>(
    ctx: &Ctx<'js>,
    c: &Cache<'js>,
    f: &Field<'js>,
    (kt, vt): (&Ty, &Ty),
    bytes: &[u8],
    depth: u32,
) -> Option<(String, Value<'js>)> {
    let mut r = Reader(bytes);
    let (mut k, mut v) = (None, None);
    while !r.done() {
        let (n, w) = r.tag()?;
        match n {
            1 if w == kt.wire() => k = Some(key_text(kt, Some(&mut r))?),
            // A message value that comes twice merges: the old route.
            2 if matches!(vt, Ty::Msg(..)) && w == LEN && v.is_none() => {
                v = Some(nested(ctx, c, f, vt, r.bytes()?, false, depth)?)
            }
            2 if !matches!(vt, Ty::Msg(..)) && w == vt.wire() => v = Some(scalar(ctx, vt, &mut r)?),
            1 | 2 => return None,
            _ => r.skip(w)?,
        }
    }
    let k = match k {
        Some(k) => k,
        None => key_text(kt, None)?,
    };
    let v = match v {
        Some(v) => v,
        None if matches!(vt, Ty::Msg(..)) => nested(ctx, c, f, vt, &[], false, depth)?,
        None => absent(ctx, vt)?,
    };
    Some((k, v))
}

/// Scalar types a repeated field may carry packed.
fn packable(ty: &Ty) -> bool {
    !matches!(ty, Ty::Str | Ty::Bytes | Ty::Msg(..))
}

/// `bytes` as a message of plan `p`; `fill`: with the `null`s of unset message fields.
fn decode<'js>(
    ctx: &Ctx<'js>,
    c: &Cache<'js>,
    p: &Plan<'js>,
    bytes: &[u8],
    fill: bool,
    depth: u32,
) -> Option<Value<'js>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut slots: Vec<Slot<'js>> = (0..p.fields.len()).map(|_| Slot::Empty).collect();
    let mut r = Reader(bytes);
    while !r.done() {
        let (n, w) = r.tag()?;
        let Some(i) = p.index(n) else {
            r.skip(w)?;
            continue;
        };
        let f = &p.fields[i];
        match &f.card {
            Card::Single => {
                let v = match &f.ty {
                    // Twice: protobuf merges the two, the old route does that.
                    Ty::Msg(..) if w != LEN || !matches!(slots[i], Slot::Empty) => return None,
                    Ty::Msg(..) => {
                        nested(ctx, c, f, &f.ty, r.bytes()?, fill && f.inner_fill, depth)?
                    }
                    ty if w == ty.wire() => scalar(ctx, ty, &mut r)?,
                    _ => return None,
                };
                if let Some(o) = f.oneof {
                    // Setting a oneof member clears the others.
                    for &j in &p.oneofs[o] {
                        slots[j] = Slot::Empty;
                    }
                }
                slots[i] = Slot::One(v);
            }
            Card::List => {
                if matches!(slots[i], Slot::Empty) {
                    slots[i] = Slot::List(Array::new(ctx.clone()).ok()?, 0);
                }
                let Slot::List(a, len) = &mut slots[i] else {
                    return None;
                };
                if w == LEN && packable(&f.ty) {
                    let mut pr = Reader(r.bytes()?);
                    while !pr.done() {
                        a.set(*len, scalar(ctx, &f.ty, &mut pr)?).ok()?;
                        *len += 1;
                    }
                } else if w == f.ty.wire() {
                    let v = match &f.ty {
                        Ty::Msg(..) => {
                            nested(ctx, c, f, &f.ty, r.bytes()?, fill && f.inner_fill, depth)?
                        }
                        ty => scalar(ctx, ty, &mut r)?,
                    };
                    a.set(*len, v).ok()?;
                    *len += 1;
                } else {
                    return None;
                }
            }
            Card::Map(kt, vt) => {
                if w != LEN {
                    return None;
                }
                let (k, v) = entry(ctx, c, f, (kt, vt), r.bytes()?, depth)?;
                if matches!(slots[i], Slot::Empty) {
                    slots[i] = Slot::Map(Object::new(ctx.clone()).ok()?);
                }
                let Slot::Map(o) = &slots[i] else {
                    return None;
                };
                // As `JSON.parse` defines it (a `__proto__` key is an own property).
                let prop = Property::from(v).writable().enumerable().configurable();
                o.prop(k.as_str(), prop).ok()?;
            }
        }
    }
    emit(ctx, p, slots, fill)
}

/// The gathered fields as an object, in the plan's order, `null`s appended when `fill`.
fn emit<'js>(
    ctx: &Ctx<'js>,
    p: &Plan<'js>,
    slots: Vec<Slot<'js>>,
    fill: bool,
) -> Option<Value<'js>> {
    let n = p.fields.len();
    let mut keys: Vec<JSAtom> = Vec::with_capacity(n);
    let mut vals: Vec<Value<'js>> = Vec::with_capacity(n);
    let mut nulls: Vec<JSAtom> = Vec::new();
    let mut shown = 0u64;
    for (i, (f, s)) in p.fields.iter().zip(slots).enumerate() {
        let v = match s {
            Slot::Empty if f.presence => {
                if f.null_fill {
                    nulls.push(f.key.raw);
                }
                continue;
            }
            Slot::Empty => match (&f.card, &f.absent) {
                (Card::Single, Some(v)) => v.clone(),
                (Card::List, _) => Array::new(ctx.clone()).ok()?.into_value(),
                (Card::Map(..), _) => Object::new(ctx.clone()).ok()?.into_value(),
                (Card::Single, None) => return None,
            },
            Slot::One(v) => v,
            Slot::List(a, _) => a.into_value(),
            Slot::Map(o) => o.into_value(),
        };
        if i < 64 {
            shown |= 1 << i;
        }
        keys.push(f.key.raw);
        vals.push(v);
    }
    if fill {
        for k in nulls {
            keys.push(k);
            vals.push(Value::new_null(ctx.clone()));
        }
    }
    let tmpl = if n <= 64 {
        template(ctx, p, shown, fill, &keys)
    } else {
        None
    };
    Some(
        shape::make(ctx, tmpl.as_ref(), &keys, &vals)
            .ok()?
            .into_value(),
    )
}

/// The template of this layout (made on first use; none past [`MAX_SHAPES`]).
fn template<'js>(
    ctx: &Ctx<'js>,
    p: &Plan<'js>,
    shown: u64,
    fill: bool,
    keys: &[JSAtom],
) -> Option<Object<'js>> {
    let mut shapes = p.shapes.borrow_mut();
    if let Some(t) = shapes.iter().find(|t| t.0 == shown && t.1 == fill) {
        return Some(t.2.clone());
    }
    if shapes.len() >= MAX_SHAPES {
        return None;
    }
    let t = shape::template(ctx, keys).ok()?;
    shapes.push((shown, fill, t.clone()));
    Some(t)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
