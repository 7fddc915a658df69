// k6/html on a literal document: selections, traversal, each/map, forms, Elements, errors.
// Every check must pass (crates/js/tests/html.rs); the last iteration throws on a bad selector.
import { parseHTML } from "k6/html";
import { check } from "k6";

export const options = { vus: 1, iterations: 3 };

const PAGE = `<!DOCTYPE html>
<html lang="en"><head><title>Shop &amp; more</title></head>
<body>
  <ul id="items" data-page-size="25" data-flags='{"a":1}' data-open="true">
    <li class="item first" data-id="1">Apple</li>
    <!-- a comment -->
    <li class="item">Banana <b>ripe</b></li>
    <li class="item last sale">Cherry</li>
  </ul>
  <p id="empty"></p>
  <form id="login" method="post" action="/login?next=1">
    <input type="hidden" name="csrf_token" value="tok-123">
    <input type="text" name="user" value="ann">
    <input type="password" name="pass">
    <input type="checkbox" name="remember" checked>
    <input type="checkbox" name="newsletter" value="yes">
    <input type="radio" name="plan" value="free">
    <input type="radio" name="plan" value="pro" checked="checked">
    <input type="text" name="off" value="x" disabled>
    <select name="country"><option value="fr">France</option><option selected>Spain</option></select>
    <select name="tags" multiple><option value="a" selected>A</option><option value="b">B</option><option value="c" selected>C</option></select>
    <textarea name="bio">Hi &lt;there&gt;</textarea>
    <input type="file" name="avatar">
    <button type="submit" name="go" value="Send">Send</button>
  </form>
  <a href="/a">A</a><a href="b.html" class="rel">B</a>
</body></html>`;

