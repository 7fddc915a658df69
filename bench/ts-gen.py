# Writes a 2,000-line TypeScript file: interfaces, generics, annotations, `as`, `satisfies`, classes.
import sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
out = ["import type { Options } from './types.ts';", "import http from 'k6/http';", ""]
i = 0
while len(out) < n - 20:
    out += [
        f"interface Item{i}<T> {{",
        f"  id: number;",
        f"  name?: string;",
        f"  readonly tags: Array<T>;",
        f"}}",
        f"type Pair{i} = [string, number] | null;",
        f"export function make{i}<T extends object>(x: T, n: number = {i}): Item{i}<T> {{",
        f"  const v = {{ id: n, tags: [x] }} as Item{i}<T>;",
        f"  const cfg = {{ a: 1 }} satisfies Record<string, number>;",
        f"  return v!;",
        f"}}",
        f"class Box{i}<T> implements Item{i}<T> {{",
        f"  private secret: string = 's{i}';",
        f"  id: number = {i};",
        f"  readonly tags: T[] = [];",
        f"  get(this: Box{i}<T>, k: keyof T): T | undefined {{ return this.tags[0] as unknown as T; }}",
        f"}}",
        "",
    ]
    i += 1
out += ["export default function (): void {", "  make0({}, 1);", "}"]
print("\n".join(out[:n] if len(out) > n else out))
