//! Natives of `k6/html` (`parseHTML`, `Selection`, `Element`) and of `Response.html()`,
//! `submitForm()`, `clickLink()`.
//!
//! A parsed document stays in Rust: [`HtmlDoc`] is a JS class instance owning the
//! `scraper::Html` tree, and a JS `Selection` is that object plus an array of node numbers
//! (arena indices). When the last Selection or Element of a document is garbage, QuickJS
//! frees the `HtmlDoc` and with it the tree, so nothing outlives the iteration that parsed it
//! unless the script keeps it. Traversal and matching run here; the JS side
//! (`shims/html_api.js`) only shapes k6's API over these natives.
//!
//! That JS side is evaluated lazily, once per VU, by `__volley.htmlApi()` (the first
//! `parseHTML` import or `res.html()` call): a VU that never touches HTML pays nothing for it.

use super::throw;
use ego_tree::{NodeId, NodeRef};
use rquickjs::class::{JsClass, Readable, Trace, Tracer};
use rquickjs::{Class, Ctx, Function, Object, Value};
use scraper::{ElementRef, Html, Node, Selector};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The JS half, evaluated on first use: `(function (V) { ... return api; })`.
/// Compiled once, its code shared by a runtime's VUs. Named after the module: error
/// positions skip built-in frames (script.rs).
static API: crate::vu::SharedScript = crate::vu::SharedScript::new(
    c"volley:html_api",
    c"k6/html",
    include_str!("../shims/html_api.js"),
);

/// Compiled selectors kept per VU (scripts use a handful, over and over).
const SELECTOR_CACHE: usize = 128;

/// One parsed document, owned by a JS object (see the module docs).
pub(crate) struct HtmlDoc {
    html: Html,
    /// Arena index → node id (the arena order, hence sorted: `NodeId` orders by index).
    ids: Vec<NodeId>,
}

// SAFETY: no JS values inside; the lifetime is only renamed.
unsafe impl<'js> rquickjs::JsLifetime<'js> for HtmlDoc {
    type Changed<'to> = HtmlDoc;
}

impl<'js> Trace<'js> for HtmlDoc {
    fn trace<'a>(&self, _tracer: Tracer<'a, 'js>) {}
}

impl<'js> JsClass<'js> for HtmlDoc {
    const NAME: &'static str = "HtmlDocument";
    type Mutable = Readable;

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

type N<'a> = NodeRef<'a, Node>;

impl HtmlDoc {
    fn parse(src: &str) -> HtmlDoc {
        let html = Html::parse_document(src);
        let ids = html.tree.nodes().map(|n| n.id()).collect();
        HtmlDoc { html, ids }
    }

    fn node(&self, i: u32) -> Option<N<'_>> {
        self.html.tree.get(*self.ids.get(i as usize)?)
    }

    fn index(&self, n: N<'_>) -> u32 {
        self.ids.binary_search(&n.id()).unwrap_or(0) as u32
    }

    fn nodes<'a>(&'a self, list: &'a [u32]) -> impl Iterator<Item = N<'a>> + 'a {
        list.iter().filter_map(|i| self.node(*i))
    }
}

/// Nodes in first-seen order without repeats (goquery's order for multi-node selections).
struct Out<'a> {
    doc: &'a HtmlDoc,
    seen: std::collections::HashSet<u32>,
    list: Vec<u32>,
}

impl<'a> Out<'a> {
    fn new(doc: &'a HtmlDoc) -> Self {
        Out {
            doc,
            seen: Default::default(),
            list: Vec::new(),
        }
    }

    fn push(&mut self, n: N<'_>) {
        let i = self.doc.index(n);
        if self.seen.insert(i) {
            self.list.push(i);
        }
    }
}

fn is_match(sel: &Selector, n: N<'_>) -> bool {
    ElementRef::wrap(n).is_some_and(|e| sel.matches(&e))
}

fn matches_opt(sel: Option<&Selector>, n: N<'_>) -> bool {
    match sel {
        None => n.value().is_element(),
        Some(s) => is_match(s, n),
    }
}

