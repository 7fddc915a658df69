// `volley/ledger`: record what the service acknowledged, for verification after faults
// (docs/faults.md). Each ack is one NDJSON line in the file of --ledger FILE or
// options.ledger, on disk (the kernel's) before ack returns.
const V = globalThis.__volley;

export const ledger = {
  ack(kind, id, fields) {
    if (kind === undefined || id === undefined) {
      throw new TypeError("ledger.ack(kind, id, fields): kind and id are required");
    }
    const extra = fields === undefined || fields === null ? "{}" : JSON.stringify(fields);
    V.ledgerAck(String(kind), String(id), extra);
  },
  // Verdicts of the script's verify(entries) (volley run --verify).
  verified(id) { V.ledgerVerdict("verified", String(id)); },
  lost(id) { V.ledgerVerdict("lost", String(id)); },
  corrupted(id) { V.ledgerVerdict("corrupted", String(id)); },
  partial(name) { V.ledgerVerdict("partial", String(name)); },
};

export default { ledger };
