//! The k6 Response object a finished hop becomes: its six plain properties stored at once
//! (one QuickJS shape for every Response, from a template), and the rarely read parts
//! (`headers`, `timings`, `request`, `cookies`, `remote_ip`, `remote_port`) kept in Rust in
//! a [`RawResponse`] and turned into JS only when a script reads them.

use super::Spec;
use crate::rt::VuData;
use crate::vu::VuState;
use rquickjs::{Atom, Class, Ctx, Function, Object, Value};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use volley_http::client::{Done, HTTP11};
use volley_http::{BodyMode, Target};

/// Go's canonical header names (what k6 shows in `res.headers`): `content-type` → `Content-Type`.
fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        upper = c == '-';
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Property names of the Response object, as atoms made once per VU (a string key would be
/// hashed and looked up in the runtime's atom table on every `set`).
pub(super) struct Keys<'js> {
    pub(super) status: Atom<'js>,
    pub(super) url: Atom<'js>,
    pub(super) proto: Atom<'js>,
    pub(super) error: Atom<'js>,
    pub(super) error_code: Atom<'js>,
    pub(super) body: Atom<'js>,
    pub(super) headers: Atom<'js>,
    pub(super) method: Atom<'js>,
    pub(super) duration: Atom<'js>,
    pub(super) blocked: Atom<'js>,
    pub(super) connecting: Atom<'js>,
    pub(super) tls_handshaking: Atom<'js>,
    pub(super) sending: Atom<'js>,
    pub(super) waiting: Atom<'js>,
    pub(super) receiving: Atom<'js>,
    pub(super) redirects: Atom<'js>,
    pub(super) response_type: Atom<'js>,
    pub(super) timeout: Atom<'js>,
    pub(super) tags: Atom<'js>,
}

/// What every Response gets, ready to store without a lookup or an allocation: the raw
/// atoms of its own properties (defined, not set: a set walks the prototype chain looking
/// for setters first), the strings that rarely change, and each prepared request's URL as
/// a JS string. Half of `finish_hop`'s cost was `Object::set` (bench/RESULTS.md, #4).
pub(super) struct Fast<'js> {
    /// url, proto, status, body, error, error_code: the order every Response gets them in
    /// (one QuickJS shape for all).
    pub(super) atoms: [rquickjs::qjs::JSAtom; 6],
    pub(super) http11: Value<'js>,
    pub(super) empty: Value<'js>,
    /// (prepared id, URL as shown) per prepared slot.
    pub(super) urls: RefCell<Vec<Option<(u64, Value<'js>)>>>,
    /// An object with the Responses' prototype and their six properties: each Response is
    /// given its shape at once (`JS_VolleyAdoptShape`, vendor/rquickjs-sys/VOLLEY.md). Built
    /// property by property, a Response cost ~2,000 instructions more, and (QuickJS frees a
    /// shape with the last object that has it) its six shapes were built anew every time.
    pub(super) template: RefCell<Option<(Option<Object<'js>>, Object<'js>)>>,
    /// The shim's `Response.prototype` and its `get` (for calls the native `get` leaves to
    /// it), from `__volley.httpInit`.
    pub(super) proto: RefCell<Option<Object<'js>>>,
    pub(super) get_slow: RefCell<Option<Function<'js>>>,
}

extern "C" {
    // Added to the vendored QuickJS (vendor/rquickjs-sys/VOLLEY.md).
    fn JS_VolleyAdoptShape(
        ctx: *mut rquickjs::qjs::JSContext,
        obj: rquickjs::qjs::JSValue,
        tmpl: rquickjs::qjs::JSValue,
        vals: *mut rquickjs::qjs::JSValue,
        count: std::ffi::c_int,
    ) -> std::ffi::c_int;
}