/// Descendants of `nodes` matching `sel` (`:scope` is each start node).
fn find(doc: &HtmlDoc, nodes: &[u32], sel: &Selector) -> Vec<u32> {
    let mut out = Out::new(doc);
    for n in doc.nodes(nodes) {
        let scope = ElementRef::wrap(n);
        for d in n.descendants().skip(1) {
            if let Some(e) = ElementRef::wrap(d) {
                if sel.matches_with_scope(&e, scope) {
                    out.push(d);
                }
            }
        }
    }
    out.list
}

/// The relations of `Selection` (children, parents, siblings...), by number.
fn relation(
    doc: &HtmlDoc,
    nodes: &[u32],
    kind: u32,
    filter: Option<&Selector>,
    until: Option<&Selector>,
) -> Vec<u32> {
    let mut out = Out::new(doc);
    let stop = |n: N<'_>| until.is_some_and(|u| is_match(u, n));
    for n in doc.nodes(nodes) {
        match kind {
            // children
            0 => n
                .children()
                .filter(|c| matches_opt(filter, *c))
                .for_each(|c| out.push(c)),
            // contents: every child node, text and comments too
            1 => n.children().for_each(|c| out.push(c)),
            // parent
            2 => {
                if let Some(p) = n.parent().filter(|p| matches_opt(filter, *p)) {
                    out.push(p);
                }
            }
            // parents, parentsUntil
            3 | 10 => {
                for a in n.ancestors().filter(|a| a.value().is_element()) {
                    if kind == 10 && stop(a) {
                        break;
                    }
                    if matches_opt(filter, a) {
                        out.push(a);
                    }
                }
            }
            // next / prev: the nearest element sibling, if it passes the filter
            4 | 6 => {
                let mut it: Box<dyn Iterator<Item = N<'_>>> = if kind == 4 {
                    Box::new(n.next_siblings())
                } else {
                    Box::new(n.prev_siblings())
                };
                if let Some(s) = it.find(|s| s.value().is_element()) {
                    if matches_opt(filter, s) {
                        out.push(s);
                    }
                }
            }
            // nextAll / nextUntil, prevAll / prevUntil
            5 | 7 | 11 | 12 => {
                let it: Box<dyn Iterator<Item = N<'_>>> = if kind == 5 || kind == 11 {
                    Box::new(n.next_siblings())
                } else {
                    Box::new(n.prev_siblings())
                };
                for s in it.filter(|s| s.value().is_element()) {
                    if kind >= 11 && stop(s) {
                        break;
                    }
                    if matches_opt(filter, s) {
                        out.push(s);
                    }
                }
            }
            // siblings
            8 => {
                let Some(p) = n.parent() else { continue };
                for s in p.children() {
                    if s.id() != n.id() && matches_opt(filter, s) {
                        out.push(s);
                    }
                }
            }
            // closest: self or the nearest ancestor matching
            9 => {
                let Some(f) = filter else { continue };
                let mut cur = Some(n);
                while let Some(c) = cur {
                    if is_match(f, c) {
                        out.push(c);
                        break;
                    }
                    cur = c.parent();
                }
            }
            _ => {}
        }
    }
    out.list
}

/// The text of every text node under `n` (itself included), as goquery's `Text()`.
fn text_into(n: N<'_>, s: &mut String) {
    for d in n.descendants() {
        if let Node::Text(t) = d.value() {
            s.push_str(t);
        }
    }
}

