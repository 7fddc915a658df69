// The `k6/experimental/csv` module: `csv.parse` (a SharedArray filled once per process) and
// `csv.Parser` (records one at a time), over a File of k6/experimental/fs. Options and errors
// follow k6's; records are read by the native `csvNext` (src/modules/csv.rs).
import { SharedArray } from "k6/data";

const V = globalThis.__volley;
const HANDLE = Symbol.for("volley.fs.file");

function fileHandle(file) {
  const h = file !== null && typeof file === "object" ? file[HANDLE] : undefined;
  if (!h) {
    throw new TypeError(`first argument expected to be a fs.File instance, got ${typeof file} instead`);
  }
  return h;
}

function readOptions(o) {
  const opts = { delimiter: ",", skipFirstLine: false, fromLine: null, toLine: null, asObjects: false };
  if (o === undefined || o === null) return opts;
  if (o.delimiter !== undefined) {
    const d = String(o.delimiter);
    if (d.length !== 1) throw new Error("delimiter must be a single character");
    opts.delimiter = d;
  }
  if (o.skipFirstLine !== undefined) opts.skipFirstLine = Boolean(o.skipFirstLine);
  if (o.fromLine !== undefined) opts.fromLine = Math.trunc(Number(o.fromLine));
  if (o.toLine !== undefined) opts.toLine = Math.trunc(Number(o.toLine));
  if (o.asObjects !== undefined) opts.asObjects = Boolean(o.asObjects);
  if (opts.fromLine !== null && opts.toLine !== null && opts.fromLine >= opts.toLine) {
    throw new Error("fromLine must be less than or equal to toLine");
  }
  return opts;
}

function validate(o) {
  if (o.asObjects && o.skipFirstLine) {
    throw new Error("the 'header' option cannot be enabled when 'skipFirstLine' is true");
  }
  if (o.asObjects && o.fromLine > 0) {
    throw new Error("the 'header' option cannot be enabled when 'fromLine' is set to a value greater than 0");
  }
  if (o.fromLine !== null && o.fromLine < 0) {
    throw new Error(`the 'fromLine' option must be greater than or equal to 0; got ${o.fromLine}`);
  }
  if (o.toLine !== null && o.toLine < 0) {
    throw new Error(`the 'toLine' option must be greater than or equal to 0; got ${o.toLine}`);
  }
}

// k6's reader: `line` counts the records consumed (header and skipped ones too).
class Reader {
  constructor(handle, opts) {
    validate(opts);
    this.h = handle;
    this.o = opts;
    this.line = 0;
    this.fields = undefined;
    if (opts.asObjects) {
      this.header = this.raw("failed to read the first line");
      this.line++;
    }
    if (opts.skipFirstLine && !(opts.fromLine > 0)) {
      this.raw("failed to skip the first line");
      this.line++;
    }
    if (opts.fromLine > 0) {
      while (this.line < opts.fromLine) {
        this.raw(`failed to skip lines until line ${opts.fromLine}`);
        this.line++;
      }
    }
  }

  // The next record as an array of strings, null at the end of the file.
  next() {
    const r = V.csvNext(this.h.id, this.h.offset, this.o.delimiter);
    if (r === null) return null;
    this.h.offset = r[1];
    const rec = r[0];
    // As Go's encoding/csv: every record has as many fields as the first one.
    if (this.fields === undefined) this.fields = rec.length;
    else if (rec.length !== this.fields) {
      throw new Error(`record on line ${this.line + 1}: wrong number of fields`);
    }
    return rec;
  }

  raw(why) {
    const rec = this.next();
    if (rec === null) throw new Error(`failed to create a new parser; reason: ${why}; reason: EOF`);
    return rec;
  }

  // The next record in the shape asked for, null when done.
  read() {
    if (this.o.toLine !== null && this.o.toLine > 0 && this.line > this.o.toLine) return null;
    const rec = this.next();
    if (rec === null) return null;
    this.line++;
    if (!this.o.asObjects) return rec;
    if (rec.length !== this.header.length) {
      throw new Error(`record length (${rec.length}) doesn't match header length (${this.header.length})`);
    }
    const obj = {};
    for (let i = 0; i < rec.length; i++) obj[this.header[i]] = rec[i];
    return obj;
  }
}

export async function parse(file, options) {
  const h = fileHandle(file);
  const opts = readOptions(options);
  validate(opts);
  // One array per file and options, parsed by the first VU (the init run) only.
  const name = "csv.parse." + JSON.stringify([file.path, opts]);
  return new SharedArray(name, () => {
    const r = new Reader(h, opts);
    const out = [];
    for (let rec = r.read(); rec !== null; rec = r.read()) out.push(rec);
    return out;
  });
}

export class Parser {
  #reader;

  constructor(file, options) {
    if (file === undefined || file === null) {
      throw new Error("csv Parser constructor takes at least one non-nil source argument");
    }
    if (!V.csvInInit()) throw new Error("csv Parser constructor must be called in the init context");
    this.#reader = new Reader(fileHandle(file), readOptions(options));
  }

  async next() {
    const value = this.#reader.read();
    return value === null ? { done: true, value: [] } : { done: false, value };
  }
}

export default { parse, Parser };
