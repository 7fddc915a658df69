//! Names from result files and scripts (metric names, tags, checks, groups, URLs) shown on a
//! terminal. A crafted file must not be able to move the cursor, recolour, retitle or beep
//! the user's terminal: control characters are shown escaped instead.

use std::borrow::Cow;

/// `s` with every control character (C0, DEL, C1: ESC, BEL, CR, LF, CSI ...) written as
/// `\xHH`; borrowed when there is none (the usual case).
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            // Every control character is below U+00A0: two hex digits suffice.
            o.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

#[cfg(test)]
mod tests {
    use super::escape_control;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert!(matches!(
            escape_control("http_req_duration{name:a b/é}"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(escape_control("\u{1b}[31mred\u{7}"), "\\x1b[31mred\\x07");
        assert_eq!(
            escape_control("a\nb\r\t\u{7f}\u{9b}"),
            "a\\x0ab\\x0d\\x09\\x7f\\x9b"
        );
    }
}
