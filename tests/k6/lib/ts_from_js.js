// Plain JavaScript importing a TypeScript module.
import { describe } from "./ts_types.ts";

export function fromJs(n) {
  return describe({ x: n, y: n * 2 });
}
