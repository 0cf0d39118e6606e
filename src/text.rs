//! Text helpers shared by the games' reports and forms (which go out by email): wrapping lines,
//! counts of things in words.

/// Breaks `text` into lines of at most `width` columns at spaces (greedy, first fit; runs of
/// whitespace count as one space; a word longer than `width` gets a line of its own, unbroken).
///
/// Printable ASCII (every report and form line the games write) is wrapped here directly, with
/// textwrap's first-fit rule and without its allocations per word (reports and prompts are
/// wrapped for every step a simulation plays); any other text goes through textwrap. Both give
/// the same lines (`tests::ascii_wraps_as_textwrap_does`). A text that is already its one line
/// is given back as it is (`tests::a_text_that_fits_is_its_own_line`).
pub fn wrap_lines(text: &str, width: usize) -> Vec<String> {
    // No wider than its bytes (a column a byte at most, as textwrap counts them), words apart by
    // single spaces: both ways below make it one line, as it is.
    if text.len() <= width && is_one_line(text) {
        return vec![text.to_string()];
    }
    if !text.bytes().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) {
        return wrap_lines_textwrap(text, width);
    }
    let mut lines = Vec::new();
    let mut line = String::with_capacity(text.len().min(width));
    // The width of the line so far with one space after each word (textwrap's measure).
    let mut used = 0;
    for word in text.split_ascii_whitespace() {
        if !line.is_empty() && used + word.len() > width {
            lines.push(std::mem::replace(&mut line, String::with_capacity(width)));
            used = 0;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        used += word.len() + 1;
    }
    lines.push(line);
    lines
}

/// Whether `text` is words apart by single spaces, with no space at either end and no other
/// whitespace (the empty text too): its words joined by one space each are `text` itself.
fn is_one_line(text: &str) -> bool {
    let mut after_space = true;
    for c in text.chars() {
        if c == ' ' {
            if after_space {
                return false;
            }
            after_space = true;
        } else if c.is_whitespace() {
            return false;
        } else {
            after_space = false;
        }
    }
    !after_space || text.is_empty()
}

/// [`wrap_lines`] by textwrap (any text).
fn wrap_lines_textwrap(text: &str, width: usize) -> Vec<String> {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let options = textwrap::Options::new(width)
        .break_words(false)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::wrap(&words, options).into_iter().map(|l| l.into_owned()).collect()
}

/// [`wrap_lines`] joined with newlines.
pub fn wrap(text: &str, width: usize) -> String {
    wrap_lines(text, width).join("\n")
}

/// "1 hit", "2 hits": a count with a regular noun.
pub fn plural(n: u32, word: &str) -> String {
    count(n, word, &format!("{word}s"))
}

/// `text` cut to at most `max` characters, `…` marking a cut: to quote what a user wrote.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// "1 die", "2 dice": a count with the singular or plural form.
pub fn count(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The first control character (a newline, a tab, ESC, BEL, ...) in `text`, if any. Scenario
/// names and titles go into one-line places of reports and order forms (and TOML strings), so the
/// scenario checks refuse text that holds one.
pub fn control_char(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control())
}

/// The first Unicode format character (a zero-width space, a right-to-left override, ...) in
/// `text`, if any: Unicode's general category Cf, invisible, some turning the text that follows
/// around (U+202E) or hiding a difference between two names (U+200B).
pub fn format_char(text: &str) -> Option<char> {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    text.chars().find(|c| c.general_category() == GeneralCategory::Format)
}

/// The scenario check of a name or title shown in reports and forms: an error message if it holds
/// a control character or a format character or has more than `max` characters.
pub fn check_shown(text: &str, max: usize) -> Result<(), String> {
    if let Some(c) = control_char(text) {
        return Err(format!("holds the control character {:?}; give text on one line without control characters", c));
    }
    if let Some(c) = format_char(text) {
        return Err(format!("holds the invisible format character {:?}; give text without invisible or direction-changing characters", c));
    }
    let n = text.chars().count();
    if n > max {
        return Err(format!("is {n} characters long; at most {max}"));
    }
    Ok(())
}

