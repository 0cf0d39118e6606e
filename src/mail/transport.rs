//! Outgoing transports: a folder (dry run), the local sendmail, SMTP (STARTTLS, implicit TLS or
//! plain on loopback; AUTH; rustls, no OpenSSL).

use std::path::PathBuf;
use std::time::Duration;

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{Address, SendmailTransport, SmtpTransport, Transport as _};

use super::config::{Security, TransportConfig};
use crate::error::{Error, Result};

/// Why a message was not handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    /// What went wrong, for the host.
    pub message: String,
    /// The server could not be reached at all (no connection, TLS failure, no answer in time):
    /// the next messages would fail the same way, each after its own timeout, so a flush stops.
    pub unreachable: bool,
}

impl SendError {
    /// A failure of this one message.
    pub fn message(message: impl Into<String>) -> Self {
        SendError { message: message.into(), unreachable: false }
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
}

/// Writes each message to `DIR/ID.eml` (dry runs, tests).
pub struct FileTransport {
    /// The folder.
    pub dir: PathBuf,
}

impl Transport for FileTransport {
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
    /// SMTP.
    Smtp(Box<SmtpTransport>),
    /// sendmail, with the command it runs (named in its errors).
    Sendmail(SendmailTransport, String),
}

impl Transport for Lettre {
    fn send(&self, _id: &str, from: &str, to: &[String], bytes: &[u8]) -> std::result::Result<(), SendError> {
        let env = envelope(from, to).map_err(SendError::message)?;
        match self {
            Lettre::Smtp(t) => t.send_raw(&env, bytes).map(|_| ()).map_err(|e| SendError {
                // An SMTP reply (4xx, 5xx) is about this message; anything else is the server.
                unreachable: !(e.is_transient() || e.is_permanent()),
                message: if e.is_timeout() { format!("SMTP: no answer in time: {e}") } else { format!("SMTP: {e}") },
            }),
            Lettre::Sendmail(t, command) => {
                let _guard = PipeErrorsNotFatal::new();
                t.send_raw(&env, bytes).map_err(|e| SendError::message(format!("sendmail ({command}): {e}")))
            }
        }
    }
}

/// While alive, writing to a pipe whose reader has gone returns an error instead of killing the
/// process. The binary gives SIGPIPE its default action (so `pbem ... | head` ends quietly), but
/// a sendmail that exits before reading the whole message must fail that one mail (it stays
/// queued), not end the cron run. The previous action is restored on drop. Process-wide: the mail
/// runs are single-threaded.
struct PipeErrorsNotFatal {
    #[cfg(unix)]
    previous: libc::sighandler_t,
}

impl PipeErrorsNotFatal {
    fn new() -> Self {
        // SAFETY: only swaps the disposition of SIGPIPE; no handler code runs.
        #[cfg(unix)]
        return PipeErrorsNotFatal { previous: unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } };
        #[cfg(not(unix))]
        PipeErrorsNotFatal {}
    }
}

impl Drop for PipeErrorsNotFatal {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved in `new`.
        #[cfg(unix)]
        unsafe {
            libc::signal(libc::SIGPIPE, self.previous);
        }
    }
}

/// The transport a config names; `None` for `kind = "none"` (queue only).
pub fn from_config(c: &TransportConfig) -> Result<Option<Box<dyn Transport>>> {
    Ok(match c {
        TransportConfig::None => None,
        TransportConfig::File { dir } => Some(Box::new(FileTransport { dir: dir.clone() })),
        TransportConfig::Sendmail { command } => Some(Box::new(match command {
            Some(c) => Lettre::Sendmail(SendmailTransport::new_with_command(c), c.clone()),
            None => Lettre::Sendmail(SendmailTransport::new(), "sendmail on the PATH".into()),
        })),
        TransportConfig::Smtp { host, port, security, user, password_env, password_file, ca_file, timeout_secs } => {
            let tls_params = || -> Result<TlsParameters> {
                let mut b = TlsParameters::builder(host.clone());
                if let Some(ca) = ca_file {
                    let pem = crate::store::read(ca)?;
                    b = b.add_root_certificate(Certificate::from_pem(&pem).map_err(|e| Error::input(ca, format!("not a PEM certificate: {e}")))?);
                }
                b.build_rustls().map_err(|e| Error::Usage(format!("TLS setup for {host}: {e}")))
            };
            let mut b = SmtpTransport::builder_dangerous(host.as_str());
            b = match security {
                Security::Starttls => b.port(port.unwrap_or(587)).tls(Tls::Required(tls_params()?)),
                Security::Tls => b.port(port.unwrap_or(465)).tls(Tls::Wrapper(tls_params()?)),
                Security::None => b.port(port.unwrap_or(25)).tls(Tls::None),
            };
            if let Some(u) = user {
                let pass = match (password_file, password_env) {
                    (Some(f), _) => crate::store::read_text(f)?.lines().next().unwrap_or("").to_string(),
                    (None, env) => {
                        let var = env.clone().unwrap_or_else(|| "PBEM_SMTP_PASSWORD".into());
                        std::env::var(&var).map_err(|_| Error::Usage(format!("SMTP user {u}: set the password in the environment variable {var} (or password_file)")))?
                    }
                };
                b = b.credentials(Credentials::new(u.clone(), pass));
            }
            b = b.timeout(Some(Duration::from_secs(timeout_secs.unwrap_or(30))));
            Some(Box::new(Lettre::Smtp(Box::new(b.build()))))
        }
    })
}
