//! Building outgoing mails (lettre's builder): replies to orders, reports, reminders.

use chrono::{DateTime, Utc};
use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart, MultiPartKind, SinglePart};

use crate::error::{Error, MailProblem, Result};

/// A mail ready for the outbox: its id (also in its `Message-ID`), envelope and bytes.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The per-message id (file name in the outbox; `<ID@domain>` is its Message-ID).
    pub id: String,
    /// Envelope sender (the judge's address).
    pub from: String,
    /// Envelope recipients.
    pub to: Vec<String>,
    /// The whole RFC 5322 message.
    pub bytes: Vec<u8>,
}

/// What to put in one mail.
pub struct Draft<'a> {
    /// The per-message id.
    pub id: String,
    /// `From` (the judge).
    pub from: &'a str,
    /// `To` (each a mailbox text, e.g. `Lee <lee@example.org>`).
    pub to: Vec<String>,
    /// `Cc`.
    pub cc: Vec<String>,
    /// Subject.
    pub subject: String,
    /// The plain-text body.
    pub body: String,
    /// Attachments: (file name, content); a name ending in `.png` is sent as `image/png`, `.tar` as
    /// `application/x-tar`, any other
    /// as plain text.
    pub attachments: Vec<(String, Vec<u8>)>,
    /// The Message-ID this answers, without brackets.
    pub in_reply_to: Option<String>,
    /// The `Date`.
    pub date: DateTime<Utc>,
}

/// The `Auto-Submitted` header (RFC 3834) every mail of the judge carries, so vacation
/// responders and other robots do not answer it: `auto-replied` on a reply, else
/// `auto-generated`.
#[derive(Clone)]
struct AutoSubmitted(&'static str);

/// The headers besides `Auto-Submitted` that keep robots from answering the judge's mail:
/// Exchange and Outlook do not read RFC 3834 but `X-Auto-Response-Suppress`, and older
/// vacation programs skip `Precedence: bulk`.
const QUIET: [(&str, &str); 2] = [("X-Auto-Response-Suppress", "All"), ("Precedence", "bulk")];

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }
    fn parse(s: &str) -> std::result::Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        match s.trim() {
            "auto-replied" => Ok(AutoSubmitted("auto-replied")),
            "auto-generated" => Ok(AutoSubmitted("auto-generated")),
            other => Err(format!("unexpected Auto-Submitted value {other:?}").into()),
        }
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.to_string())
    }
}

fn mailbox(s: &str) -> Result<Mailbox> {
    s.parse::<Mailbox>().map_err(|e| Error::Mail(MailProblem::Address { address: s.to_string(), why: e.to_string() }))
}

/// Checks a seat's address (`pbem new --player`, `pbem seat --email`) with the parser the mailer
/// uses, so an address taken in is one its mail can go to (`w2@ex.org.`, with its trailing dot,
/// is not): a bare address, without a name or `<>`, in ASCII ([`check_ascii_address`]). The error
/// says why.
pub fn check_seat_address(s: &str) -> std::result::Result<(), String> {
    let m = s.parse::<Mailbox>().map_err(|e| format!("not a mail address: {e}"))?;
    if m.name.is_some() || m.email.to_string() != s {
        return Err("give the bare address (name@domain), without a name or <>".into());
    }
    check_ascii_address(s)
}

/// Refuses an address with a non-ASCII character: an SMTP server takes one only with SMTPUTF8,
/// which pbem does not use (and most servers lack), so no mail could go to or from it.
pub fn check_ascii_address(s: &str) -> std::result::Result<(), String> {
    match s.chars().find(|c| !c.is_ascii()) {
        Some(c) => Err(format!("the mailer cannot send to or from an address with the non-ASCII letter {c:?} (SMTP needs SMTPUTF8 for it); give an ASCII address (a domain as xn--...)")),
        None => Ok(()),
    }
}

/// Whether two seat addresses reach one mailbox as far as pbem can tell: the same address in any
/// letter case, with or without a trailing dot (most MTAs deliver `a@ex.org.` to `a@ex.org`).
pub fn same_address(a: &str, b: &str) -> bool {
    let plain = |s: &str| s.parse::<Mailbox>().map_or_else(|_| s.trim().to_string(), |m| m.email.to_string()).trim_end_matches('.').to_ascii_lowercase();
    plain(a) == plain(b)
}

/// Whether `id` (a Message-ID from a sender's mail, without its angle brackets) may be quoted in
/// `In-Reply-To` and `References`: at most 900 printable ASCII characters, none of them a space
/// or an angle bracket.
fn quotable_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 900 && id.bytes().all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>')
}