export default function () {
  const doc = parseHTML(PAGE);
  if (__ITER === 2) {
    doc.find("li[class="); // an invalid selector: the iteration fails
    return;
  }
  const items = doc.find("li.item");
  const texts = [];
  items.each((i, el) => texts.push(`${i}:${el.nodeName()}:${el.textContent()}`));
  let badMsg = "";
  try {
    doc.find("li:::x");
  } catch (e) {
    badMsg = `${e.name}: ${e.message}`;
  }
  const form = doc.find("form#login");
  const obj = form.serializeObject();
  const first = items.get(0);
  const attrs = first.attributes();
  check(doc, {
    "find counts": () => items.size() === 3 && doc.find("nope").size() === 0,
    "text of all matched": () => items.text() === "AppleBanana ripeCherry",
    "title entity decoded": () => doc.find("title").text() === "Shop & more",
    "attr and default": () =>
      items.first().attr("data-id") === "1" &&
      items.eq(1).attr("data-id") === undefined &&
      items.eq(1).attr("data-id", "none") === "none" &&
      doc.find("nope").attr("x", 7) === 7,
    "csrf flow": () => doc.find('input[name="csrf_token"]').first().attr("value") === "tok-123",
    "first/last/eq(-1)": () =>
      items.last().text() === "Cherry" && items.eq(-1).text() === "Cherry" && items.eq(5).size() === 0,
    "html() is inner html": () => items.eq(1).html() === "Banana <b>ripe</b>" && doc.find("nope").html() === undefined,
    "each gives Elements in order": () => texts.join("|") === "0:li:Apple|1:li:Banana ripe|2:li:Cherry",
    "map gives Selections": () => items.map((i, s) => s.text().toUpperCase() + i).join(",") === "APPLE0,BANANA RIPE1,CHERRY2",
    "filter by selector and fn": () =>
      items.filter(".sale").text() === "Cherry" && items.filter((i, s) => i > 0).size() === 2,
    "not/is/has": () =>
      items.not(".first").size() === 2 &&
      items.is(".last") &&
      !items.is("div") &&
      items.has("b").text() === "Banana ripe",
    "children/parent/parents": () =>
      doc.find("#items").children().size() === 3 &&
      doc.find("#items").children(".last").size() === 1 &&
      items.parent().attr("id") === "items" &&
      items.first().parents().map((i, s) => s.get(0).nodeName()).join(",") === "ul,body,html",
    "next/nextAll/prev/prevAll/siblings": () =>
      items.first().next().text() === "Banana ripe" &&
      items.first().nextAll().size() === 2 &&
      items.first().nextAll(".sale").size() === 1 &&
      items.last().prev().text() === "Banana ripe" &&
      items.last().prevAll().size() === 2 &&
      items.eq(1).siblings().size() === 2,
    "closest and contents": () =>
      doc.find("b").closest("ul").attr("id") === "items" &&
      doc.find("#items").contents().size() === 9 &&
      doc.find("#items").contents().filter((i, s) => s.get(0).nodeType() === 8).size() === 1,
    "slice/index/toArray": () =>
      items.slice(1).size() === 2 &&
      items.slice(0, 1).text() === "Apple" &&
      items.last().index() === 2 &&
      items.toArray()[1].text() === "Banana ripe",
    "nextUntil/parentsUntil": () =>
      items.first().nextUntil(".last").size() === 1 && doc.find("b").parentsUntil("body").size() === 2,
    "data()": () => {
      const d = doc.find("#items").data();
      return (
        doc.find("#items").data("pageSize") === 25 &&
        d.open === true &&
        d.flags.a === 1 &&
        items.first().data("id") === 1 &&
        doc.find("title").data() === undefined
      );
    },
    "Element basics": () =>
      first.nodeType() === 1 &&
      first.id() === "" &&
      doc.find("ul").get(0).id() === "items" &&
      first.className() === "item first" &&
      first.classList().join("|") === "item|first" &&
      first.hasAttribute("data-id") &&
      !first.hasAttribute("nope") &&
      first.getAttribute("nope") === undefined &&
      attrs["data-id"].value === "1" &&
      first.innerHTML() === "Apple" &&
      first.parentElement().id() === "items" &&
      first.nextElementSibling().textContent() === "Banana ripe" &&
      first.nextSibling().nodeType() === 3 &&
      doc.find("ul").get(0).childElementCount() === 3 &&
      doc.find("ul").get(0).querySelectorAll("li").length === 3 &&
      doc.find("ul").get(0).contains(first) &&
      first.matches(".first") &&
      items.get(1).isSameNode(items.get(1)) &&
      items.get(9) === undefined &&
      doc.find("html").get(0).lang() === "en",
    "val() by element kind": () =>
      doc.find("[name=user]").val() === "ann" &&
      doc.find("[name=pass]").val() === "" &&
      doc.find("[name=remember]").val() === "on" &&
      doc.find("[name=country]").val() === "Spain" &&
      doc.find("[name=tags]").val().join(",") === "a,c" &&
      doc.find("textarea").val() === "Hi &lt;there&gt;" &&
      doc.find("li").val() === undefined,
    "serializeObject of a form": () =>
      JSON.stringify(obj) ===
      JSON.stringify({
        csrf_token: "tok-123",
        user: "ann",
        pass: "",
        remember: "on",
        plan: "pro",
        country: "Spain",
        tags: ["a", "c"],
        bio: "Hi &lt;there&gt;",
      }),
    "serializeArray and serialize": () =>
      form.serializeArray().length === 8 &&
      form.serializeArray()[0].name === "csrf_token" &&
      form.serialize() ===
        "bio=Hi+%26lt%3Bthere%26gt%3B&country=Spain&csrf_token=tok-123&pass=&plan=pro&remember=on&tags=a&tags=c&user=ann",
    "form element accessors": () =>
      doc.find("[name=remember]").get(0).checked() &&
      !doc.find("[name=newsletter]").get(0).checked() &&
      doc.find("button").get(0).type() === "submit" &&
      doc.find("[name=user]").get(0).value() === "ann",
    "a caught bad selector names it": () => badMsg.startsWith("SyntaxError: invalid selector 'li:::x'"),
  });
}
