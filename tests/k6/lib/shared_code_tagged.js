// A tagged template's strings array is made when the code is read and belongs to that
// realm: a module with one keeps its compiled code per VU (not shared).
const tag = (strings) => strings;

export function tagged() {
  return tag`x${1}y`;
}