impl<'js> Fast<'js> {
    /// The template for Responses with prototype `proto` (made on first use).
    fn template(
        &self,
        ctx: &Ctx<'js>,
        proto: Option<&Object<'js>>,
    ) -> rquickjs::Result<Object<'js>> {
        let mut t = self.template.borrow_mut();
        if let Some((p, o)) = &*t {
            if p.as_ref() == proto {
                return Ok(o.clone());
            }
        }
        let o = Object::new_proto(ctx.clone(), proto)?;
        for &a in &self.atoms {
            define_raw(ctx, &o, a, int(0))?;
        }
        *t = Some((proto.cloned(), o.clone()));
        Ok(o)
    }

    /// Give `out` (a new Response) its six properties, in `atoms`' order.
    fn fill(
        &self,
        ctx: &Ctx<'js>,
        out: &Object<'js>,
        proto: Option<&Object<'js>>,
        vals: [&Value<'js>; 6],
    ) -> rquickjs::Result<()> {
        let tmpl = self.template(ctx, proto)?;
        let c = ctx.as_raw().as_ptr();
        // SAFETY: every value belongs to this context; the function takes over the
        // references made here (and frees them if it refuses).
        let mut raw = vals.map(|v| unsafe { rquickjs::qjs::JS_DupValue(c, v.as_raw()) });
        let r = unsafe { JS_VolleyAdoptShape(c, out.as_raw(), tmpl.as_raw(), raw.as_mut_ptr(), 6) };
        if r == 0 {
            return Ok(());
        }
        // Not expected (a Response is a fresh object of that prototype); defined one by one.
        for (&a, v) in self.atoms.iter().zip(vals) {
            define(ctx, out, a, v)?;
        }
        Ok(())
    }
}

// SAFETY: `Keys` holds only `'js` values; `Changed` just renames the lifetime.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Keys<'js> {
    type Changed<'to> = Keys<'to>;
}

// SAFETY: as for `Keys`.
unsafe impl<'js> rquickjs::JsLifetime<'js> for Fast<'js> {
    type Changed<'to> = Fast<'to>;
}

/// The raw id of an atom. Atoms are interned: asking for the same name again returns the
/// same id; the reference taken here is given back at once, `a` keeps the atom alive.
fn raw_atom<'js>(ctx: &Ctx<'js>, a: &Atom<'js>) -> rquickjs::Result<rquickjs::qjs::JSAtom> {
    let name = a.to_string()?;
    let c = ctx.as_raw().as_ptr();
    // SAFETY: `c` is this live context; the name is a valid UTF-8 buffer of that length.
    unsafe {
        let id = rquickjs::qjs::JS_NewAtomLen(c, name.as_ptr().cast(), name.len() as _);
        rquickjs::qjs::JS_FreeAtom(c, id);
        Ok(id)
    }
}

/// Define `obj[atom] = v` as an own, writable, enumerable, configurable property.
fn define<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: rquickjs::qjs::JSAtom,
    v: &Value<'js>,
) -> rquickjs::Result<()> {
    // SAFETY: `v` belongs to this context; the property gets its own reference.
    let raw = unsafe { rquickjs::qjs::JS_DupValue(ctx.as_raw().as_ptr(), v.as_raw()) };
    define_raw(ctx, obj, atom, raw)
}

/// A small integer as a JS value (no reference to count).
fn int(n: i32) -> rquickjs::qjs::JSValue {
    rquickjs::qjs::JS_MKVAL(rquickjs::qjs::JS_TAG_INT, n)
}

