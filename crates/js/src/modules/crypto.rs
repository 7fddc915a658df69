//! Natives of `k6/encoding` and `k6/crypto`: base64 variants, digests, HMAC, random bytes.
//!
//! SHA-1/SHA-2 come from `ring` (already in the tree through rustls); `ring` has no MD5, so
//! a small MD5 (RFC 1321) lives here. HMAC (RFC 2104) is built over either.

use super::{array_buffer, bytes_of, throw};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use rquickjs::function::Opt;
use rquickjs::{Ctx, Object, Value};

use volley_run::md5::md5;

fn engine(variant: &str) -> Option<GeneralPurpose> {
    let (alpha, pad) = match variant {
        "" | "std" => (&alphabet::STANDARD, true),
        "rawstd" => (&alphabet::STANDARD, false),
        "url" => (&alphabet::URL_SAFE, true),
        "rawurl" => (&alphabet::URL_SAFE, false),
        _ => return None,
    };
    // Decoding accepts input with or without padding, as Go's decoders in k6 mostly do.
    let cfg = GeneralPurposeConfig::new()
        .with_encode_padding(pad)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    Some(GeneralPurpose::new(alpha, cfg))
}

pub(crate) fn b64encode(data: &[u8], variant: &str) -> Option<String> {
    Some(engine(variant)?.encode(data))
}

pub(crate) fn b64decode(s: &str, variant: &str) -> Result<Vec<u8>, String> {
    let e = engine(variant).ok_or_else(|| format!("unknown base64 encoding '{variant}'"))?;
    e.decode(s.trim_end_matches(['\n', '\r']))
        .map_err(|e| format!("invalid base64 input: {e}"))
}

/// A digest algorithm by k6's name: its function and block size (for HMAC).
/// A digest function.
type Digest = fn(&[u8]) -> Vec<u8>;

fn algorithm(name: &str) -> Option<(Digest, usize)> {
    use ring::digest::{digest, SHA1_FOR_LEGACY_USE_ONLY, SHA256, SHA384, SHA512, SHA512_256};
    Some(match name.to_ascii_lowercase().replace('-', "").as_str() {
        "md5" => (|d| md5(d).to_vec(), 64),
        "sha1" => (
            |d| digest(&SHA1_FOR_LEGACY_USE_ONLY, d).as_ref().to_vec(),
            64,
        ),
        "sha256" => (|d| digest(&SHA256, d).as_ref().to_vec(), 64),
        "sha384" => (|d| digest(&SHA384, d).as_ref().to_vec(), 128),
        "sha512" => (|d| digest(&SHA512, d).as_ref().to_vec(), 128),
        "sha512_256" => (|d| digest(&SHA512_256, d).as_ref().to_vec(), 128),
        _ => return None,
    })
}

pub(crate) fn hash(alg: &str, data: &[u8]) -> Option<Vec<u8>> {
    Some(algorithm(alg)?.0(data))
}

/// HMAC (RFC 2104) over any of [`algorithm`]'s digests.
pub(crate) fn hmac(alg: &str, key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let (h, block) = algorithm(alg)?;
    let mut k = if key.len() > block {
        h(key)
    } else {
        key.to_vec()
    };
    k.resize(block, 0);
    let mut inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    inner.extend_from_slice(data);
    let mut outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    outer.extend_from_slice(&h(&inner));
    Some(h(&outer))
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A digest in k6's output encodings ("hex", "base64", "base64url", "base64rawurl", "binary").
fn encode_out<'js>(ctx: &Ctx<'js>, b: &[u8], enc: &str) -> rquickjs::Result<Value<'js>> {
    let s = match enc {
        "" | "hex" => hex(b),
        "base64" => b64encode(b, "std").unwrap_or_default(),
        "base64url" => b64encode(b, "url").unwrap_or_default(),
        "base64rawurl" => b64encode(b, "rawurl").unwrap_or_default(),
        "binary" => return array_buffer(ctx, b),
        other => return Err(throw(ctx, &format!("unknown output encoding '{other}'"))),
    };
    Ok(rquickjs::String::from_str(ctx.clone(), &s)?.into_value())
}

fn data_arg<'js>(ctx: &Ctx<'js>, v: &Value<'js>, what: &str) -> rquickjs::Result<Vec<u8>> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    bytes_of(v).ok_or_else(|| throw(ctx, &format!("{what} must be a string or an ArrayBuffer")))
}