fn inner_html(doc: &HtmlDoc, n: N<'_>) -> String {
    match n.value() {
        Node::Document | Node::Fragment => doc.html.html(),
        Node::Element(_) => ElementRef::wrap(n)
            .map(|e| e.inner_html())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// k6's nodeType and nodeName (lower-case tag names, `#text`, `#comment`, `#document`).
fn node_info(n: N<'_>) -> (u32, String) {
    match n.value() {
        Node::Element(e) => (1, e.name().to_string()),
        Node::Text(_) => (3, "#text".into()),
        Node::Comment(_) => (8, "#comment".into()),
        Node::Document | Node::Fragment => (9, "#document".into()),
        Node::Doctype(d) => (10, d.name().to_string()),
        Node::ProcessingInstruction(p) => (7, p.target.to_string()),
    }
}

/// `ref_` resolved against `base` (RFC 3986 section 5.2), as Go's `URL.ResolveReference`.
pub(crate) fn resolve_url(base: &str, ref_: &str) -> String {
    let r = ref_.trim();
    let has_scheme = |s: &str| {
        s.find(':').is_some_and(|i| {
            i > 0
                && s[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && s.as_bytes()[0].is_ascii_alphabetic()
        })
    };
    if has_scheme(r) {
        return r.to_string();
    }
    // Split the base: scheme, authority, path, query (the fragment is dropped).
    let base = base.split('#').next().unwrap_or("");
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let (authority, path_query) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => match rest.find('?') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        },
    };
    let (bpath, bquery) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    if let Some(rest) = r.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let (rpath_query, frag) = match r.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (r, None),
    };
    let (rpath, rquery) = match rpath_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rpath_query, None),
    };
    let (path, query) = if rpath.is_empty() {
        (bpath.to_string(), rquery.or(bquery))
    } else if rpath.starts_with('/') {
        (remove_dots(rpath), rquery)
    } else {
        let dir = match bpath.rfind('/') {
            Some(i) => &bpath[..=i],
            None => "/",
        };
        (remove_dots(&format!("{dir}{rpath}")), rquery)
    };
    let path = if path.is_empty() { "/".into() } else { path };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = frag {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    for (i, s) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match *s {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

/// Per-VU state: compiled selectors.
#[derive(Default)]
struct Selectors(RefCell<HashMap<String, Rc<Selector>>>);

impl Selectors {
    fn get(&self, ctx: &Ctx<'_>, s: &str) -> rquickjs::Result<Rc<Selector>> {
        if let Some(sel) = self.0.borrow().get(s) {
            return Ok(sel.clone());
        }
        let sel = Selector::parse(s).map_err(|e| {
            rquickjs::Exception::throw_syntax(ctx, &format!("invalid selector '{s}': {e}"))
        })?;
        let sel = Rc::new(sel);
        let mut m = self.0.borrow_mut();
        if m.len() >= SELECTOR_CACHE {
            m.clear();
        }
        m.insert(s.to_string(), sel.clone());
        Ok(sel)
    }

    fn opt(&self, ctx: &Ctx<'_>, s: &Option<String>) -> rquickjs::Result<Option<Rc<Selector>>> {
        s.as_deref().map(|s| self.get(ctx, s)).transpose()
    }
}

fn doc<'js>(ctx: &Ctx<'js>, v: &Value<'js>) -> rquickjs::Result<Class<'js, HtmlDoc>> {
    v.as_object()
        .and_then(Class::<HtmlDoc>::from_object)
        .ok_or_else(|| throw(ctx, "not an HTML document (use parseHTML or res.html())"))
}

pub(crate) fn install<'js>(ctx: &Ctx<'js>, v: &Object<'js>) -> rquickjs::Result<()> {
    crate::rt::native(
        ctx,
        v,
        "htmlApi",
        |ctx: Ctx<'js>, v: Object<'js>| -> rquickjs::Result<Value<'js>> {
            // The natives too are made on first use: a dozen functions per VU are
            // ~3 KiB, 15 MB at 5,000 VUs that never parse HTML.
            install_natives(&ctx, &v)?;
            let f: Function = API.eval(&ctx)?;
            f.call((v,))
        },
    )
}

