// Imported by modules.js with a relative path.
export const answer = 42;
export function url(path) {
  return `${__ENV.BASE}${path}`;
}