/// A line of untrusted text as pbem shows it (a player's press the judge relays, what an error quotes of a file): control characters (NUL, ESC of a terminal
/// colour sequence, a lone CR), the marks that reorder or hide text (U+202E and the other
/// bidirectional controls, U+200B, U+2028) and the byte order mark are written as visible escapes
/// (`\u{1b}`), so what one player sent cannot disguise itself or the judge's text around it in
/// another's mail. Tabs stay; a backslash stays as it is.
pub fn shown_safely(line: &str) -> String {
    let hidden = |c: char| {
        (c.is_control() && c != '\t')
            || matches!(c, '\u{061C}' | '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
    };
    line.chars().map(|c| if hidden(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_reordering_characters_are_shown_as_escapes() {
        assert_eq!(shown_safely("a\u{0}b\u{1b}[31mred\u{202e}txt.exe\tc\\d \u{e9}\u{1F600}\r"), "a\\u{0}b\\u{1b}[31mred\\u{202e}txt.exe\tc\\d \u{e9}\u{1F600}\\u{d}");
        assert_eq!(shown_safely("\u{feff}\u{2066}x\u{85}"), "\\u{feff}\\u{2066}x\\u{85}");
    }

    #[test]
    fn wraps_greedily_at_spaces() {
        assert_eq!(wrap_lines("aa bb  cc\tdd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap_lines("a verylongword b", 4), ["a", "verylongword", "b"]);
        assert!(wrap_lines("  ", 10).iter().all(|l| l.is_empty()));
    }

    /// The direct wrapping of ASCII text gives textwrap's lines: words of every length, runs of
    /// every kind of whitespace, every width from 0 up (a fixed pseudo-random sample).
    #[test]
    fn ascii_wraps_as_textwrap_does() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let gaps = [" ", "  ", "\t", "\n", " \r\n ", "\x0c"];
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..next(14) {
                if next(3) == 0 {
                    text.push_str(gaps[next(gaps.len() as u64) as usize]);
                }
                let len = 1 + next(12) as usize;
                text.extend((0..len).map(|_| (b'!' + next(94) as u8) as char));
                text.push_str(gaps[next(gaps.len() as u64) as usize]);
            }
            let width = next(40) as usize;
            assert_eq!(wrap_lines(&text, width), wrap_lines_textwrap(&text, width), "{text:?} at width {width}");
        }
        assert_eq!(wrap_lines("", 5), wrap_lines_textwrap("", 5));
        assert_eq!(wrap_lines("a\u{b}b", 5), wrap_lines_textwrap("a\u{b}b", 5), "vertical tab: through textwrap");
        assert_eq!(wrap_lines("caf\u{e9} au lait", 4), ["caf\u{e9}", "au", "lait"]);
    }

    /// A text within the width whose words are apart by single spaces is its one line, as
    /// textwrap makes it (ASCII or not, wide characters and control characters too); one with
    /// any other whitespace, or a space at an end or doubled, is wrapped as before.
    #[test]
    fn a_text_that_fits_is_its_own_line() {
        let texts = ["", "a", "defend Gettysburg, Cashtown", "caf\u{e9} au lait", "\u{4e2d}\u{6587} x", "a\u{1}b \u{1b}[1mc", "\u{1f600} ok"];
        for text in texts {
            assert!(is_one_line(text), "{text:?}");
            for width in text.len().saturating_sub(3)..=text.len() + 2 {
                assert_eq!(wrap_lines(text, width), wrap_lines_textwrap(text, width), "{text:?} at width {width}");
            }
        }
        for text in [" a", "a ", "a  b", "a\tb", "a\nb", "a\u{a0}b", "a\u{b}b", " ", "a\u{3000}b"] {
            assert!(!is_one_line(text), "{text:?}");
            assert_eq!(wrap_lines(text, 20), wrap_lines_textwrap(text, 20), "{text:?}");
        }
    }
}
