//! The native half of `volley/ledger` (`shims/volley_ledger.js`): `ledger.ack` appends to the
//! process's ledger ([`volley_faults::ledger`]), opened from `--ledger` or `options.ledger`;
//! `ledger.verified(id)` & co. record `--verify`'s verdicts ([`volley_faults::verify`]).

use super::throw;
use rquickjs::{Ctx, Function, Object};

pub(crate) fn install<'js>(ctx: &Ctx<'js>, v: &Object<'js>) -> rquickjs::Result<()> {
    v.set(
        "ledgerAck",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, kind: String, id: String, fields: String| {
                let Some(l) = volley_faults::ledger::global() else {
                    return Err(throw(
                        &ctx,
                        "ledger.ack: no ledger file; give --ledger FILE or options.ledger",
                    ));
                };
                let fields = match serde_json::from_str(&fields) {
                    Ok(serde_json::Value::Object(m)) => m,
                    _ => {
                        return Err(throw(
                            &ctx,
                            "ledger.ack(kind, id, fields): fields must be an object, e.g. \
                             { sha256: digest, size: n }",
                        ))
                    }
                };
                l.ack(&kind, &id, fields).map_err(|e| throw(&ctx, &e))
            },
        )?,
    )?;
    v.set(
        "ledgerVerdict",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, status: String, id: String| {
            volley_faults::verify::record_verdict(&status, &id).map_err(|e| throw(&ctx, &e))
        })?,
    )?;
    Ok(())
}
