//! Progress bars for long runs (`simulate` with many games, `audit --all`): drawn on standard
//! error only when it is a terminal, nothing at all otherwise (cron mail, pipes, tests).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps labelled `what`, or a hidden one when standard error is not a terminal
/// or `wanted` is false. Lines printed meanwhile go through [`ProgressBar::suspend`].
pub fn bar(len: u64, what: &str, wanted: bool) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    // The template is a constant: it always parses.
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})") {
        bar.set_style(style.progress_chars("#>."));
    }
    bar.set_message(what.to_owned());
    bar
}
