// Plain JavaScript imported by a TypeScript module.
export function double(n) {
  return n * 2;
}