/// Formats a draft into a message (Message-ID `<ID@domain of From>`).
pub fn build(d: Draft<'_>) -> Result<Outgoing> {
    let from = mailbox(d.from)?;
    let domain = from.email.domain().to_string();
    let mut b = lettre::Message::builder()
        .from(from.clone())
        .subject(d.subject)
        .message_id(Some(format!("<{}@{domain}>", d.id)))
        .date(std::time::SystemTime::from(d.date))
        .user_agent(format!("pbem {}", env!("CARGO_PKG_VERSION")));
    for t in &d.to {
        b = b.to(mailbox(t)?);
    }
    for c in &d.cc {
        b = b.cc(mailbox(c)?);
    }
    // A Message-ID no header line can hold (RFC 5322 2.1.1: 998 characters; an id has no place
    // to fold) or that is no id at all is not quoted: the reply then threads by its subject.
    if let Some(r) = d.in_reply_to.as_ref().filter(|r| quotable_id(r)) {
        b = b.in_reply_to(format!("<{r}>")).references(format!("<{r}>"));
    }
    b = b.header(AutoSubmitted(if d.in_reply_to.is_some() { "auto-replied" } else { "auto-generated" }));
    for (name, value) in QUIET {
        b = b.raw_header(HeaderValue::new(HeaderName::new_from_ascii_str(name), value.to_string()));
    }
    let text = SinglePart::plain(crlf(&d.body));
    let msg = if d.attachments.is_empty() {
        b.singlepart(text)
    } else {
        let mut mp = MultiPart::builder().kind(MultiPartKind::Mixed).boundary(boundary(&d.id, &d.body, &d.attachments)).singlepart(text);
        for (name, content) in d.attachments {
            let kind = attachment_type(&name);
            mp = mp.singlepart(Attachment::new(name).body(content, kind));
        }
        b.multipart(mp)
    }
    .map_err(|e| Error::Mail(MailProblem::Build { id: d.id.clone(), why: e.to_string() }))?;
    let env = msg.envelope();
    Ok(Outgoing {
        id: d.id,
        from: env.from().map(|a| a.to_string()).unwrap_or_default(),
        to: env.to().iter().map(|a| a.to_string()).collect(),
        bytes: msg.formatted(),
    })
}

/// `text` with each line ending in CRLF, as a mail's body has them: what lettre would make of
/// it, but in one pass (lettre inserts each `\r` into the string, moving all the text after it:
/// a reply of 100,000 lines took 27 s).
fn crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 32);
    let mut after_cr = false;
    for c in text.chars() {
        if c == '\n' && !after_cr {
            out.push('\r');
        }
        out.push(c);
        after_cr = c == '\r';
    }
    out
}

/// The multipart boundary of a mail: from its id and contents, so the same mail is the same bytes
/// on every run (lettre's own is random); `=_` never appears in base64 or quoted-printable text.
fn boundary(id: &str, body: &str, attachments: &[(String, Vec<u8>)]) -> String {
    let mut all = Vec::new();
    for part in std::iter::once((id, body.as_bytes())).chain(attachments.iter().map(|(n, c)| (n.as_str(), c.as_slice()))) {
        all.extend((part.0.len() as u64).to_be_bytes());
        all.extend(part.0.as_bytes());
        all.extend((part.1.len() as u64).to_be_bytes());
        all.extend(part.1);
    }
    format!("=_pbem_{}", &crate::commit::sha256_hex(&all)[..32])
}

/// A stable id for a mail about `parts` (e.g. `["report", game, "3", role]`): the same parts
/// always give the same id, so a rerun never queues the same mail twice.
pub fn stable_id(parts: &[&str]) -> String {
    let mut all = Vec::new();
    for p in parts {
        all.extend((p.len() as u64).to_be_bytes());
        all.extend(p.as_bytes());
    }
    let kind: String = parts.first().copied().unwrap_or("mail").chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("pbem-{kind}-{}", &crate::commit::sha256_hex(&all)[..32])
}

/// The MIME type of an attachment, by its name's ending: a picture, the public record's archive,
/// else text (order forms).
fn attachment_type(name: &str) -> ContentType {
    let lower = name.to_ascii_lowercase();
    let kind = if lower.ends_with(".png") {
        "image/png"
    } else if lower.ends_with(".tar") {
        "application/x-tar"
    } else {
        return ContentType::TEXT_PLAIN;
    };
    ContentType::parse(kind).expect("valid MIME type")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gets_crlf_line_endings_once() {
        assert_eq!(crlf("a\nb\r\nc\r\r\n\n\u{e9}\n"), "a\r\nb\r\nc\r\r\n\r\n\u{e9}\r\n");
        assert_eq!(crlf("\nx"), "\r\nx");
        assert_eq!(crlf(""), "");
    }

    #[test]
    fn seat_addresses_are_what_the_mailer_sends_to_and_compare_as_one_mailbox() {
        assert!(check_seat_address("w2@ex.org").is_ok());
        // What the mailer refuses, and a name or <> or space around an address (bare ones only).
        for bad in ["w2@ex.org.", "w2@", "w2", ""] {
            assert!(check_seat_address(bad).is_err() && mailbox(bad).is_err(), "{bad:?}");
        }
        for bad in ["<w2@ex.org>", "W <w2@ex.org>", " w2@ex.org", "ü@bücher.de", "w2@bücher.de", "jörg@ex.org"] {
            assert!(check_seat_address(bad).is_err(), "{bad:?}");
        }
        assert!(same_address("w2@ex.org.", "W2@Ex.Org") && same_address("W <w2@ex.org>", "w2@ex.org"));
        assert!(!same_address("w2@ex.org", "w1@ex.org") && !same_address("w2@ex.org", "w2@ex.org.uk"));
    }
}
