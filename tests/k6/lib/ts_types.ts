// A TypeScript module: type-only exports, an enum, a generic class, and an import of a .js file.
import { double } from "./ts_plain.js";

export interface Point {
  x: number;
  y: number;
}

export interface Labelled {
  label(): string;
}

export type { Point as Coordinates };

export enum Color {
  Red,
  Green,
  Blue = "blue",
}

export class Stack<T> {
  private items: T[] = [];
  push(item: T): void {
    this.items.push(item);
  }
  pop(): T | undefined {
    return this.items.pop();
  }
}

export function describe(p: Point): string {
  return `point(${p.x},${double(p.y) / 2})`;
}
