//! `Range: bytes=...` for downloads: one range per request (`a-b`, `a-`, `-n`). Anything
//! else — another unit, several ranges, a malformed or unsatisfiable range — is answered 416
//! with `Content-Range: bytes */SIZE`.

/// The inclusive byte range to serve, or `Err(())` for 416. `size` is the file's size.
pub(crate) fn parse(header: &str, size: u64) -> Result<(u64, u64), ()> {
    let spec = header.trim().strip_prefix("bytes=").ok_or(())?.trim();
    if spec.contains(',') || size == 0 {
        return Err(());
    }
    let (a, b) = spec.split_once('-').ok_or(())?;
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| -> Result<u64, ()> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(());
        }
        s.parse().map_err(|_| ())
    };
    if a.is_empty() {
        let n = num(b)?;
        if n == 0 {
            return Err(());
        }
        return Ok((size.saturating_sub(n), size - 1));
    }
    let start = num(a)?;
    if start >= size {
        return Err(());
    }
    let end = if b.is_empty() { size - 1 } else { num(b)? };
    if end < start {
        return Err(());
    }
    Ok((start, end.min(size - 1)))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn single_ranges() {
        assert_eq!(parse("bytes=0-9", 100), Ok((0, 9)));
        assert_eq!(parse("bytes=90-", 100), Ok((90, 99)));
        assert_eq!(parse("bytes=-10", 100), Ok((90, 99)));
        assert_eq!(parse("bytes=-1000", 100), Ok((0, 99)));
        assert_eq!(parse("bytes=50-1000", 100), Ok((50, 99)));
    }

    #[test]
    fn bad_ranges_are_416() {
        for h in [
            "bytes=100-",
            "bytes=5-1",
            "bytes=-0",
            "bytes=a-b",
            "items=0-1",
            "bytes=0-1,5-6",
            "bytes=-",
            "bytes=+1-2",
        ] {
            assert_eq!(parse(h, 100), Err(()), "{h}");
        }
        assert_eq!(parse("bytes=0-0", 0), Err(()));
    }
}
