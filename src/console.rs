//! What pbem prints on its standard output and standard error, and what a failed write there does.
//!
//! `println!` panics when standard output cannot be written (`pbem status GAME >/dev/full`, a full
//! disk under `> file`), and `eprintln!` when standard error cannot: no input may make pbem panic.
//! Here a failed write to standard output never stops the work under way (a step half reported
//! is worse than a line lost): it is remembered, and the run then exits 1 naming it
//! ([`finish`]), as coreutils do. A failed write to standard error is dropped: there is nowhere
//! left to tell it. A standard output the shell closed (`>&-`) is no failure: Rust's runtime
//! opens `/dev/null` in its place before `main`, so it reads as `>/dev/null`.

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;

/// The first failed write to standard output in this run (its error's text).
static FAILED: OnceLock<String> = OnceLock::new();

/// Writes `args` to standard output; a failure is remembered for [`finish`], never returned.
pub fn out(args: fmt::Arguments) {
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        failed(&e);
    }
}

/// Writes `bytes` to standard output, as [`out`].
pub fn out_bytes(bytes: &[u8]) {
    if let Err(e) = std::io::stdout().lock().write_all(bytes) {
        failed(&e);
    }
}

/// Remembers a failed write to standard output made elsewhere (clap's own printing), for [`finish`].
pub fn failed(e: &std::io::Error) {
    let _ = FAILED.set(e.to_string());
}

/// Writes `args` to standard error; a failure is dropped.
pub fn err(args: fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// At the end of a run: flushes standard output and, if any write to it failed, says so on
/// standard error and returns `Err` with the error's text (the caller exits 1).
pub fn finish() -> Result<(), String> {
    if let Err(e) = std::io::stdout().lock().flush() {
        failed(&e);
    }
    match FAILED.get() {
        Some(e) => Err(format!("cannot write to standard output: {e}")),
        None => Ok(()),
    }
}

/// `print!` whose failure is remembered for [`finish`] instead of panicking.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::console::out(format_args!($($t)*)) };
}

/// `println!` whose failure is remembered for [`finish`] instead of panicking.
#[macro_export]
macro_rules! outln {
    () => { $crate::console::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` whose failure is dropped instead of panicking.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::console::err(format_args!("{}\n", format_args!($($t)*))) };
}
