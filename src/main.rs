//! The `pbem` binary: a thin shell over [`pbem::cli::run`].

fn main() -> std::process::ExitCode {
    pbem::cli::main()
}
