// k6/html's Selection and Element, and Response.html/submitForm/clickLink, over the natives
// of src/modules/html.rs. Evaluated once per VU on first use (`__volley.htmlApi(V)`), so a VU
// that never parses HTML does not carry these functions. A Selection is the document (a Rust
// object freed when garbage) plus an array of node numbers.
(function (V) {
  "use strict";
  const REL = {
    children: 0,
    contents: 1,
    parent: 2,
    parents: 3,
    next: 4,
    nextAll: 5,
    prev: 6,
    prevAll: 7,
    siblings: 8,
    closest: 9,
    parentsUntil: 10,
    nextUntil: 11,
    prevUntil: 12,
  };
  const opt = (v) => (v === undefined || v === null ? null : String(v));
  const isFn = (f) => typeof f === "function";
  const typeName = (x) => (x === null ? "null" : Array.isArray(x) ? "array" : typeof x);

  class Selection {
    constructor(d, n, url) {
      this._d = d;
      this._n = n;
      this.url = url;
    }
  }
  class Element {
    constructor(d, i, url) {
      this._d = d;
      this._i = i;
      this.url = url;
    }
  }
  const sel = (s, n) => new Selection(s._d, n, s.url);
  const one = (s, i) => new Selection(s._d, [i], s.url);
  const elem = (s, i) => (i === undefined || i < 0 ? undefined : new Element(s._d, i, s.url));
  const union = (a, b) => {
    const seen = new Set(a);
    const out = a.slice();
    for (const x of b) if (!seen.has(x)) seen.add(x), out.push(x);
    return out;
  };

  // The nodes of a Selection or Element argument (of the same document), or null.
  function nodesOf(s, x) {
    if (x instanceof Selection) return x._d === s._d ? x._n : [];
    if (x instanceof Element) return x._d === s._d ? [x._i] : [];
    return null;
  }
  function bad(x) {
    return new TypeError(`Invalid argument: Cannot use a ${typeName(x)} as a selector`);
  }
  function contains(s, a, b) {
    return V.htmlContains(s._d, a, b);
  }
  function matcher(s, fn) {
    return (i, idx) => !!fn.call(undefined, idx, one(s, i));
  }
  function rel(s, kind, filter, until) {
    return sel(s, V.htmlRel(s._d, s._n, kind, opt(filter), opt(until)));
  }
  // parentsUntil/nextUntil/prevUntil: `until` is a selector, a Selection or nothing.
  function relUntil(s, kind, until, filter) {
    if (until === undefined || until === null || typeof until === "string") {
      return rel(s, kind, filter, until);
    }
    const stop = nodesOf(s, until);
    if (stop === null) throw bad(until);
    const all = kind === REL.parentsUntil ? REL.parents : kind === REL.nextUntil ? REL.nextAll : REL.prevAll;
    let out = [];
    for (const n of s._n) {
      const list = [];
      for (const x of V.htmlRel(s._d, [n], all, null, null)) {
        if (stop.indexOf(x) >= 0) break;
        list.push(x);
      }
      out = union(out, list);
    }
    return sel(s, filter === undefined || filter === null ? out : V.htmlFilter(s._d, out, String(filter), true));
  }
  function nodeName(s) {
    if (s._n.length === 0) return "";
    return V.htmlInfo(s._d, s._n[0])[1];
  }
  function valueOrHTML(s) {
    const v = s.attr("value");
    if (v !== undefined) return v;
    const h = s.html();
    return h === undefined ? "" : h;
  }

  Object.assign(Selection.prototype, {
    find(x) {
      if (typeof x === "string") return sel(this, V.htmlFind(this._d, this._n, x));
      const other = nodesOf(this, x);
      if (other === null) throw bad(x);
      return sel(
        this,
        other.filter((o) => this._n.some((n) => contains(this, n, o)))
      );
    },
    add(x) {
      if (typeof x === "string") return sel(this, union(this._n, V.htmlFind(this._d, [0], x)));
      const other = nodesOf(this, x);
      if (other === null) throw bad(x);
      return sel(this, union(this._n, other));
    },
    closest(x) {
      if (typeof x === "string") return rel(this, REL.closest, x);
      const other = nodesOf(this, x);
      if (other === null) throw bad(x);
      const out = [];
      for (let n of this._n) {
        for (let k = 0; n >= 0 && k < 100000; k++) {
          if (other.indexOf(n) >= 0) {
            if (out.indexOf(n) < 0) out.push(n);
            break;
          }
          n = V.htmlInfo(this._d, n)[4];
        }
      }
      return sel(this, out);
    },
    has(x) {
      if (typeof x === "string") return sel(this, V.htmlHas(this._d, this._n, x));
      const other = nodesOf(this, x);
      if (other === null) throw bad(x);
      return sel(
        this,
        this._n.filter((n) => other.some((o) => contains(this, n, o)))
      );
    },
    not(x) {
      if (isFn(x)) {
        const m = matcher(this, x);
        return sel(this, this._n.filter((n, i) => !m(n, i)));
      }
      if (typeof x === "string") return sel(this, V.htmlFilter(this._d, this._n, x, false));
      const other = nodesOf(this, x);
      if (other === null) throw bad(x);
      return sel(this, this._n.filter((n) => other.indexOf(n) < 0));
    },
    filter(x) {
      if (typeof x === "string") return sel(this, V.htmlFilter(this._d, this._n, x, true));
      if (x instanceof Selection) return sel(this, this._n.filter((n) => nodesOf(this, x).indexOf(n) >= 0));
      if (!isFn(x)) throw new TypeError("Argument to filter() must be a function, a selector or a selection");
      const m = matcher(this, x);
      return sel(this, this._n.filter((n, i) => m(n, i)));
    },
    is(x) {
      if (typeof x === "string") return V.htmlFilter(this._d, this._n, x, true).length > 0;
      if (x instanceof Selection) return this._n.some((n) => nodesOf(this, x).indexOf(n) >= 0);
      if (!isFn(x)) throw new TypeError("Argument to is() must be a function, a selector or a selection");
      const m = matcher(this, x);
      return this._n.some((n, i) => m(n, i));
    },
    children(f) {
      return rel(this, REL.children, f);
    },
    contents() {
      return rel(this, REL.contents);
    },
    parent(f) {
      return rel(this, REL.parent, f);
    },
    parents(f) {
      return rel(this, REL.parents, f);
    },
    next(f) {
      return rel(this, REL.next, f);
    },
    nextAll(f) {
      return rel(this, REL.nextAll, f);
    },
    prev(f) {
      return rel(this, REL.prev, f);
    },
    prevAll(f) {
      return rel(this, REL.prevAll, f);
    },
    siblings(f) {
      return rel(this, REL.siblings, f);
    },
    parentsUntil(until, f) {
      return relUntil(this, REL.parentsUntil, until, f);
    },
    nextUntil(until, f) {
      return relUntil(this, REL.nextUntil, until, f);
    },
    prevUntil(until, f) {
      return relUntil(this, REL.prevUntil, until, f);
    },
    size() {
      return this._n.length;
    },
    first() {
      return sel(this, this._n.slice(0, 1));
    },
    last() {
      return sel(this, this._n.slice(-1));
    },
    eq(i) {
      i = Math.trunc(Number(i)) || 0;
      if (i < 0) i += this._n.length;
      return sel(this, i >= 0 && i < this._n.length ? [this._n[i]] : []);
    },
    slice(start, end) {
      return sel(this, this._n.slice(start, end === undefined ? this._n.length : end));
    },
    get(i) {
      if (i === undefined) return this._n.map((n) => elem(this, n));
      i = Math.trunc(Number(i)) || 0;
      const len = this._n.length;
      if (!(i < len && i > -len)) return undefined;
      return elem(this, this._n[i < 0 ? i + len : i]);
    },
    toArray() {
      return this._n.map((n) => one(this, n));
    },
    index(x) {
      if (this._n.length === 0) return -1;
      if (x === undefined) return V.htmlInfo(this._d, this._n[0])[3];
      if (typeof x === "string") return V.htmlFind(this._d, [0], x).indexOf(this._n[0]);
      if (x instanceof Selection) return x._n.length === 0 ? -1 : this._n.indexOf(x._n[0]);
      if (x instanceof Element) return this._n.indexOf(x._i);
      return -1;
    },
    each(fn) {
      if (!isFn(fn)) throw new TypeError("Argument to each() must be a function.");
      const n = this._n;
      for (let i = 0; i < n.length; i++) fn.call(undefined, i, elem(this, n[i]));
      return this;
    },
    map(fn) {
      if (!isFn(fn)) throw new TypeError("Argument to map() must be a function");
      return this._n.map((n, i) => fn.call(undefined, i, one(this, n)));
    },
    text() {
      return V.htmlText(this._d, this._n);
    },
    html() {
      return this._n.length === 0 ? undefined : V.htmlInner(this._d, this._n[0]);
    },
    attr(name, def) {
      const v = this._n.length === 0 ? undefined : V.htmlAttr(this._d, this._n[0], String(name));
      return v === undefined && arguments.length > 1 ? def : v;
    },
    val() {
      switch (nodeName(this)) {
        case "input": {
          const v = this.attr("value");
          if (v !== undefined) return v;
          const t = this.attr("type");
          return t === "radio" || t === "checkbox" ? "on" : "";
        }
        case "button":
          return this.attr("value", "");
        case "textarea":
          return this.html();
        case "option":
          return valueOrHTML(this);
        case "select": {
          const selected = this.first().find("option[selected]");
          if (this.attr("multiple") !== undefined) return selected.map((_, o) => valueOrHTML(o));
          return valueOrHTML(selected);
        }
        default:
          return undefined;
      }
    },
    data(key) {
      if (this._n.length === 0) return undefined;
      const flat = V.htmlAttrs(this._d, this._n[0]);
      if (flat.length === 0) return undefined;
      if (key !== undefined) {
        const v = this.attr("data-" + propertyToAttr(String(key)));
        return v === undefined ? undefined : dataValue(v);
      }
      const out = {};
      for (let i = 0; i < flat.length; i += 2) {
        if (flat[i].startsWith("data-") && flat[i].length > 5) {
          out[attrToProperty(flat[i].slice(5))] = dataValue(flat[i + 1]);
        }
      }
      return out;
    },
    serializeArray() {
      const submittable = "input,select,textarea,keygen";
      const els = this.is("form") ? this.find(submittable) : this.filter(submittable);
      const out = [];
      for (const n of els._n) {
        const s = one(this, n);
        const name = s.attr("name", "");
        const type = s.attr("type", "");
        if (
          name === "" ||
          s.attr("disabled") !== undefined ||
          ["submit", "button", "reset", "image", "file"].indexOf(type) >= 0 ||
          ((type === "checkbox" || type === "radio") && s.attr("checked") === undefined)
        ) {
          continue;
        }
        out.push({ name, value: s.val() });
      }
      return out;
    },
    serializeObject() {
      const out = {};
      for (const fv of this.serializeArray()) out[fv.name] = fv.value;
      return out;
    },
    serialize() {
      return encodeValues(this.serializeObject());
    },
  });

  // Go's url.Values.Encode: keys sorted, QueryEscape (space as '+'), arrays repeated.
  function goEscape(s) {
    return encodeURIComponent(s)
      .replace(/%20/g, "+")
      .replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  }
  function encodeValues(obj) {
    const parts = [];
    for (const k of Object.keys(obj).sort()) {
      const v = obj[k];
      const list = Array.isArray(v) ? v : [v];
      for (const x of list) parts.push(goEscape(k) + "=" + goEscape(x === undefined || x === null ? "" : String(x)));
    }
    return parts.join("&");
  }
  function propertyToAttr(p) {
    return p.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
  }
  function attrToProperty(a) {
    return a.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  }
  // k6's conversion of data-* values: JSON objects/arrays, booleans, numbers, else the string.
  function dataValue(v) {
    if (v.length === 0) return v;
    if (v[0] === "{" || v[0] === "[") {
      try {
        return JSON.parse(v);
      } catch (e) {
        return v;
      }
    }
    if (v === "true") return true;
    if (v === "false") return false;
    if (v === "null" || v === "undefined") return undefined;
    const f = Number(v);
    return v.trim() !== "" && !Number.isNaN(f) ? f : v;
  }

  // Element: k6's API is methods (`el.nodeName()`, `el.id()`), as in k6.
  const info = (e) => V.htmlInfo(e._d, e._i);
  const esel = (e) => new Selection(e._d, [e._i], e.url);
  const elems = (e, list) => list.map((n) => new Element(e._d, n, e.url));
  const childNodes = (e) => V.htmlRel(e._d, [e._i], REL.contents, null, null);
  function siblingNode(e, delta) {
    const p = info(e)[4];
    if (p < 0) return undefined;
    const kids = V.htmlRel(e._d, [p], REL.contents, null, null);
    return elem(e, kids[kids.indexOf(e._i) + delta]);
  }
  function attrURL(e, name) {
    const v = e.getAttribute(name);
    if (v === undefined) return "";
    return e.url ? V.htmlResolve(e.url, v) : v;
  }
  const present = (name) =>
    function () {
      return this.getAttribute(name) !== undefined;
    };
  Object.assign(Element.prototype, {
    selection() {
      return esel(this);
    },
    nodeName() {
      return nodeName(esel(this));
    },
    nodeType() {
      return info(this)[0];
    },
    nodeValue() {
      const v = info(this)[2];
      return v === null ? undefined : v;
    },
    id() {
      return this.getAttribute("id") || "";
    },
    innerHTML() {
      return esel(this).html();
    },
    textContent() {
      return esel(this).text();
    },
    ownerDocument() {
      return new Element(this._d, 0, this.url);
    },
    attributes() {
      const flat = V.htmlAttrs(this._d, this._i);
      const out = {};
      for (let i = 0; i < flat.length; i += 2) out[flat[i]] = new Attribute(this, flat[i], flat[i + 1]);
      return out;
    },
    getAttribute(name) {
      return V.htmlAttr(this._d, this._i, String(name));
    },
    getAttributeNode(name) {
      const v = this.getAttribute(name);
      return v === undefined ? undefined : new Attribute(this, String(name), v);
    },
    hasAttribute(name) {
      return this.getAttribute(name) !== undefined;
    },
    hasAttributes() {
      return V.htmlAttrs(this._d, this._i).length > 0;
    },
    hasChildNodes() {
      return info(this)[5];
    },
    firstChild() {
      return elem(this, childNodes(this)[0]);
    },
    lastChild() {
      const c = childNodes(this);
      return elem(this, c[c.length - 1]);
    },
    firstElementChild() {
      return elem(this, V.htmlRel(this._d, [this._i], REL.children, null, null)[0]);
    },
    lastElementChild() {
      const c = V.htmlRel(this._d, [this._i], REL.children, null, null);
      return elem(this, c[c.length - 1]);
    },
    childElementCount() {
      return V.htmlRel(this._d, [this._i], REL.children, null, null).length;
    },
    childNodes() {
      return elems(this, childNodes(this));
    },
    children() {
      return elems(this, V.htmlRel(this._d, [this._i], REL.children, null, null));
    },
    previousSibling() {
      return siblingNode(this, -1);
    },
    nextSibling() {
      return siblingNode(this, 1);
    },
    previousElementSibling() {
      return elem(this, V.htmlRel(this._d, [this._i], REL.prev, null, null)[0]);
    },
    nextElementSibling() {
      return elem(this, V.htmlRel(this._d, [this._i], REL.next, null, null)[0]);
    },
    parentNode() {
      return elem(this, info(this)[4]);
    },
    parentElement() {
      const p = info(this)[4];
      return p >= 0 && V.htmlInfo(this._d, p)[0] === 1 ? elem(this, p) : undefined;
    },
    classList() {
      const c = this.getAttribute("class");
      return c === undefined ? [] : c.split(/\s+/).filter((x) => x !== "");
    },
    className() {
      return this.getAttribute("class");
    },
    lang() {
      return this.getAttribute("lang");
    },
    namespaceURI() {
      return "http://www.w3.org/1999/xhtml";
    },
    isDefaultNamespace() {
      return true;
    },
    toString() {
      const t = info(this)[0];
      return t === 1 ? "[object html.Node]" : `[object ${this.nodeName()}]`;
    },
    isSameNode(o) {
      return o instanceof Element && o._d === this._d && o._i === this._i;
    },
    isEqualNode(o) {
      return o instanceof Element && esel(o).html() === esel(this).html();
    },
    contains(o) {
      return o instanceof Element && o._d === this._d && V.htmlContains(this._d, this._i, o._i);
    },
    matches(s) {
      return esel(this).is(String(s));
    },
    getElementsByClassName(name) {
      return esel(this).find("." + name).get();
    },
    getElementsByTagName(name) {
      return esel(this).find(String(name)).get();
    },
    querySelector(s) {
      return esel(this).find(String(s)).get(0);
    },
    querySelectorAll(s) {
      return esel(this).find(String(s)).get();
    },
    // The form-element accessors k6 generates per tag (value, checked, href...).
    value() {
      const v = esel(this).val();
      return v === undefined ? this.getAttribute("value") : v;
    },
    name() {
      return this.getAttribute("name") || "";
    },
    type() {
      const t = this.getAttribute("type");
      if (t !== undefined) return t.toLowerCase();
      const n = this.nodeName();
      return n === "button" ? "submit" : n === "input" ? "text" : "";
    },
    checked: present("checked"),
    selected: present("selected"),
    disabled: present("disabled"),
    multiple: present("multiple"),
    required: present("required"),
    readOnly: present("readonly"),
    autofocus: present("autofocus"),
    href() {
      return attrURL(this, "href");
    },
    src() {
      return attrURL(this, "src");
    },
    action() {
      return attrURL(this, "action");
    },
    method() {
      const m = (this.getAttribute("method") || "").toLowerCase();
      return m === "post" ? "post" : "get";
    },
    text() {
      return this.textContent();
    },
    form() {
      const f = esel(this).closest("form");
      return f.size() > 0 ? f.get(0) : undefined;
    },
  });

  class Attribute {
    constructor(owner, name, value) {
      this.owner_element = owner;
      this.name = name;
      this.value = value;
    }
    prefix() {
      return "";
    }
    namespaceURI() {
      return "";
    }
    localName() {
      return this.name;
    }
  }

  function parseHTML(src, url) {
    return new Selection(V.htmlParse(src), [0], url === undefined ? "" : url);
  }

  // Response.html(selector?)
  function response(res, selector) {
    const body = res.body;
    if (body === null || body === undefined) {
      throw new Error(
        "the body is null so we can't transform it to HTML - this likely was because of a request error getting the response"
      );
    }
    const text = typeof body === "string" ? body : V.b64dec(V.b64enc(body), "std", true);
    const s = parseHTML(text, res.url);
    return selector === undefined ? s : s.find(selector);
  }

  function withContentType(params) {
    const p = Object.assign({}, params);
    const h = Object.assign({}, p.headers);
    if (!Object.keys(h).some((k) => k.toLowerCase() === "content-type")) {
      h["Content-Type"] = "application/x-www-form-urlencoded";
    }
    p.headers = h;
    return p;
  }

  // Response.submitForm({formSelector, fields, submitSelector, params}), as k6 builds it.
  function submitForm(res, args, request) {
    let formSelector = "form";
    let submitSelector = '[type="submit"]';
    let fields = null;
    let params = null;
    if (args !== undefined && args !== null) {
      if (args.formSelector !== undefined) formSelector = String(args.formSelector);
      if (args.submitSelector !== undefined) submitSelector = String(args.submitSelector);
      if (args.fields !== null && typeof args.fields === "object") fields = args.fields;
      if (args.params !== undefined) params = args.params;
    }
    const form = response(res, formSelector);
    if (form.size() === 0) throw new Error(`no form found for selector '${formSelector}' in response '${res.url}'`);
    const m = form.attr("method");
    const method = m === undefined ? "GET" : m.toUpperCase();
    const action = form.attr("action");
    let url = action === undefined ? res.url : V.htmlResolve(res.url, action);
    const values = form.serializeObject();
    const submit = form.find(submitSelector);
    const sn = submit.attr("name");
    const sv = submit.val();
    if (sn !== undefined && sv !== undefined) values[sn] = sv;
    if (fields !== null) for (const k of Object.keys(fields)) values[k] = fields[k];
    const encoded = encodeValues(values);
    if (method === "GET") {
      const hash = url.indexOf("#");
      const frag = hash >= 0 ? url.slice(hash) : "";
      url = url.slice(0, hash >= 0 ? hash : url.length).split("?")[0];
      return request("GET", url + (encoded === "" ? "" : "?" + encoded) + frag, null, params);
    }
    return request(method, url, encoded, withContentType(params));
  }

  // Response.clickLink({selector, params}): a GET of the link's href.
  function clickLink(res, args, request) {
    let selector = "a[href]";
    let params = null;
    if (args !== undefined && args !== null) {
      if (args.selector !== undefined) selector = String(args.selector);
      if (args.params !== undefined) params = args.params;
    }
    const link = response(res, selector);
    if (link.size() === 0) throw new Error(`no element found for selector '${selector}' in response '${res.url}'`);
    const href = link.attr("href");
    if (href === undefined) {
      throw new Error(`no valid href attribute value found on element '${selector}' in response '${res.url}'`);
    }
    return request("GET", V.htmlResolve(res.url, href), null, params);
  }

  return { parseHTML: (src) => parseHTML(String(src)), Selection, Element, response, submitForm, clickLink };
})
