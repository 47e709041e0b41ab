//! Text from lab files, chapters and results files made safe to print on a terminal: a lab title
//! must not be able to change colours, move the cursor, retitle the window or reorder what
//! follows it. Every printer of such text (the CLI's tables, lists and messages, the build's
//! progress lines) passes it through [`safe`] or [`one_line`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character a terminal would act on written as a visible escape: the C0
/// controls but `\n` and `\t` (ESC among them, so no escape sequence survives), DEL, the C1
/// controls, and the bidirectional overrides and isolates. `"\x1b[31mred"` comes out as the
/// ten characters `\x1b[31mred`. Text without such characters is returned as it is.
pub fn safe(text: &str) -> Cow<'_, str> {
    escape(text, |c| c != '\n' && c != '\t' && is_unsafe(c))
}

/// As [`safe`], with `\n` and `\t` escaped too: for text quoted inside a one-line message.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, is_unsafe)
}

/// Whether a terminal would do something with `c` rather than show it.
fn is_unsafe(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

fn escape(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if c.is_ascii() {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_are_shown_not_obeyed() {
        assert_eq!(safe("\u{1b}[31mred\u{1b}[0m"), "\\x1b[31mred\\x1b[0m");
        assert_eq!(safe("\u{1b}]0;owned\u{7}title"), "\\x1b]0;owned\\x07title");
        assert_eq!(safe("a\rb\u{8}c\u{7f}d"), "a\\x0db\\x08c\\x7fd");
        assert_eq!(safe("c1: \u{9b}31m"), "c1: \\u{9b}31m");
        assert_eq!(safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(safe("two\nlines\tand a tab"), "two\nlines\tand a tab");
        assert_eq!(one_line("two\nlines\t"), "two\\x0alines\\x09");
    }

    #[test]
    fn plain_text_is_not_copied() {
        assert!(matches!(
            safe("Coalesced copy — 4 µs, 90 %"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(one_line(""), Cow::Borrowed(_)));
    }

    #[test]
    fn the_result_has_nothing_left_to_escape() {
        let nasty: String = (0u32..0x250)
            .chain(0x2000..0x2070)
            .filter_map(char::from_u32)
            .collect();
        let once = one_line(&nasty).into_owned();
        assert!(!once.chars().any(is_unsafe));
        assert_eq!(
            one_line(&once),
            once.as_str(),
            "escaping twice changes nothing more"
        );
    }
}
