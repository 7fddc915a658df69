// TypeScript as k6 runs it: types removed, never checked (tests/k6/README.md).
import { check } from "k6";
import { Options } from "k6/options";
import type { Point } from "./lib/ts_types.ts";
import { Color, Stack, describe, type Labelled } from "./lib/ts_types.ts";
import { fromJs } from "./lib/ts_from_js.js";

export const options: Options = {
  vus: 1,
  iterations: 2,
};

interface Result<T> {
  ok: boolean;
  value?: T;
}

type Pair = [string, number];

abstract class Shape {
  constructor(protected readonly name: string) {}
  abstract area(): number;
  label(): string {
    return `${this.name}:${this.area()}`;
  }
}

class Square extends Shape implements Labelled {
  private side!: number;
  constructor(side: number) {
    super("square");
    this.side = side;
  }
  area(): number {
    return this.side * this.side;
  }
}

function first<T>(xs: T[]): Result<T> {
  return xs.length > 0 ? { ok: true, value: xs[0]! } : { ok: false };
}

const origin = { x: 0, y: 0 } satisfies Point;
const pair = ["a", 1] as Pair;

export default function (): void {
  const s = new Stack<number>();
  s.push(1);
  s.push(2);
  const p = <Point>{ x: 3, y: 4 };
  check(null, {
    "generics": () => first<string>(["x", "y"]).value === "x" && s.pop() === 2,
    "as and satisfies": () => pair[1] === 1 && origin.x === 0 && p.y === 4,
    "enum values": () => Color.Red === 0 && Color.Blue === "blue" && Color[0] === "Red",
    "classes with parameter properties": () => new Square(3).label() === "square:9",
    "ts module imported from js": () => fromJs(2) === "point(2,4)",
    "js module imported from ts": () => describe({ x: 1, y: 2 }) === "point(1,2)",
  });
}
