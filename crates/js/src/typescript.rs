//! TypeScript modules (`.ts`, `.mts`): compiled to JavaScript before QuickJS sees them, as
//! k6 (≥ v0.57) runs TypeScript through esbuild — types are dropped, never checked.
//!
//! swc's `swc_ts_fast_strip` in transform mode does the work, so the subset is esbuild's:
//! annotations, interfaces, type aliases, generics, `as`, `satisfies`, `!`, type-only
//! imports/exports, and imports whose bindings are only used as types (`import { Options }
//! from "k6/options"`) are removed; enums, namespaces, parameter properties and class fields
//! are compiled to JavaScript. Decorators and JSX are not supported (nor by k6).
//!
//! Positions: the transform re-prints the code, so each module's source map is kept in a
//! process-wide registry and [`remap`] rewrites every `file.ts:line:col` of an error message
//! and its stack back into the `.ts` source (k6 does the same through esbuild's map). A
//! syntax error is reported at its place in the `.ts` file by swc itself.
//!
//! Layout: [`is_typescript`] (which files), [`compile`] (source → JS, map registered),
//! [`remap`] (positions in messages → the `.ts` source).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};
use swc_common::errors::{DiagnosticBuilder, Emitter, Handler, HANDLER};
use swc_common::sync::Lrc;
use swc_common::{BytePos, Globals, SourceMap, GLOBALS};
use swc_ts_fast_strip::{operate, Mode, Options, TransformConfig};

/// True for the files k6 compiles as TypeScript (by extension, as k6 decides).
pub(crate) fn is_typescript(name: &str) -> bool {
    name.ends_with(".ts") || name.ends_with(".mts")
}

/// Each compiled module's source map, by module name.
type Maps = Mutex<HashMap<String, Arc<swc_sourcemap::SourceMap>>>;

fn maps() -> &'static Maps {
    static MAPS: OnceLock<Maps> = OnceLock::new();
    MAPS.get_or_init(Maps::default)
}

/// The first error swc reported, with where it is.
type Found = Arc<Mutex<Option<(String, Option<BytePos>)>>>;

/// Keeps the first diagnostic (swc reports through a handler, not a return value).
struct FirstError(Found);

impl Emitter for FirstError {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let mut first = self.0.lock().unwrap();
        if first.is_none() {
            *first = Some((db.message(), db.span.primary_span().map(|s| s.lo)));
        }
    }
}

/// Compile the TypeScript module `name` to JavaScript and register its source map. An error
/// reads `name:line:col: SyntaxError: message` with a hint.
pub(crate) fn compile(name: &str, source: String) -> Result<String, String> {
    let cm: Lrc<SourceMap> = Default::default();
    let found: Found = Arc::default();
    let handler = Handler::with_emitter(true, false, Box::new(FirstError(found.clone())));
    let mut transform = TransformConfig::default();
    // esbuild with target esnext keeps class fields as fields (define semantics).
    transform.typescript.native_class_properties = true;
    let opts = Options {
        module: Some(true),
        filename: Some(name.to_string()),
        mode: Mode::Transform,
        transform: Some(transform),
        source_map: true,
        ..Options::default()
    };
    // swc must not take the process down on input it chokes on.
    let out = catch_unwind(AssertUnwindSafe(|| {
        GLOBALS.set(&Globals::new(), || {
            HANDLER.set(&handler, || operate(&cm, &handler, source, opts))
        })
    }));
    let out = match out {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            // No stale map of an earlier version of this file may rewrite the message.
            maps().lock().unwrap().remove(name);
            let first = found.lock().unwrap().take();
            let (msg, pos) = first.unwrap_or((e.message.clone(), None));
            let at = match pos {
                Some(p) => {
                    let loc = cm.lookup_char_pos(p);
                    format!("{name}:{}:{}", loc.line, loc.col.0 + 1)
                }
                None => name.to_string(),
            };
            return Err(format!(
                "{at}: SyntaxError: {msg}\n  hint: Volley compiles .ts files as k6 does: types are \
                 removed, not checked; decorators and JSX are not supported"
            ));
        }
        Err(_) => {
            return Err(format!(
                "{name}: the TypeScript compiler failed on this file"
            ))
        }
    };
    if let Some(map) = out
        .map
        .and_then(|m| swc_sourcemap::SourceMap::from_slice(m.as_bytes()).ok())
    {
        maps()
            .lock()
            .unwrap()
            .insert(name.to_string(), Arc::new(map));
    }
    Ok(out.code)
}

/// Rewrite every `name:line:col` of a compiled TypeScript module in `text` (an error message
/// and its stack, 1-based as QuickJS prints them) to the position in the `.ts` source.
pub(crate) fn remap(text: &str) -> String {
    let maps = maps().lock().unwrap();
    if maps.is_empty() {
        return text.to_string();
    }
    let mut out = text.to_string();
    for (name, map) in maps.iter() {
        if out.contains(name.as_str()) {
            out = remap_one(&out, name, map);
        }
    }
    out
}

