// An error thrown at a known place of a .ts file: line 12, column 9 (the `throw`).
interface Config {
  limit: number;
  name: string;
}

const config: Config = { limit: 1, name: "x" };

export const options = { vus: 1, iterations: 1 };

export default function (): void {
  throw new Error(`failed in ${config.name as string}`);
}
