//! A response's header fields, as received, for callers that keep them
//! ([`crate::Connection::keep_headers`]).

/// Header fields in one buffer (each name followed by its value) plus their spans: two
/// allocations per response, where a `(String, Vec<u8>)` per field cost two per field (a
/// k6 script keeps every response's headers, see bench/RESULTS.md, #4).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Headers {
    buf: Vec<u8>,
    /// Per field: where its name starts, where the name ends (and the value starts), where
    /// the value ends.
    spans: Vec<(u32, u32, u32)>,
}

impl Headers {
    /// Room for `fields` fields of `bytes` bytes in all.
    pub fn with_capacity(fields: usize, bytes: usize) -> Headers {
        Headers {
            buf: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(fields),
        }
    }

    pub fn push(&mut self, name: &str, value: &[u8]) {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(name.as_bytes());
        let mid = self.buf.len() as u32;
        self.buf.extend_from_slice(value);
        self.spans.push((start, mid, self.buf.len() as u32));
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The fields in the order received: (name as sent, value).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.spans.iter().map(|&(a, b, c)| {
            let (a, b, c) = (a as usize, b as usize, c as usize);
            // Names are pushed as `&str` only, so the bytes of a name are valid UTF-8.
            let name = std::str::from_utf8(&self.buf[a..b]).unwrap_or_default();
            (name, &self.buf[b..c])
        })
    }

    /// The first field named `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.spans.iter().find_map(|&(a, b, c)| {
            let n = &self.buf[a as usize..b as usize];
            n.eq_ignore_ascii_case(name.as_bytes())
                .then(|| &self.buf[b as usize..c as usize])
        })
    }

    /// Every field named `name` (case-insensitive), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.spans.iter().filter_map(move |&(a, b, c)| {
            let n = &self.buf[a as usize..b as usize];
            n.eq_ignore_ascii_case(name.as_bytes())
                .then(|| &self.buf[b as usize..c as usize])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_order_names_and_values() {
        let mut h = Headers::with_capacity(2, 16);
        h.push("Set-Cookie", b"a=1");
        h.push("Content-Type", b"text/plain");
        h.push("set-cookie", b"");
        let all: Vec<(&str, &[u8])> = h.iter().collect();
        assert_eq!(
            all,
            vec![
                ("Set-Cookie", &b"a=1"[..]),
                ("Content-Type", &b"text/plain"[..]),
                ("set-cookie", &b""[..])
            ]
        );
        assert_eq!(h.get("SET-COOKIE"), Some(&b"a=1"[..]));
        assert_eq!(h.get("content-type"), Some(&b"text/plain"[..]));
        assert_eq!(h.get("content-length"), None);
        let cookies: Vec<&[u8]> = h.get_all("Set-Cookie").collect();
        assert_eq!(cookies, vec![&b"a=1"[..], &b""[..]]);
        assert_eq!(h.len(), 3);
        h.clear();
        assert!(h.is_empty() && h.get("set-cookie").is_none());
    }
}
