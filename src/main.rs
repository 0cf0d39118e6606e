//! The `pbem` binary: a thin shell over [`pbem::cli::main`].

fn main() -> std::process::ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away (`pbem ... | head`)
    // instead of panicking on a broken pipe.
    #[cfg(unix)]
    // SAFETY: called first thing, before any thread exists; it only resets a signal disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    pbem::cli::main()
}