pub(crate) fn install<'js>(ctx: &Ctx<'js>, v: &Object<'js>) -> rquickjs::Result<()> {
    crate::rt::native(
        ctx,
        v,
        "b64enc",
        |ctx: Ctx<'js>, data: Value<'js>, variant: Opt<String>| {
            let b = data_arg(&ctx, &data, "b64encode input")?;
            let variant = variant.0.unwrap_or_default();
            b64encode(&b, &variant)
                .ok_or_else(|| throw(&ctx, &format!("unknown base64 encoding '{variant}'")))
        },
    )?;
    crate::rt::native(
        ctx,
        v,
        "b64dec",
        |ctx: Ctx<'js>, s: String, variant: Opt<String>, as_string: Opt<bool>| {
            let b = b64decode(&s, &variant.0.unwrap_or_default()).map_err(|e| throw(&ctx, &e))?;
            if as_string.0.unwrap_or(false) {
                let s = String::from_utf8_lossy(&b);
                return Ok(rquickjs::String::from_str(ctx.clone(), &s)?.into_value());
            }
            array_buffer(&ctx, &b)
        },
    )?;
    crate::rt::native(
        ctx,
        v,
        "digest",
        |ctx: Ctx<'js>, alg: String, data: Value<'js>, enc: Opt<String>| {
            let b = data_arg(&ctx, &data, "hash input")?;
            let d = hash(&alg, &b)
                .ok_or_else(|| throw(&ctx, &format!("unsupported hash algorithm '{alg}'")))?;
            encode_out(&ctx, &d, enc.0.as_deref().unwrap_or("hex"))
        },
    )?;
    crate::rt::native(
        ctx,
        v,
        "hmac",
        |ctx: Ctx<'js>, alg: String, key: Value<'js>, data: Value<'js>, enc: Opt<String>| {
            let k = data_arg(&ctx, &key, "hmac key")?;
            let b = data_arg(&ctx, &data, "hmac input")?;
            let d = hmac(&alg, &k, &b)
                .ok_or_else(|| throw(&ctx, &format!("unsupported hash algorithm '{alg}'")))?;
            encode_out(&ctx, &d, enc.0.as_deref().unwrap_or("hex"))
        },
    )?;
    crate::rt::native(ctx, v, "randomBytes", |ctx: Ctx<'js>, n: f64| {
        use ring::rand::SecureRandom;
        if !(0.0..=(1u64 << 30) as f64).contains(&n) {
            return Err(throw(&ctx, "randomBytes: size must be between 0 and 1 GiB"));
        }
        let mut b = vec![0u8; n as usize];
        ring::rand::SystemRandom::new()
            .fill(&mut b)
            .map_err(|_| throw(&ctx, "randomBytes: no system randomness"))?;
        array_buffer(&ctx, &b)
    })?;
    crate::rt::native(
        ctx,
        v,
        "concat",
        |ctx: Ctx<'js>, chunks: Vec<Value<'js>>| {
            let mut out = Vec::new();
            for c in &chunks {
                out.extend_from_slice(&data_arg(&ctx, c, "a body part")?);
            }
            array_buffer(&ctx, &out)
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_of_hello_match_known_values() {
        let h = |a| hex(&hash(a, b"hello").unwrap());
        assert_eq!(h("md5"), "5d41402abc4b2a76b9719d911017c592");
        assert_eq!(h("sha1"), "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d");
        assert_eq!(
            h("sha256"),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(hex(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        // Longer than one block.
        assert_eq!(hex(&md5(&[b'a'; 100])), "36a92cc94a9e0fa21f625f8bfb007adf");
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let d = hmac("sha256", b"Jefe", b"what do ya want for nothing?").unwrap();
        assert_eq!(
            hex(&d),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let d = hmac("md5", b"Jefe", b"what do ya want for nothing?").unwrap();
        assert_eq!(hex(&d), "750c783e6ab0b503eaa86e310a5db738");
    }

    #[test]
    fn base64_variants() {
        assert_eq!(b64encode(b"hello?>", "std").unwrap(), "aGVsbG8/Pg==");
        assert_eq!(b64encode(b"hello?>", "rawstd").unwrap(), "aGVsbG8/Pg");
        assert_eq!(b64encode(b"hello?>", "url").unwrap(), "aGVsbG8_Pg==");
        assert_eq!(b64encode(b"hello?>", "rawurl").unwrap(), "aGVsbG8_Pg");
        assert_eq!(b64decode("aGVsbG8_Pg", "rawurl").unwrap(), b"hello?>");
        assert!(b64decode("!!", "std").is_err());
    }
}