/// [`define`] with a raw value whose reference the property takes over (also gRPC's).
pub(crate) fn define_raw<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: rquickjs::qjs::JSAtom,
    raw: rquickjs::qjs::JSValue,
) -> rquickjs::Result<()> {
    // SAFETY: `obj` and `raw` belong to this context; `atom` is kept alive by `Keys`.
    let r = unsafe {
        rquickjs::qjs::JS_DefinePropertyValue(
            ctx.as_raw().as_ptr(),
            obj.as_raw(),
            atom,
            raw,
            rquickjs::qjs::JS_PROP_C_W_E as _,
        )
    };
    // An exception (out of memory) stays pending in the context, as rquickjs expects.
    if r < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

impl<'js> Keys<'js> {
    pub(super) fn fast(ctx: &Ctx<'js>, k: &Keys<'js>) -> rquickjs::Result<Fast<'js>> {
        let atoms = [
            raw_atom(ctx, &k.url)?,
            raw_atom(ctx, &k.proto)?,
            raw_atom(ctx, &k.status)?,
            raw_atom(ctx, &k.body)?,
            raw_atom(ctx, &k.error)?,
            raw_atom(ctx, &k.error_code)?,
        ];
        Ok(Fast {
            atoms,
            http11: rquickjs::String::from_str(ctx.clone(), "HTTP/1.1")?.into_value(),
            empty: rquickjs::String::from_str(ctx.clone(), "")?.into_value(),
            urls: RefCell::new(Vec::new()),
            template: RefCell::new(None),
            proto: RefCell::new(None),
            get_slow: RefCell::new(None),
        })
    }

    pub(super) fn new(ctx: &Ctx<'js>) -> rquickjs::Result<Keys<'js>> {
        let a = |n: &str| Atom::from_str(ctx.clone(), n);
        Ok(Keys {
            status: a("status")?,
            url: a("url")?,
            proto: a("proto")?,
            error: a("error")?,
            error_code: a("error_code")?,
            body: a("body")?,
            headers: a("headers")?,
            method: a("method")?,
            duration: a("duration")?,
            blocked: a("blocked")?,
            connecting: a("connecting")?,
            tls_handshaking: a("tls_handshaking")?,
            sending: a("sending")?,
            waiting: a("waiting")?,
            receiving: a("receiving")?,
            redirects: a("redirects")?,
            response_type: a("responseType")?,
            timeout: a("timeout")?,
            tags: a("tags")?,
        })
    }
}

/// The parts of a k6 Response that scripts rarely read, kept in Rust and turned into JS
/// only when read: `Response.prototype` has getters for `headers`, `timings`, `request`,
/// `cookies`, `remote_ip` and `remote_port` (k6_http.js) that call
/// `__volley.responseField(res, i)` once and then define the value on the response itself.
/// Building all of them for every response was most of a request's JS cost.
pub(crate) struct RawResponse {
    /// duration, blocked, connecting, tls_handshaking, sending, waiting, receiving (ms).
    timings: [f64; 7],
    headers: volley_http::Headers,
    method: String,
    url: Rc<str>,
    sent_body: Option<bytes::Bytes>,
    addr: Option<SocketAddr>,
    target: Rc<Target>,
}

// SAFETY: no JS values inside; the lifetime is only renamed.
unsafe impl<'js> rquickjs::JsLifetime<'js> for RawResponse {
    type Changed<'to> = RawResponse;
}

impl<'js> rquickjs::class::Trace<'js> for RawResponse {
    fn trace<'a>(&self, _tracer: rquickjs::class::Tracer<'a, 'js>) {}
}

impl<'js> rquickjs::class::JsClass<'js> for RawResponse {
    const NAME: &'static str = "Response";
    type Mutable = rquickjs::class::Readable;

    /// No prototype object: rquickjs keeps one per *runtime*, which VUs sharing a runtime
    /// would share (a script could reach another VU's object through it).
    fn prototype(_ctx: &Ctx<'js>) -> rquickjs::Result<Option<rquickjs::Object<'js>>> {
        Ok(None)
    }

    fn constructor(
        _ctx: &Ctx<'js>,
    ) -> rquickjs::Result<Option<rquickjs::function::Constructor<'js>>> {
        Ok(None)
    }
}

/// `__volley.responseField(res, i)`: field `i` of [`RawResponse`] as JS, or `undefined`
/// when `res` is not a Response made by `request`.
pub(super) fn response_field<'js>(
    ctx: &Ctx<'js>,
    res: &Value<'js>,
    i: u32,
) -> rquickjs::Result<Value<'js>> {
    let Some(c) = res.as_object().and_then(Class::<RawResponse>::from_object) else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    let r = c.borrow();
    let Some(k) = ctx.vu_userdata::<Keys>() else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    Ok(match i {
        0 => {
            let hdrs = Object::new(ctx.clone())?;
            for (name, value) in r.headers.iter() {
                let key = canonical(name);
                let v = String::from_utf8_lossy(value);
                let joined = match hdrs.get::<_, Option<String>>(key.as_str())? {
                    Some(prev) => format!("{prev}, {v}"),
                    None => v.into_owned(),
                };
                hdrs.set(key, joined)?;
            }
            hdrs.into_value()
        }
        1 => {
            let tm = Object::new(ctx.clone())?;
            let names = [
                &k.duration,
                &k.blocked,
                &k.connecting,
                &k.tls_handshaking,
                &k.sending,
                &k.waiting,
                &k.receiving,
            ];
            for (name, v) in names.into_iter().zip(r.timings) {
                tm.set(name.clone(), v)?;
            }
            tm.into_value()
        }
        2 => {
            let req = Object::new(ctx.clone())?;
            req.set(k.method.clone(), r.method.as_str())?;
            req.set(k.url.clone(), &*r.url)?;
            let sent = r.sent_body.as_deref().unwrap_or_default();
            req.set(k.body.clone(), String::from_utf8_lossy(sent).as_ref())?;
            req.into_value()
        }
        3 => crate::modules::http_ext::response_cookies(ctx, &r.target, &r.headers)?.into_value(),
        4 => match r.addr {
            Some(a) => rquickjs::String::from_str(ctx.clone(), &a.ip().to_string())?.into_value(),
            None => Value::new_undefined(ctx.clone()),
        },
        5 => match r.addr {
            Some(a) => Value::new_int(ctx.clone(), a.port() as i32),
            None => Value::new_undefined(ctx.clone()),
        },
        _ => Value::new_undefined(ctx.clone()),
    })
}

