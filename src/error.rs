//! The library's error type: every message says what went wrong and where (file, line, field).

use std::path::{Path, PathBuf};

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
    /// Writing a command's output (a file's bytes asked for as `-`) to standard output failed.
    #[error("cannot write to standard output: {0}")]
    Output(std::io::Error),
    /// Another `pbem` process holds this game's lock.
    #[error("{}: locked by another pbem run", .0.display())]
    Locked(PathBuf),
    /// A rule-level error from a game (bad scenario, bad option, corrupt state).
    #[error(transparent)]
    Game(#[from] crate::game::GameError),
    /// A signature problem.
    #[error(transparent)]
    Sig(#[from] crate::sig::SigError),
    /// An audit check failed: the first failing check, with its file and line.
    #[error("audit failed: {0}")]
    Audit(Box<AuditFailure>),
    /// A command-line usage problem (unknown rules, bad role, bad time).
    #[error("{0}")]
    Usage(String),
    /// A value given for one of the caller's settings is refused: which setting (with the value
    /// given) and why. Shown as `SETTING: message` in the library's own terms; the command line
    /// names its flag instead (`cli::flag_line`).
    #[error("{setting}: {message}")]
    Setting { setting: Setting, message: String },
    /// A request lacks a setting it needs (nothing was done).
    #[error("{0}")]
    Missing(Missing),
    /// A mail could not be built, queued or sent for a reason of the game's or host's setup.
    #[error("{0}")]
    Mail(MailProblem),
    /// A game simulated in memory (`pbem simulate`) went wrong: which game, and how (a bug in
    /// the game or its built-in players).
    #[error("{0}")]
    Simulation(String),
    /// A well-formed request the game's present state refuses (the game is over, already paused
    /// or not paused, the deadline or seat already as asked): nothing was done; the message says why.
    #[error("{0}")]
    Refused(String),
    /// A key could not be written in OpenSSH form.
    #[error("{0}")]
    Key(String),
    /// The clock is behind the game's newest record (it jumped backwards): nothing was done,
    /// and a later run, with the clock right, can do it.
    #[error("{0}")]
    ClockBehind(String),
    /// A picture of the board could not be drawn (`picture::png`).
    #[error("picture: {0}")]
    Picture(String),
}

/// A setting the caller gave ([`Error::Setting`]), with the value given, in the library's terms.
/// The command line shows each as the flag that gave it (`cli::flag_line`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// The deadline for a kind of step: the kind and the hours given.
    Deadline { kind: String, hours: u32 },
    /// The deadline, in hours, of a step of any kind not given its own.
    DefaultDeadline(u32),
    /// The grace, in hours, after a deadline before missing orders count as NMR.
    Grace(u32),
    /// The new game's id.
    GameId(String),
    /// The key given for a new game's seat of `role`.
    SeatKey { role: String },
    /// The time zone given for a new game's seat of `role`.
    TimeZone { role: String },
    /// The address given for a new game's seat of `role`.
    SeatEmail { role: String },
    /// A host control's reason (it goes into the record).
    Reason,
    /// The seat a seat change is for.
    SeatRole(String),
    /// A seat change's new key.
    NewKey,
    /// A seat change's new address.
    Email(String),
    /// A seat change's new time zone.
    NewTimeZone(String),
    /// A judge's option `key=value` (in a new game's options or its `game.toml`).
    Option { key: String, value: String },
    /// The rules (a game's id) to simulate.
    Rules(String),
    /// A built-in player's policy.
    Policy(String),
    /// How many games to simulate.
    Games(usize),
    /// A scenario: a file or the name of a scenario shipped with the game.
    Scenario(String),
    /// The file to draw a picture into.
    Picture(PathBuf),
    /// The folder a demo game is written into.
    DemoFolder(PathBuf),
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Deadline { kind, hours } => write!(f, "deadline of {hours} hours for {kind} steps"),
            Setting::DefaultDeadline(hours) => write!(f, "deadline of {hours} hours"),
            Setting::Grace(hours) => write!(f, "grace of {hours} hours"),
            Setting::GameId(id) => write!(f, "game id {id:?}"),
            Setting::SeatKey { role } => write!(f, "key of seat {role}"),
            Setting::TimeZone { role } => write!(f, "time zone of seat {role}"),
            Setting::SeatEmail { role } => write!(f, "address of seat {role}"),
            Setting::Reason => write!(f, "reason"),
            Setting::SeatRole(role) => write!(f, "seat {role}"),
            Setting::NewKey => write!(f, "new key"),
            Setting::Email(e) => write!(f, "address {e:?}"),
            Setting::NewTimeZone(z) => write!(f, "time zone {z:?}"),
            Setting::Option { key, value } => write!(f, "option {key}={value}"),
            Setting::Rules(r) => write!(f, "rules {r}"),
            Setting::Policy(p) => write!(f, "policy {p}"),
            Setting::Games(n) => write!(f, "{n} games"),
            Setting::Scenario(s) => write!(f, "scenario {s}"),
            Setting::Picture(p) => write!(f, "picture {}", p.display()),
            Setting::DemoFolder(p) => write!(f, "demo folder {}", p.display()),
        }
    }
}