fn remap_one(text: &str, name: &str, map: &swc_sourcemap::SourceMap) -> String {
    let pat = format!("{name}:");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        out.push_str(&rest[..i + pat.len()]);
        let (line, n1) = leading_number(after);
        let tail = &after[n1..];
        let col = tail
            .strip_prefix(':')
            .map(leading_number)
            .filter(|(_, n)| *n > 0);
        match (line, col) {
            (Some(l), Some((Some(c), n2))) if l > 0 => {
                let tok = map.lookup_token(l - 1, c.saturating_sub(1));
                match tok.filter(|t| t.get_src_line() != u32::MAX) {
                    Some(t) => {
                        out.push_str(&format!("{}:{}", t.get_src_line() + 1, t.get_src_col() + 1))
                    }
                    None => out.push_str(&after[..n1 + 1 + n2]),
                }
                rest = &tail[1 + n2..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// The decimal number `s` starts with, and how many bytes it takes.
fn leading_number(s: &str) -> (Option<u32>, usize) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    (s[..n].parse().ok(), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_removed_and_enums_compiled() {
        let src = "interface A { x: number }\n\
                   enum Color { Red, Green = 5 }\n\
                   export const f = <T,>(a: T): T => a as T;\n\
                   const c = { x: 1 } satisfies A;\n\
                   export default Color.Green + c.x;\n";
        let js = compile("t/unit.ts", src.to_string()).unwrap();
        assert!(!js.contains("interface") && !js.contains(": T"), "{js}");
        assert!(js.contains("Color") && js.contains("Green"), "{js}");
    }

    #[test]
    fn a_syntax_error_names_the_ts_position() {
        let src = "const a: number = 1;\nconst b = (;\n";
        let err = compile("t/bad.ts", src.to_string()).unwrap_err();
        assert!(err.starts_with("t/bad.ts:2:"), "{err}");
        assert!(err.contains("SyntaxError"), "{err}");
    }

    #[test]
    fn positions_in_messages_map_back_to_the_source() {
        // Line 4 of the source (after a 3-line interface) is the `throw`.
        let src = "interface I {\n  a: string;\n}\nexport function f(x: I): void { throw new Error(x.a); }\n";
        let js = compile("t/map.ts", src.to_string()).unwrap();
        let (line, l) = js
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains("throw"))
            .unwrap();
        let col = l.find("throw").unwrap() + 1;
        let msg = format!("Error: x\n    at f (t/map.ts:{}:{col})", line + 1);
        let mapped = remap(&msg);
        assert!(mapped.contains("t/map.ts:4:33"), "{mapped} from {js}");
        // Other files and non-positions are left alone.
        assert_eq!(remap("t/other.js:1:2"), "t/other.js:1:2");
        assert_eq!(remap("see t/map.ts: here"), "see t/map.ts: here");
    }

    /// A TypeScript file of about `lines` lines (as bench/ts-gen.py: interfaces, generics,
    /// classes, `as`, `satisfies`).
    fn generated(lines: usize) -> String {
        let mut out = String::from("import type { Options } from './types.ts';\n");
        let mut i = 0;
        while out.lines().count() + 18 < lines {
            out += &format!(
                "interface Item{i}<T> {{\n  id: number;\n  name?: string;\n  readonly tags: Array<T>;\n}}\n\
                 type Pair{i} = [string, number] | null;\n\
                 export function make{i}<T extends object>(x: T, n: number = {i}): Item{i}<T> {{\n\
                 \x20 const v = {{ id: n, tags: [x] }} as Item{i}<T>;\n\
                 \x20 const cfg = {{ a: 1 }} satisfies Record<string, number>;\n  return v!;\n}}\n\
                 class Box{i}<T> implements Item{i}<T> {{\n  private secret: string = 's{i}';\n\
                 \x20 id: number = {i};\n  readonly tags: T[] = [];\n\
                 \x20 get(this: Box{i}<T>, k: keyof T): T | undefined {{ return this.tags[0] as unknown as T; }}\n}}\n\n"
            );
            i += 1;
        }
        out + "export default function (): void { make0({}, 1); }\n"
    }

    /// Not a test: prints the compile time of a 2,000-line file (bench/RESULTS.md). Run with
    /// `cargo test -p volley-js --lib typescript::tests::compile_time -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn compile_time() {
        let src = generated(2000);
        let lines = src.lines().count();
        compile("bench.ts", src.clone()).unwrap();
        let n = 20;
        let t = std::time::Instant::now();
        for _ in 0..n {
            compile("bench.ts", src.clone()).unwrap();
        }
        println!(
            "swc transform + map, {lines} lines: {:?} per file",
            t.elapsed() / n
        );
    }
}
