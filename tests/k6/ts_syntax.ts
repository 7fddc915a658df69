// A syntax error in TypeScript: line 5 has an unclosed type argument list.
interface Config {
  limit: number;
}
const m: Map<string, number = new Map();

export default function (): void {}
