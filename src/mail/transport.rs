//! Outgoing transports: a folder (dry run), the local sendmail, SMTP (STARTTLS, implicit TLS or
//! plain on loopback; AUTH; rustls, no OpenSSL).

use std::path::PathBuf;
use std::time::Duration;

use std::error::Error as _;

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{Address, SmtpTransport, Transport as _};

use super::config::{Security, TransportConfig};
use crate::error::{Error, MailProblem, Result};

/// Why a message was not handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    /// What went wrong, as a sentence for the host.
    pub message: String,
    /// What it means for the message.
    pub kind: Failure,
}

/// What a failed send means for the message and for the rest of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// This message failed for now (a 4xx reply, a sendmail that could not queue it): it stays
    /// queued and is tried again by the next run.
    Transient,
    /// This message cannot go, for good (a 5xx reply to its sender, a recipient or its text; lettre
    /// refusing it for this server, as a non-ASCII address without SMTPUTF8; sendmail's exit
    /// status 65, 67 or 68): trying again would fail the same way. The other messages still go.
    Permanent,
    /// The server could not be reached or refused the session (no connection, no answer in time,
    /// TLS, login; a sendmail that cannot be started): every message would fail the same way,
    /// each after its own timeout, so the flush stops and all wait.
    Unreachable,
}

impl SendError {
    /// A failure of this one message, for now.
    pub fn message(message: impl Into<String>) -> Self {
        SendError { message: message.into(), kind: Failure::Transient }
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Something that accepts a whole message for delivery.
pub trait Transport {
    /// Hands one message over; `Ok` only when the other side accepted it.
    fn send(&self, id: &str, from: &str, to: &[String], bytes: &[u8]) -> std::result::Result<(), SendError>;
    /// Checks, before any message is tried, that the other side can be reached and takes the
    /// login; an error here is about the server, not a message. Default: nothing to check.
    fn check(&self) -> std::result::Result<(), SendError> {
        Ok(())
    }
}

/// Writes each message to `DIR/ID.eml` (dry runs, tests).
pub struct FileTransport {
    /// The folder.
    pub dir: PathBuf,
}

impl Transport for FileTransport {
    /// Removes the temp files a run killed while writing a message left in the folder.
    fn check(&self) -> std::result::Result<(), SendError> {
        let _ = crate::store::remove_stale_temps(&self.dir);
        Ok(())
    }
    fn send(&self, id: &str, _from: &str, _to: &[String], bytes: &[u8]) -> std::result::Result<(), SendError> {
        // The mails hold private reports: the folder is the host's alone, like ROOT/.mail.
        std::fs::create_dir_all(&self.dir).map_err(|e| SendError::message(format!("{}: {e}", self.dir.display())))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| SendError::message(format!("{}: {e}", self.dir.display())))?;
        }
        crate::store::write_atomic(&self.dir.join(format!("{id}.eml")), bytes).map_err(|e| SendError::message(e.to_string()))
    }
}

fn envelope(from: &str, to: &[String]) -> std::result::Result<Envelope, String> {
    let from: Address = from.parse().map_err(|e| format!("envelope sender {from:?}: {e}"))?;
    let to = to.iter().map(|t| t.parse::<Address>().map_err(|e| format!("recipient {t:?}: {e}"))).collect::<std::result::Result<Vec<_>, _>>()?;
    Envelope::new(Some(from), to).map_err(|e| e.to_string())
}

/// A lettre transport (SMTP or sendmail).
pub enum Lettre {
    /// SMTP, with the server as `host:port`, its timeout in seconds and the login user (named in
    /// its errors).
    Smtp(Box<SmtpTransport>, Server),
    /// sendmail, with the command it runs and its name in errors ([`sendmail`]).
    Sendmail(std::ffi::OsString, String),
}

/// The sendmail run when the config names none (found on the PATH, as lettre's default).
const SENDMAIL: &str = "sendmail";

