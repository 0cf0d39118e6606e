//! Text helpers shared by the games' reports and forms (which go out by email): wrapping lines,
//! counts of things in words.

/// Breaks `text` into lines of at most `width` columns at spaces (greedy, first fit; runs of
/// whitespace count as one space; a word longer than `width` gets a line of its own, unbroken).
pub fn wrap_lines(text: &str, width: usize) -> Vec<String> {
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

/// "1 die", "2 dice": a count with the singular or plural form.
pub fn count(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_greedily_at_spaces() {
        assert_eq!(wrap_lines("aa bb  cc\tdd", 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap_lines("a verylongword b", 4), ["a", "verylongword", "b"]);
        assert!(wrap_lines("  ", 10).iter().all(|l| l.is_empty()));
    }
}
