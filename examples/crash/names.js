// The crash harness's file names carry their content: `direct-VU-ITER.bin` holds
// payload(size, seedOf(name)) (examples/lib/api.js), so a listed file can be checked even
// when nobody acknowledged it.

/** The payload seed of a harness file name (0..250). */
export function seedOf(name) {
  let h = 7;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) % 251;
  return h;
}
