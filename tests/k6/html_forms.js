// Response.html(), submitForm() and clickLink() against the small HTML server of
// crates/js/tests/html.rs (BASE): every check must pass; the server records what it got.
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 1, iterations: 2 };

export default function () {
  const page = http.get(`${__ENV.BASE}/app/login`);
  const token = page.html().find('input[name="csrf_token"]').first().attr("value");
  // POST form: action resolved against the page URL, hidden fields and the submit button kept,
  // `fields` override, params forwarded.
  const posted = page.submitForm({
    formSelector: "#login",
    fields: { user: "bob smith", extra: "1" },
    params: { headers: { "X-Test": "form" }, tags: { name: "login" } },
  });
  const echo = posted.json();
  // GET form: the fields go in the query string (any query of the action is replaced).
  const searched = page.submitForm({ formSelector: "form.search", fields: { q: "a&b" } });
  // The first a[href] by default; a relative href with `..`.
  const linked = page.clickLink({ selector: "a.next", params: { headers: { "X-Test": "link" } } });
  const dflt = page.clickLink();
  check(page, {
    "res.html(selector)": (r) => r.html("h1").text() === "Log in" && token === "t0k",
    "submitForm POSTs to the action": () =>
      posted.status === 200 && echo.method === "POST" && echo.target === "/app/session?from=form",
    "submitForm body": () =>
      echo.body === "csrf_token=t0k&extra=1&go=Sign+in&remember=on&user=bob+smith",
    "submitForm content type and params": () =>
      echo.content_type === "application/x-www-form-urlencoded" && echo.x_test === "form",
    "GET form in the query": () =>
      searched.json().method === "GET" && searched.json().target === "/app/search?lang=en&q=a%26b",
    "clickLink follows the link": () =>
      linked.json().method === "GET" && linked.json().target === "/next/page?n=2" && linked.json().x_test === "link",
    "clickLink default a[href]": () => dflt.json().target === "/home",
    "missing form is an error": () => {
      try {
        page.submitForm({ formSelector: "#nope" });
        return false;
      } catch (e) {
        return e.message.startsWith("no form found for selector '#nope' in response 'http://");
      }
    },
  });
}
