// k6/experimental/fs and k6/experimental/csv over small files (crates/js/tests/modules.rs).
import { check } from "k6";
import { Counter } from "k6/metrics";
import { open, SeekMode } from "k6/experimental/fs";
import csv from "k6/experimental/csv";
import exec from "k6/execution";

export const options = { vus: 2, iterations: 4 };

const text = await open("./data/bonjour.txt");
const users = await open("./data/users.csv");
const rows = await csv.parse(users, { skipFirstLine: true });
const window = await csv.parse(await open("./data/users.csv"), { fromLine: 2, toLine: 3 });
const objects = await csv.parse(await open("./data/users.csv"), { asObjects: true });
const stream = new csv.Parser(await open("./data/users.csv"), { asObjects: true });
const limited = new csv.Parser(await open("./data/users.csv"), { fromLine: 1, toLine: 2 });
const semis = await csv.parse(await open("./data/semicolons.csv"), { delimiter: ";" });

let openError = "";
try {
  await open("./data/missing.txt");
} catch (e) {
  openError = e.name;
}
let dirError = "";
try {
  await open("./data");
} catch (e) {
  dirError = e.name;
}

const rowsSeen = new Counter("csv_rows_streamed");

async function readAll(f) {
  const buf = new Uint8Array(4);
  const chunks = [];
  let n;
  while ((n = await f.read(buf)) !== null) chunks.push(String.fromCharCode(...buf.subarray(0, n)));
  return chunks.join("");
}

export default async function () {
  const info = await text.stat();
  await text.seek(0, SeekMode.Start);
  const all = await readAll(text);
  const eof = await text.read(new Uint8Array(4));
  const at = await text.seek(3, SeekMode.Start);
  const cur = await text.seek(2, SeekMode.Current);
  const one = new Uint8Array(1);
  await text.read(one);
  const fromEnd = await text.seek(-1, SeekMode.End);
  let seekError = "";
  try {
    await text.seek(-1, SeekMode.Start);
  } catch (e) {
    seekError = `${e.name}: ${e.message}`;
  }
  let readError = "";
  try {
    await text.read([1, 2]);
  } catch (e) {
    readError = e.name;
  }
  let lateOpen = "";
  try {
    await open("./data/bonjour.txt");
  } catch (e) {
    lateOpen = e.name;
  }
  const streamed = [];
  let last;
  if (exec.vu.iterationInInstance === 0) {
    for (let r = await limited.next(); !r.done; r = await limited.next()) streamed.push(r.value[0]);
    last = await limited.next();
  }
  const next = await stream.next();
  if (!next.done) rowsSeen.add(1, { city: next.value.city });
  check(null, {
    "stat": () => info.name === "bonjour.txt" && info.size === 19 && text.path.endsWith("/data/bonjour.txt"),
    "read in chunks to EOF": () => all === "bonjour, le monde!\n" && eof === null,
    "seek modes": () => at === 3 && cur === 5 && one[0] === "u".charCodeAt(0) && fromEnd === 17,
    "seek error": () => seekError === "TypeError: offset cannot be negative when using SeekModeStart",
    "read needs a Uint8Array": () => readError === "TypeError",
    "open only in init": () => lateOpen === "ForbiddenError",
    "open errors": () => openError === "NotFoundError" && dirError === "InvalidResourceError",
    "parse skipFirstLine": () =>
      rows.length === 4 && rows[0][0] === "alice" && rows[0][2] === "Paris, FR" && rows[2][2] === 'Rome "IT"',
    "parse fromLine toLine": () => window.length === 2 && window[0][0] === "bob" && window[1][0] === "carol",
    "parse asObjects": () => objects.length === 4 && objects[3].name === "dave" && objects[1].age === "25",
    "parse delimiter": () => semis.length === 2 && semis[1][1] === "b;c",
    "parser fromLine toLine to done": () =>
      exec.vu.iterationInInstance > 0 ||
      (streamed.join() === "alice,bob" && last.done === true && last.value.length === 0),
    "parse result is array-like": () => rows.map((r) => r[0]).join() === "alice,bob,carol,dave",
  });
}
