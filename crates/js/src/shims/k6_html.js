// The `k6/html` module: parseHTML(src) → Selection. The API is src/shims/html_api.js over the
// natives of src/modules/html.rs, made once per VU and shared with Response.html().
const V = globalThis.__volley;
const H = V.htmlCache || (V.htmlCache = V.htmlApi(V));
export const parseHTML = H.parseHTML;
export default { parseHTML };
