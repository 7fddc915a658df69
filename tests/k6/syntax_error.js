// A syntax error on line 4: volley must say file:line:column and exit 107.
export default function () {
  const a = 1;
  const b = (a +;
}
