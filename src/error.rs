//! The library's error type: every message says what went wrong and where (file, line, field).

use std::path::PathBuf;

/// Everything the core can fail with. `Display` is the one-line cause the CLI prints.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A problem in a file the user gave or the game holds, with its place when known.
    #[error("{}{}{}: {message}", .file.display(), .line.map(|l| format!(":{l}")).unwrap_or_default(), .field.as_ref().map(|f| format!(": {f}")).unwrap_or_default())]
    Input { file: PathBuf, line: Option<usize>, field: Option<String>, message: String },
    /// A file refused for several problems at once (an order with more than one bad field):
    /// each on a line of its own, `FILE:LINE: FIELD: message`.
    #[error("{}: {} problems:{}", .file.display(), .problems.len(), .problems.iter().map(|p| format!("\n  {}", p.at(file))).collect::<String>())]
    Problems { file: PathBuf, problems: Vec<Problem> },
    /// Reading or writing a file failed.
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// Another `pbem` process holds this game's lock.
    #[error("{}: locked by another pbem run", .0.display())]
    Locked(PathBuf),
    /// A rule-level error from a game (bad scenario, bad option, corrupt state).
    #[error(transparent)]
    Game(#[from] crate::game::GameError),
    /// A signature problem.
    #[error(transparent)]
    Sig(#[from] crate::sig::SigError),
    /// An audit check failed; the message names the first failing check and file.
    #[error("audit failed: {0}")]
    Audit(String),
    /// A command-line usage problem (unknown rules, bad role, bad time).
    #[error("{0}")]
    Usage(String),
    /// The clock is behind the game's newest record (it jumped backwards): nothing was done,
    /// and a later run, with the clock right, can do it.
    #[error("{0}")]
    ClockBehind(String),
    /// A picture of the board could not be drawn (`picture::png`).
    #[error("picture: {0}")]
    Picture(String),
}

/// One problem of a file refused for several ([`Error::Problems`]): its place and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The line (from 1), when known.
    pub line: Option<usize>,
    /// The field (dotted path), when known.
    pub field: Option<String>,
    /// What is wrong and what would be accepted.
    pub message: String,
}

impl Problem {
    /// `FILE:LINE: FIELD: message`, as [`Error::Input`] shows one problem.
    pub fn at(&self, file: &std::path::Path) -> String {
        Error::Input { file: file.to_path_buf(), line: self.line, field: self.field.clone(), message: self.message.clone() }.to_string()
    }
}

impl Error {
    /// A file refused for `problems`: [`Error::Input`] for one, [`Error::Problems`] for more.
    pub fn problems(file: impl Into<PathBuf>, mut problems: Vec<Problem>) -> Self {
        let file = file.into();
        if problems.len() == 1 {
            let p = problems.remove(0);
            return Error::Input { file, line: p.line, field: p.field, message: p.message };
        }
        Error::Problems { file, problems }
    }

    /// An [`Error::Input`] with only a file and message.
    pub fn input(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Input { file: file.into(), line: None, field: None, message: message.into() }
    }
}

/// Shorthand result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