/// Hands `bytes` to the local sendmail as `PROGRAM -i -f FROM -- TO...` (the interface every MTA's
/// sendmail takes); `Ok` when it exits 0, else its error output. On Linux the message is the
/// child's standard input as a whole in-memory file (`memfd_create`), not a pipe: if this process
/// is killed while sendmail runs, sendmail still reads the whole message, where from a pipe it
/// would read an end of input mid-message and deliver what came before it (an empty or cut mail;
/// found by tester T8). Elsewhere a pipe, as lettre does.
///
/// What a failure means: sendmail that cannot be started fails every mail alike (the session);
/// an exit status that sysexits(3) makes about this mail for good (65 `EX_DATAERR`, 67
/// `EX_NOUSER`, 68 `EX_NOHOST`) fails this mail for good; any other (75 `EX_TEMPFAIL` above all)
/// this mail for now.
fn sendmail(program: &std::ffi::OsStr, env: &Envelope, bytes: &[u8]) -> std::result::Result<(), (Failure, String)> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut c = Command::new(program);
    c.arg("-i");
    if let Some(from) = env.from() {
        c.arg("-f").arg(from);
    }
    c.arg("--").args(env.to().iter().map(ToString::to_string)).stdout(Stdio::piped()).stderr(Stdio::piped());
    let not_run = |e: std::io::Error| (Failure::Unreachable, format!("it could not be run: {e}"));
    let for_now = |e: std::io::Error| (Failure::Transient, e.to_string());
    let child = match whole_file(bytes) {
        Some(file) => c.stdin(Stdio::from(file)).spawn().map_err(not_run)?,
        None => {
            let _guard = crate::sig::PipeErrorsNotFatal::new();
            let mut child = c.stdin(Stdio::piped()).spawn().map_err(not_run)?;
            child.stdin.take().map(|mut i| i.write_all(bytes)).transpose().map_err(for_now)?;
            child
        }
    };
    let out = child.wait_with_output().map_err(for_now)?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let kind = if matches!(out.status.code(), Some(65 | 67 | 68)) { Failure::Permanent } else { Failure::Transient };
    Err((kind, if said.is_empty() { format!("it exited with {}", out.status) } else { format!("{said} ({})", out.status) }))
}

/// `bytes` in an in-memory file read from its start (Linux); `None` elsewhere or if one cannot be
/// made (then a pipe carries the message).
fn whole_file(bytes: &[u8]) -> Option<std::fs::File> {
    #[cfg(target_os = "linux")]
    {
        use std::io::{Seek, Write};
        use std::os::fd::FromRawFd;
        // SAFETY: the name is a NUL-terminated literal.
        let fd = unsafe { libc::memfd_create(c"pbem-mail".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just made and nothing else owns it.
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        f.write_all(bytes).and_then(|()| f.rewind()).ok()?;
        Some(f)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = bytes;
        None
    }
}

/// What an SMTP error names: the server, the timeout, the login.
pub struct Server {
    /// `host:port`.
    pub address: String,
    /// The timeout in seconds.
    pub timeout_secs: u64,
    /// The login user, if any.
    pub user: Option<String>,
}

impl Transport for Lettre {
    fn send(&self, _id: &str, from: &str, to: &[String], bytes: &[u8]) -> std::result::Result<(), SendError> {
        let env = envelope(from, to).map_err(|m| SendError { message: m, kind: Failure::Permanent })?;
        match self {
            Lettre::Smtp(t, server) => t.send_raw(&env, bytes).map(|_| ()).map_err(|e| smtp_error(&e, server, false)),
            Lettre::Sendmail(program, command) => sendmail(program, &env, bytes).map_err(|(kind, e)| SendError { message: format!("sendmail ({command}) failed: {}", without_os_error(&e)), kind }),
        }
    }
    fn check(&self) -> std::result::Result<(), SendError> {
        match self {
            Lettre::Smtp(t, server) => match t.test_connection() {
                Ok(true) => Ok(()),
                Ok(false) => Err(SendError { message: format!("the SMTP server {} did not answer a NOOP after the login", server.address), kind: Failure::Unreachable }),
                Err(e) => Err(smtp_error(&e, server, true)),
            },
            Lettre::Sendmail(..) => Ok(()),
        }
    }
}

/// An SMTP error as a sentence for the host, and what it means for the message. `session`: the
/// error came while connecting and logging in (any reply then is about the server, not a mail).
fn smtp_error(e: &lettre::transport::smtp::Error, server: &Server, session: bool) -> SendError {
    let at = &server.address;
    let unreachable = |message: String| SendError { message, kind: Failure::Unreachable };
    if let Some(code) = e.status() {
        let text = e.source().map(|s| s.to_string()).unwrap_or_default();
        let reply = format!("{code} {}", text.trim()).trim().to_string();
        let login = matches!(code.to_string().as_str(), "530" | "534" | "535" | "538" | "454") && server.user.is_some();
        if login {
            let user = server.user.as_deref().unwrap_or("");
            return unreachable(format!("the SMTP server {at} refused the login as {user}: {reply}"));
        }
        if session {
            return unreachable(format!("the SMTP server {at} refused the session: {reply}"));
        }
        return if e.is_permanent() {
            SendError { message: format!("the SMTP server {at} refused it for good: {reply}"), kind: Failure::Permanent }
        } else {
            SendError { message: format!("the SMTP server {at} refused it for now: {reply}"), kind: Failure::Transient }
        };
    }
    if e.is_tls() {
        return unreachable(format!("the TLS handshake with the SMTP server {at} failed: {}", innermost(e)));
    }
    if let Some(io) = io_source(e) {
        use std::io::ErrorKind as K;
        let text = without_os_error(&io.to_string());
        return unreachable(match io.kind() {
            K::TimedOut | K::WouldBlock => format!("the SMTP server {at} did not answer within {} s", server.timeout_secs),
            K::ConnectionRefused => format!("the SMTP server {at} refused the connection (is it running, and is the port right?)"),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => format!("the SMTP server {at} closed the connection ({text})"),
            // rustls reports a failed handshake (an unknown certificate, a wrong name) this way.
            K::InvalidData => format!("the TLS handshake with the SMTP server {at} failed: {text}"),
            K::HostUnreachable | K::NetworkUnreachable | K::NetworkDown => format!("the SMTP server {at} cannot be reached ({text})"),
            _ if text.contains("lookup address") || text.contains("name resolution") => format!("the name of the SMTP server {at} could not be looked up (DNS: {text})"),
            _ => format!("the connection to the SMTP server {at} failed: {text}"),
        });
    }
    let text = without_os_error(&innermost(e));
    if e.is_client() && text.to_lowercase().contains("auth") {
        return unreachable(format!("the SMTP server {at} refused the login: {text}"));
    }
    if !session && e.is_client() && refused_by_client(&text) {
        return SendError { message: format!("it cannot go through the SMTP server {at}: {text}"), kind: Failure::Permanent };
    }
    unreachable(format!("the SMTP session with {at} failed: {text}"))
}

/// Whether lettre's error text is its refusal of one mail before sending it, which this server
/// will never take: an address with a non-ASCII character when the server does not announce
/// SMTPUTF8, a message with one when it does not announce 8BITMIME (lettre 0.11's wording; a
/// client error it does not match stays about the session).
fn refused_by_client(text: &str) -> bool {
    text.contains("contains non-ascii chars but server does not support")
}

/// The first I/O error in `e`'s chain of causes.
fn io_source<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cause = c.source();
    }
    None
}

