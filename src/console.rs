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
use std::sync::atomic::{AtomicU8, Ordering};

/// The first failed write to standard output in this run (its error's text).
static FAILED: OnceLock<String> = OnceLock::new();

/// The exit status of a run whose output could not be written ([`finish`]; [`fail_with`]).
static FAILED_STATUS: AtomicU8 = AtomicU8::new(1);

/// For a command that changes files: a reader of standard output that goes away (`| head -1`, a
/// `| logger` that died) makes the writes fail, remembered for [`finish`], instead of ending
/// the process by SIGPIPE midway (`intake` had taken the messages and not yet sent the replies
/// it queued: tester t19a D1). A sendmail transport that exits before reading its whole mail
/// then fails that mail's sending instead of ending the run. The other commands keep SIGPIPE's
/// default (set in `main`), so `pbem status --all | head` ends quietly, like other Unix tools.
pub fn outlive_the_reader() {
    #[cfg(unix)]
    // SAFETY: only sets a signal disposition to "ignore"; called before the command starts threads.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// The exit status [`finish`] gives when standard output could not be written: 1 unless set
/// (`intake --stdin`: 75, as for any of its failures, so that the mail system keeps the message).
pub fn fail_with(status: u8) {
    FAILED_STATUS.store(status, Ordering::Relaxed);
}

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

/// Writes `bytes` to standard output at once (flushed), for a command whose output is a file's
/// bytes (`-` as a file name); an error says it is standard output that could not be written.
pub fn out_now(bytes: &[u8]) -> Result<(), crate::error::Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(crate::error::Error::Output)
}

/// Writes `args` to standard error; a failure is dropped.
pub fn err(args: fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// At the end of a run: flushes standard output and, if any write to it failed, returns `Err`
/// with the line to print and the exit status ([`fail_with`]; 1 unless set).
pub fn finish() -> Result<(), (String, u8)> {
    if let Err(e) = std::io::stdout().lock().flush() {
        failed(&e);
    }
    match FAILED.get() {
        Some(e) => Err((format!("cannot write to standard output: {e}"), FAILED_STATUS.load(Ordering::Relaxed))),
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
