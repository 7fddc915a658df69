// The `k6/experimental/fs` module: files opened once per process, read in chunks by VUs.
// Each File keeps its own offset; the bytes are the one shared copy (src/modules/fs.rs).
const V = globalThis.__volley;

// What k6/experimental/csv reads a File through (not part of k6's API).
const HANDLE = Symbol.for("volley.fs.file");

export const SeekMode = Object.freeze({ Start: 0, Current: 1, End: 2 });

export class FsError extends Error {
  constructor(name, message) {
    super(message);
    this.name = name;
  }
}

function intArg(what, name, v) {
  if (v === null || v === undefined) {
    throw new FsError("TypeError", `${what}() failed; reason: the ${name} argument cannot be null or undefined`);
  }
  if (typeof v !== "number" || !Number.isInteger(v)) {
    throw new FsError("TypeError", `${what}() failed; reason: the ${name} argument must be a number`);
  }
  return v;
}

export class File {
  #id;
  #offset = 0;

  constructor(id, path) {
    this.#id = id;
    this.path = path;
    const self = this;
    Object.defineProperty(this, HANDLE, {
      value: {
        id,
        get offset() { return self.#offset; },
        set offset(o) { self.#offset = o; },
      },
    });
  }

  async stat() {
    const i = this.path.lastIndexOf("/");
    return { name: i < 0 ? this.path : this.path.slice(i + 1), size: V.fsSize(this.#id) };
  }

  async read(into) {
    if (into === null || into === undefined) {
      throw new FsError("TypeError", "read() failed; reason: into argument cannot be null or undefined");
    }
    if (!(into instanceof Uint8Array)) {
      throw new FsError("TypeError", "read() failed; reason: into argument must be a Uint8Array");
    }
    // As k6: at the end of the file the result is null, otherwise the bytes copied.
    if (this.#offset >= V.fsSize(this.#id)) return null;
    const chunk = new Uint8Array(V.fsChunk(this.#id, this.#offset, into.length));
    into.set(chunk);
    this.#offset += chunk.length;
    return chunk.length;
  }

  async seek(offset, whence) {
    offset = intArg("seek", "offset", offset);
    whence = intArg("seek", "whence", whence);
    const size = V.fsSize(this.#id);
    let next;
    switch (whence) {
      case SeekMode.Start:
        if (offset < 0) throw new FsError("TypeError", "offset cannot be negative when using SeekModeStart");
        next = offset;
        break;
      case SeekMode.Current:
        next = this.#offset + offset;
        break;
      case SeekMode.End:
        if (offset > 0) throw new FsError("TypeError", "offset cannot be positive when using SeekModeEnd");
        // k6 counts from the last byte, not from the end: seek(0, End) is size - 1.
        next = size - 1 + offset;
        break;
      default:
        throw new FsError("TypeError", "seek() failed; reason: the whence argument must be a SeekMode");
    }
    if (next < 0) throw new FsError("TypeError", "seeking before start of file");
    if (next > size) throw new FsError("TypeError", "seeking beyond end of file");
    this.#offset = next;
    return next;
  }
}

export async function open(path) {
  if (path === null || path === undefined) {
    throw new FsError("TypeError", "open() failed; reason: path cannot be null or undefined");
  }
  path = String(path);
  if (path === "") throw new FsError("TypeError", "open() failed; reason: path cannot be empty");
  const r = V.fsOpen(path);
  if (r.error) throw new FsError(r.error, r.message);
  return new File(r.id, r.path);
}

export default { open, SeekMode, File, FsError };