/// What a request lacks ([`Error::Missing`]). The command line words each with its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// A new game needs exactly one seat for each of `roles`; these were `given`.
    Seats { roles: Vec<String>, given: Vec<String> },
    /// Abandoning a game needs a reason.
    AbandonReason,
    /// A seat change needs a new address, a new key or both.
    SeatChange,
    /// `intake` needs a source of mail: a flag, or the host config's `[intake]`.
    IntakeSource,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Seats { roles, given } => write!(f, "this game needs exactly one seat for each role: {}", Missing::roles_got(roles, given)),
            Missing::AbandonReason => write!(f, "abandoning a game needs a reason (it goes into the last record)"),
            Missing::SeatChange => write!(f, "a seat change needs a new address, key or time zone"),
            Missing::IntakeSource => write!(f, "give --maildir DIR, --mbox FILE or --stdin, or set [intake] maildir or mbox in the host config"),
        }
    }
}

impl Missing {
    /// `A, B (got: C)` (`none` when nothing was given): the roles wanted and given.
    pub fn roles_got(roles: &[String], given: &[String]) -> String {
        format!("{} (got: {})", roles.join(", "), if given.is_empty() { "none".to_string() } else { given.join(", ") })
    }
}

impl Error {
    /// An [`Error::Setting`]: `setting` refused, with why.
    pub fn setting(setting: Setting, message: impl Into<String>) -> Self {
        Error::Setting { setting, message: message.into() }
    }

    /// Whether the file the error names is `dir` or lies in it (an error about a game's own
    /// folder, not about an order given to it from elsewhere).
    pub fn names_under(&self, dir: &Path) -> bool {
        match self {
            Error::Input { file: p, .. } | Error::Problems { file: p, .. } | Error::Io { path: p, .. } | Error::Locked(p) => p.starts_with(dir),
            _ => false,
        }
    }
}

/// Why a mail could not be built, queued or sent ([`Error::Mail`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailProblem {
    /// An address (a seat's, the host's) that is not a mail address.
    #[error("{address:?} is not a mail address: {why}")]
    Address { address: String, why: String },
    /// The mail with this id could not be put together.
    #[error("cannot build mail {id}: {why}")]
    Build { id: String, why: String },
    /// A mail id the outbox cannot file (only letters, digits and a few marks make a file name).
    #[error("bad outbox id {0:?}")]
    OutboxId(String),
    /// The TLS setup for the SMTP server `host` failed.
    #[error("TLS setup for {host}: {why}")]
    Tls { host: String, why: String },
    /// The SMTP `user`'s password is neither in a file nor in the environment variable `var`.
    #[error("SMTP user {user}: set the password in the environment variable {var} (or password_file)")]
    Password { user: String, var: String },
}

/// What an audit found wrong ([`Error::Audit`]): the file (and line) it is about, which check
/// failed, and what was found, shown as `FILE[:LINE]: detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFailure {
    /// The file the failure is about (`None` only for a failure passed on without one).
    pub path: Option<PathBuf>,
    /// The line (from 1) in that file, when known.
    pub line: Option<usize>,
    /// Which check failed.
    pub check: AuditCheck,
    /// What was found, in words (after the file and line).
    pub detail: String,
    /// The pbem version that made the game (empty: unknown) when it is not this one: the failure
    /// adds that reports and rules may differ between versions.
    pub made_by: Option<String>,
}