/// The Response of a finished last hop `done` of `spec` (a `Class` instance of
/// [`RawResponse`] with prototype `proto`, given its six plain properties at once).
pub(super) fn build<'js>(
    ctx: &Ctx<'js>,
    st: &VuState,
    spec: &Spec,
    done: Done,
    proto: Option<&Object<'js>>,
) -> rquickjs::Result<Object<'js>> {
    let i = done.slot;
    let (status, code, version) = (done.status(), done.error_code(), done.version());
    let (shown_url, prepared_id) = {
        let http = st.http.borrow();
        let Some(p) = http.prepared(i) else {
            return Err(rquickjs::Exception::throw_internal(
                ctx,
                "no prepared request",
            ));
        };
        (p.shown_url.clone(), p.id)
    };
    let connect = done.connect;
    let timings = done.result.as_ref().map(|r| r.timings).unwrap_or_default();
    let ms_all = [
        ms(timings.duration()),
        0.0,
        ms(connect.connecting),
        ms(connect.tls_handshaking),
        ms(timings.sending),
        ms(timings.waiting),
        ms(timings.receiving),
    ];
    let (headers, body, error) = match done.result {
        Ok(r) => (r.headers, r.body, None),
        Err(e) => (volley_http::Headers::default(), None, Some(e)),
    };
    // headers, timings, request, cookies, remote_ip/port are built when first read (see
    // RawResponse); the rest are plain properties.
    let raw = RawResponse {
        timings: ms_all,
        headers,
        method: spec.req.method.clone(),
        url: shown_url.clone(),
        sent_body: spec.req.body.clone(),
        addr: done.addr,
        target: done.target,
    };
    let out = match proto {
        Some(p) => Class::instance_proto(raw, p.clone())?.into_inner(),
        None => Class::instance(ctx.clone(), raw)?.into_inner(),
    };
    let Some(f) = ctx.vu_userdata::<Fast>() else {
        return Err(rquickjs::Exception::throw_internal(ctx, "no Response keys"));
    };
    let url = {
        let mut urls = f.urls.borrow_mut();
        match urls.get(i) {
            Some(Some((pid, v))) if *pid == prepared_id => v.clone(),
            _ => {
                let v = rquickjs::String::from_str(ctx.clone(), &shown_url)?.into_value();
                // Grown on demand (most VUs repeat one or two URLs; each VU pays for this).
                if urls.len() <= i {
                    urls.resize(i + 1, None);
                }
                urls[i] = Some((prepared_id, v.clone()));
                v
            }
        }
    };
    let status = Value::new_int(ctx.clone(), status as i32);
    let (body, error, code) = match error {
        None => {
            let body = match body {
                Some(b) if spec.req.mode == BodyMode::Keep && spec.extras.binary => {
                    rquickjs::ArrayBuffer::new(ctx.clone(), b)?.into_value()
                }
                Some(b) if spec.req.mode == BodyMode::Keep => match std::str::from_utf8(&b) {
                    Ok(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
                    Err(_) => {
                        rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(&b))?
                            .into_value()
                    }
                },
                _ => Value::new_null(ctx.clone()),
            };
            (body, f.empty.clone(), Value::new_int(ctx.clone(), 0))
        }
        Some(e) => (
            Value::new_null(ctx.clone()),
            rquickjs::String::from_str(ctx.clone(), &e.to_string())?.into_value(),
            Value::new_int(ctx.clone(), code as i32),
        ),
    };
    let version = match version {
        Some(HTTP11) => f.http11.clone(),
        Some(v) => rquickjs::String::from_str(ctx.clone(), v)?.into_value(),
        None => f.empty.clone(),
    };
    f.fill(
        ctx,
        &out,
        proto,
        [&url, &version, &status, &body, &error, &code],
    )?;
    Ok(out)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_are_canonical() {
        assert_eq!(canonical("content-type"), "Content-Type");
        assert_eq!(canonical("X-REQUEST-ID"), "X-Request-Id");
    }
}