/// The natives behind `shims/html_api.js`, defined on `v` (`__volley`).
fn install_natives<'js>(ctx: &Ctx<'js>, v: &Object<'js>) -> rquickjs::Result<()> {
    let sels: Rc<Selectors> = Rc::default();
    v.set(
        "htmlParse",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, src: rquickjs::Coerced<String>| {
                Class::instance(ctx, HtmlDoc::parse(&src.0))
            },
        )?,
    )?;
    {
        let sels = sels.clone();
        v.set(
            "htmlFind",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, d: Value<'js>, nodes: Vec<u32>, sel: String| {
                    let d = doc(&ctx, &d)?;
                    let s = sels.get(&ctx, &sel)?;
                    let r = find(&d.borrow(), &nodes, &s);
                    Ok::<_, rquickjs::Error>(r)
                },
            )?,
        )?;
    }
    {
        let sels = sels.clone();
        // The nodes that match (keep = true) or do not (keep = false).
        v.set(
            "htmlFilter",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, d: Value<'js>, nodes: Vec<u32>, sel: String, keep: bool| {
                    let d = doc(&ctx, &d)?;
                    let s = sels.get(&ctx, &sel)?;
                    let d = d.borrow();
                    let r: Vec<u32> = nodes
                        .into_iter()
                        .filter(|i| d.node(*i).is_some_and(|n| is_match(&s, n) == keep))
                        .collect();
                    Ok::<_, rquickjs::Error>(r)
                },
            )?,
        )?;
    }
    {
        let sels = sels.clone();
        // The nodes with a descendant matching `sel` (Selection.has).
        v.set(
            "htmlHas",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, d: Value<'js>, nodes: Vec<u32>, sel: String| {
                    let d = doc(&ctx, &d)?;
                    let s = sels.get(&ctx, &sel)?;
                    let d = d.borrow();
                    let r: Vec<u32> = nodes
                        .into_iter()
                        .filter(|i| {
                            d.node(*i)
                                .is_some_and(|n| n.descendants().skip(1).any(|c| is_match(&s, c)))
                        })
                        .collect();
                    Ok::<_, rquickjs::Error>(r)
                },
            )?,
        )?;
    }
    {
        let sels = sels.clone();
        v.set(
            "htmlRel",
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>,
                      d: Value<'js>,
                      nodes: Vec<u32>,
                      kind: u32,
                      filter: Option<String>,
                      until: Option<String>| {
                    let d = doc(&ctx, &d)?;
                    let f = sels.opt(&ctx, &filter)?;
                    let u = sels.opt(&ctx, &until)?;
                    let r = relation(&d.borrow(), &nodes, kind, f.as_deref(), u.as_deref());
                    Ok::<_, rquickjs::Error>(r)
                },
            )?,
        )?;
    }
    v.set(
        "htmlText",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, d: Value<'js>, nodes: Vec<u32>| {
                let d = doc(&ctx, &d)?;
                let d = d.borrow();
                let mut s = String::new();
                d.nodes(&nodes).for_each(|n| text_into(n, &mut s));
                Ok::<_, rquickjs::Error>(s)
            },
        )?,
    )?;
    v.set(
        "htmlInner",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, d: Value<'js>, i: u32| {
            let d = doc(&ctx, &d)?;
            let d = d.borrow();
            Ok::<_, rquickjs::Error>(d.node(i).map(|n| inner_html(&d, n)))
        })?,
    )?;
    v.set(
        "htmlAttr",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, d: Value<'js>, i: u32, name: String| {
                let d = doc(&ctx, &d)?;
                let d = d.borrow();
                let v = d
                    .node(i)
                    .and_then(|n| n.value().as_element()?.attr(&name).map(str::to_string));
                Ok::<_, rquickjs::Error>(v)
            },
        )?,
    )?;
    v.set(
        "htmlAttrs",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, d: Value<'js>, i: u32| {
            let d = doc(&ctx, &d)?;
            let d = d.borrow();
            let mut flat = Vec::new();
            if let Some(e) = d.node(i).and_then(|n| n.value().as_element()) {
                for (k, v) in e.attrs() {
                    flat.push(k.to_string());
                    flat.push(v.to_string());
                }
            }
            Ok::<_, rquickjs::Error>(flat)
        })?,
    )?;
    // [nodeType, nodeName, nodeValue (text and comments), index among element siblings,
    //  parent node or -1, has child nodes]
    v.set(
        "htmlInfo",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, d: Value<'js>, i: u32| -> rquickjs::Result<Value<'js>> {
                let dc = doc(&ctx, &d)?;
                let d = dc.borrow();
                let Some(n) = d.node(i) else {
                    return Ok(Value::new_undefined(ctx));
                };
                let (t, name) = node_info(n);
                let a = rquickjs::Array::new(ctx.clone())?;
                a.set(0, t)?;
                a.set(1, name)?;
                let value = match n.value() {
                    Node::Text(t) => Some(t.to_string()),
                    Node::Comment(c) => Some(c.to_string()),
                    _ => None,
                };
                a.set(2, value)?;
                let idx = n.prev_siblings().filter(|s| s.value().is_element()).count();
                a.set(3, idx as i64)?;
                a.set(4, n.parent().map_or(-1, |p| d.index(p) as i64))?;
                a.set(5, n.has_children())?;
                Ok(a.into_value())
            },
        )?,
    )?;
    // Whether `b` is a strict descendant of `a`.
    v.set(
        "htmlContains",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, d: Value<'js>, a: u32, b: u32| {
                let d = doc(&ctx, &d)?;
                let d = d.borrow();
                let r = match (d.node(a), d.node(b)) {
                    (Some(a), Some(b)) => b.ancestors().any(|x| x.id() == a.id()),
                    _ => false,
                };
                Ok::<_, rquickjs::Error>(r)
            },
        )?,
    )?;
    v.set(
        "htmlResolve",
        Function::new(ctx.clone(), |base: String, r: String| {
            resolve_url(&base, &r)
        })?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_resolve_as_go_does() {
        let b = "http://h:1/a/b/c?q=1";
        assert_eq!(resolve_url(b, "/x"), "http://h:1/x");
        assert_eq!(resolve_url(b, "x?y=2"), "http://h:1/a/b/x?y=2");
        assert_eq!(resolve_url(b, "../x"), "http://h:1/a/x");
        assert_eq!(resolve_url(b, "./"), "http://h:1/a/b/");
        assert_eq!(resolve_url(b, ""), "http://h:1/a/b/c?q=1");
        assert_eq!(resolve_url(b, "?z=3"), "http://h:1/a/b/c?z=3");
        assert_eq!(resolve_url(b, "#f"), "http://h:1/a/b/c?q=1#f");
        assert_eq!(resolve_url(b, "//o/p"), "http://o/p");
        assert_eq!(resolve_url(b, "https://e.x/p"), "https://e.x/p");
        assert_eq!(resolve_url("http://h", "p"), "http://h/p");
        assert_eq!(resolve_url(b, "../../../../x"), "http://h:1/x");
    }

    #[test]
    fn relations_and_find_follow_the_tree() {
        let d = HtmlDoc::parse(
            "<ul id=l><li class=a>1</li><!--c--><li class=b>2</li><li class=a>3</li></ul>",
        );
        let li = Selector::parse("li").unwrap();
        let all = find(&d, &[0], &li);
        assert_eq!(all.len(), 3);
        let a = Selector::parse(".a").unwrap();
        // next of the first li skips the comment; nextAll filtered by .a
        let next = relation(&d, &all[..1], 4, None, None);
        assert_eq!(next, vec![all[1]]);
        assert_eq!(relation(&d, &all[..1], 5, Some(&a), None), vec![all[2]]);
        let ul = relation(&d, &all, 2, None, None);
        assert_eq!(ul.len(), 1, "parents are deduplicated");
        assert_eq!(
            relation(&d, &ul, 1, None, None).len(),
            4,
            "contents has the comment"
        );
        let mut s = String::new();
        d.nodes(&all).for_each(|n| text_into(n, &mut s));
        assert_eq!(s, "123");
        assert!(Selector::parse("li[").is_err());
    }
}