/// The text of the deepest cause of `e` (the part that says what happened).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &(dyn std::error::Error + 'static) = e;
    while let Some(c) = last.source() {
        last = c;
    }
    last.to_string()
}

/// `Connection refused (os error 111)` without its ` (os error 111)`.
fn without_os_error(s: &str) -> String {
    match s.find(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s.to_string(),
    }
}

/// The transport a config names; `None` for `kind = "none"` (queue only).
pub fn from_config(c: &TransportConfig) -> Result<Option<Box<dyn Transport>>> {
    Ok(match c {
        TransportConfig::None => None,
        TransportConfig::File { dir } => Some(Box::new(FileTransport { dir: dir.clone() })),
        TransportConfig::Sendmail { command } => Some(Box::new(match command {
            Some(c) => Lettre::Sendmail(c.into(), c.clone()),
            None => Lettre::Sendmail(SENDMAIL.into(), "sendmail on the PATH".into()),
        })),
        TransportConfig::Smtp { host, port, security, user, password_env, password_file, ca_file, timeout_secs } => {
            let tls_params = || -> Result<TlsParameters> {
                let mut b = TlsParameters::builder(host.clone());
                if let Some(ca) = ca_file {
                    let pem = crate::store::read(ca)?;
                    b = b.add_root_certificate(Certificate::from_pem(&pem).map_err(|e| Error::input(ca, format!("not a PEM certificate: {e}")))?);
                }
                b.build_rustls().map_err(|e| Error::Mail(MailProblem::Tls { host: host.clone(), why: e.to_string() }))
            };
            let port = port.unwrap_or(match security {
                Security::Starttls => 587,
                Security::Tls => 465,
                Security::None => 25,
            });
            let mut b = SmtpTransport::builder_dangerous(host.as_str()).port(port);
            b = match security {
                Security::Starttls => b.tls(Tls::Required(tls_params()?)),
                Security::Tls => b.tls(Tls::Wrapper(tls_params()?)),
                Security::None => b.tls(Tls::None),
            };
            if let Some(u) = user {
                let pass = match (password_file, password_env) {
                    (Some(f), _) => crate::store::read_text(f)?.lines().next().unwrap_or("").to_string(),
                    (None, env) => {
                        let var = env.clone().unwrap_or_else(|| "PBEM_SMTP_PASSWORD".into());
                        std::env::var(&var).map_err(|_| Error::Mail(MailProblem::Password { user: u.clone(), var: var.clone() }))?
                    }
                };
                b = b.credentials(Credentials::new(u.clone(), pass));
            }
            let timeout = timeout_secs.unwrap_or(30);
            b = b.timeout(Some(Duration::from_secs(timeout)));
            let server = Server { address: format!("{host}:{port}"), timeout_secs: timeout, user: user.clone() };
            Some(Box::new(Lettre::Smtp(Box::new(b.build()), server)))
        }
    })
}