/// Which of the audit's checks failed ([`AuditFailure::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditCheck {
    /// A file the game must hold is not there.
    Missing,
    /// `game.toml`, `scenario.toml` or the keys they name (host key, seat keys).
    Setup,
    /// The setup over time: record 0's setup hash, seat changes, host control records.
    History,
    /// Which files are there: records without gaps, nothing past the last record, receipts and
    /// host files only of steps a record reached, both or neither of `states/` and `reports/`.
    Inventory,
    /// A record's own form: canonical JSON, its index and game, its opening and resolution.
    Record,
    /// A record's `prev` is not the hash of the record before.
    HashChain,
    /// A host signature (record, receipt) or a player's signature on an order.
    Signature,
    /// A receipt: in its place, numbered, for the order a record used, the newest.
    Receipt,
    /// A revealed order: its commitment, header, legality, nonce, the host's sealed copy.
    Order,
    /// A host seed against its commitment, a step seed against its nonces, a roll against the seed.
    Seed,
    /// The state key and the state commitments.
    Commitment,
    /// What a replay makes: the state, the reports, the events, NMR orders, the next step.
    Replay,
    /// Orders withheld and revealed exactly when the game's rule says.
    Publication,
    /// Times: deadlines, receipts issued while the step was open, NMR only after the deadline.
    Times,
    /// A receipt a player holds, against the game (`pbem audit --receipts`).
    HeldReceipt,
    /// A report a player kept, against the game (`pbem audit --reports`).
    KeptReport,
}

impl AuditFailure {
    /// A failure of `check` about `path`, with what was found.
    pub fn new(check: AuditCheck, path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        AuditFailure { path: Some(path.into()), line: None, check, detail: detail.into(), made_by: None }
    }

    /// The same at `line` of the file.
    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    /// `e` as a failure of `check`, keeping its place: an audit failure as it is, a problem in a
    /// file (or reading it) about that file and line, anything else without a file.
    pub fn from_error(check: AuditCheck, e: Error) -> Self {
        match e {
            Error::Audit(f) => *f,
            Error::Input { file, line, field, message } => {
                let detail = field.map_or(message.clone(), |f| format!("{f}: {message}"));
                AuditFailure::new(check, file, detail).at_line(line)
            }
            Error::Io { path, source } => AuditFailure::new(check, path, source.to_string()),
            e => AuditFailure { path: None, line: None, check, detail: e.to_string(), made_by: None },
        }
    }
}

impl std::fmt::Display for AuditFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.path, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{l}: {}", p.display(), self.detail)?,
            (Some(p), None) => write!(f, "{}: {}", p.display(), self.detail)?,
            (None, _) => write!(f, "{}", self.detail)?,
        }
        if let Some(v) = &self.made_by {
            let v = if v.is_empty() { "of unknown version".to_string() } else { v.clone() };
            write!(f, ". Note: the game was made by pbem {v}, this is pbem {}: reports and rules may differ between versions", env!("CARGO_PKG_VERSION"))?;
        }
        Ok(())
    }
}

impl From<AuditFailure> for Error {
    fn from(f: AuditFailure) -> Self {
        Error::Audit(Box::new(f))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The library words every setting in its own terms: no command-line flag in any of them.
    #[test]
    fn settings_and_missing_ones_name_no_flag() {
        let s = |x: &str| x.to_string();
        let settings = [
            Setting::Deadline { kind: s("move"), hours: 0 },
            Setting::DefaultDeadline(0),
            Setting::Grace(9000),
            Setting::GameId(s("a b")),
            Setting::SeatKey { role: s("union") },
            Setting::TimeZone { role: s("union") },
            Setting::SeatEmail { role: s("union") },
            Setting::Reason,
            Setting::SeatRole(s("meade")),
            Setting::NewKey,
            Setting::Email(s("x")),
            Setting::Option { key: s("press"), value: s("some") },
            Setting::Rules(s("chess")),
            Setting::Policy(s("reckless")),
            Setting::Games(0),
            Setting::Scenario(s("bogus")),
            Setting::Picture(PathBuf::from("b.gif")),
            Setting::DemoFolder(PathBuf::from("out")),
        ];
        let missing = [Missing::Seats { roles: vec![s("a"), s("b")], given: vec![] }, Missing::AbandonReason, Missing::SeatChange];
        let errors = settings.into_iter().map(|st| Error::setting(st, "refused")).chain(missing.into_iter().map(Error::Missing));
        for e in errors {
            let text = e.to_string();
            assert!(!text.contains("--") && !text.contains("pbem "), "{text}");
        }
        let e = Error::setting(Setting::Deadline { kind: s("move"), hours: 0 }, "deadline hours must be at least 1");
        assert_eq!(e.to_string(), "deadline of 0 hours for move steps: deadline hours must be at least 1");
        assert_eq!(Error::Missing(Missing::Seats { roles: vec![s("a"), s("b")], given: vec![] }).to_string(), "this game needs exactly one seat for each role: a, b (got: none)");
    }
}
