//! What the judge answers a message: the reply's subject and text, and the cap on replies to one
//! address per hour (kept in the mail log, `ROOT/.mail/log`).

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::config::HostConfig;
use super::extract::Extracted;
use super::log::MailLog;
use super::outbox::Outbox;
use crate::error::Result;
use crate::model::Receipt;
use crate::{pipeline, store};

/// The paragraph every reply that found no usable order ends with: how to send orders.
pub(super) fn how_to_send() -> String {
    paragraph(
        "",
        "How to send orders: fill in the order form from your report, sign it with `pbem sign --key KEY FILE` \
(or `ssh-keygen -Y sign -f KEY -n pbem-orders FILE`) and either attach FILE and FILE.sig as plain-text \
attachments, or sign with `pbem sign --append` and attach the file or paste it whole (from its first line \
to the END SSH SIGNATURE line) into a plain-text message. Several order files in one message are fine.",
    )
}

/// The width of a reply's paragraphs, in columns (as a mail reader shows plain text unwrapped).
const REPLY_WIDTH: usize = 76;

/// `text` wrapped to [`REPLY_WIDTH`] with every line after `indent`, ending in a newline: a
/// reply's sentences are broken only between words, never by a line hand-wrapped in the source.
pub(super) fn paragraph(indent: &str, text: &str) -> String {
    let width = REPLY_WIDTH.saturating_sub(indent.chars().count()).max(20);
    crate::text::wrap_lines(text, width).iter().map(|l| format!("{indent}{l}\n")).collect()
}

/// `Re: SUBJECT` (the subject cut short: [`super::extract::quote_short`]), tagged `[pbem GAME]` (as the judge's
/// other mails are) when the orders named known games and the subject does not carry the tag yet.
/// A subject of the judge's own (tagged, as a report's or a reminder's: the player replied to it)
/// says what was needed when it was sent ("orders needed by ..."), not what this answers: the
/// reply is then `[pbem GAME] Re: your message` (tester t18a-3).
pub(super) fn reply_subject(s: &str, games: &[&str]) -> String {
    let quoted = judge_tags(s);
    if !quoted.is_empty() {
        let mut all: Vec<&str> = quoted.iter().map(String::as_str).collect();
        all.extend(games.iter().filter(|g| !quoted.iter().any(|q| q == *g)));
        // As long as a quoted subject at most (tester t18c-4: 3,000 tags came back).
        let tags = super::extract::quote_short(&all.iter().map(|g| format!("[pbem {g}]")).collect::<Vec<_>>().join(" "));
        return format!("{tags} Re: your message");
    }
    let s = &super::extract::quote_short(s.trim());
    let base = if s.is_empty() {
        "Re: your orders".to_string()
    } else if s.to_ascii_lowercase().starts_with("re:") {
        s.to_string()
    } else {
        format!("Re: {s}")
    };
    let tags: Vec<String> = games.iter().map(|g| format!("[pbem {g}]")).filter(|t| !base.contains(t.as_str())).collect();
    if tags.is_empty() { base } else { format!("{} {base}", tags.join(" ")) }
}

/// The game ids of the `[pbem GAME]` tags in subject `s`, in order, each once (only what could
/// be a game's id: [`crate::pipeline::safe_id`]).
fn judge_tags(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split("[pbem ").skip(1) {
        let Some((id, _)) = part.split_once(']') else { continue };
        if crate::pipeline::safe_id(id) && !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    out
}

/// The result of one order found in a message.
#[derive(Debug, Clone)]
pub struct OrderResult {
    /// Where it was found.
    pub label: String,
    /// The game it named, if it could be read.
    pub game: Option<String>,
    /// The role it named.
    pub role: Option<String>,
    /// The receipt, when accepted.
    pub receipt: Option<Receipt>,
    /// The receipt file's bytes and its signature's, when accepted now (it may not be written
    /// yet: [`crate::pipeline::submit_grouped`]).
    pub signed: Option<(Vec<u8>, Vec<u8>)>,
    /// Warnings that came with an acceptance.
    pub warnings: Vec<String>,
    /// Why it was refused.
    pub error: Option<String>,
    /// The refusal is about the file's form (it could not be read as a signed order, or its
    /// signature does not match): what a mail program that rewrapped a pasted order causes.
    pub format_problem: bool,
    /// The registered address of the seat whose key made the order's signature (`None` when the
    /// signature was not checked or does not verify): who may be told about this order.
    pub seat_email: Option<String>,
    /// Accepted now as a new order of its seat (not refused, not a resend of one accepted
    /// before): only such an order speaks for its seat's commands in a message from an address
    /// that holds no seat, since every resolved order's signed text is public.
    pub fresh: bool,
    /// Accepted, this order ended the game (a resignation, the last draw offer): no later order
    /// can replace it.
    pub ended_game: bool,
}

/// At most 60 characters of a line, for a reply.
pub fn shorten(line: &str) -> String {
    let s: String = line.chars().take(60).collect();
    if s.len() < line.len() { format!("{s}...") } else { s }
}


/// How many replies went to each address in the last hour. Replies are counted in the mail log
/// (`ROOT/.mail/log`, [`super::log`]); relayed press in `ROOT/.mail/press-sent/HASH` (the SHA-256
/// of the lowercase address), one line `TIME ID` per mail. A reply queued again (the same message
/// handled again after a kill) counts once.
pub(super) struct ReplyLedger<'a> {
    kept: Kept<'a>,
    max: u32,
}

/// Where a ledger is kept.
enum Kept<'a> {
    Log(&'a MailLog),
    Files(PathBuf),
}


impl<'a> ReplyLedger<'a> {
    /// The ledger of replies to messages, kept in the mail log.
    pub(super) fn new(log: &'a MailLog, cfg: &HostConfig) -> ReplyLedger<'a> {
        ReplyLedger { kept: Kept::Log(log), max: cfg.intake.max_replies_per_hour }
    }
    /// The ledger of relayed press (`ROOT/.mail/press-sent/`), with the same cap but apart from
    /// the replies': press others send can never use up the replies a player's own orders get.
    pub(super) fn for_press(outbox: &Outbox, cfg: &HostConfig) -> ReplyLedger<'static> {
        ReplyLedger { kept: Kept::Files(outbox.dir.with_file_name("press-sent")), max: cfg.intake.max_replies_per_hour }
    }
    /// The replies of the hour before `now` (`TIME ID`), oldest first.
    pub(super) fn recent(&self, addr: &str, now: DateTime<Utc>) -> Result<Vec<(DateTime<Utc>, String)>> {
        let dir = match &self.kept {
            Kept::Log(log) => return log.recent_replies(addr, now),
            Kept::Files(dir) => dir,
        };
        let hour_ago = now - chrono::Duration::hours(1);
        Ok(super::log::read_ledger_file(&dir.join(super::log::address_key(addr)))?.into_iter().filter(|(t, _)| *t > hour_ago).collect())
    }
    /// True when reply `id` may go to `addr` (it is under the cap, or was counted already).
    pub(super) fn allows(&self, addr: &str, id: &str, now: DateTime<Utc>) -> Result<bool> {
        if self.max == 0 {
            return Ok(true);
        }
        let recent = self.recent(addr, now)?;
        Ok(recent.iter().any(|(_, i)| i == id) || recent.len() < self.max as usize)
    }
    /// Counts reply `id` to `addr` at `now`.
    pub(super) fn record(&self, addr: &str, id: &str, now: DateTime<Utc>) -> Result<()> {
        let mut recent = self.recent(addr, now)?;
        if recent.iter().any(|(_, i)| i == id) {
            return Ok(());
        }
        let dir = match &self.kept {
            Kept::Log(log) => return log.record_reply(addr, id, now),
            Kept::Files(dir) => dir,
        };
        recent.push((now, id.to_string()));
        let text: String = recent.iter().map(|(t, i)| format!("{} {i}\n", pipeline::timestamp(*t))).collect();
        store::write_atomic(&dir.join(super::log::address_key(addr)), text.as_bytes())
    }
    pub(super) fn over_cap(&self, addrs: &[String]) -> String {
        format!("{} had {} in the last hour already (max_replies_per_hour = {})", addrs.join(", "), crate::text::count(self.max, "reply", "replies"), self.max)
    }
}

pub(super) fn place(label: &str, line: Option<usize>, field: Option<&str>) -> String {
    let mut s = label.to_string();
    if let Some(l) = line {
        s.push_str(&format!(", line {l}"));
    }
    if let Some(f) = field {
        s.push_str(&format!(", field {f}"));
    }
    s
}

/// The reply's text; `local` shows a UTC timestamp in the sender's time zone.
pub(super) fn reply_body(ex: &Extracted, results: &[OrderResult], local: &dyn Fn(&str) -> String) -> String {
    let mut b = String::new();
    let when = ex.message_id.as_deref().map(|m| format!(" <{}>", super::extract::quote_short(m))).unwrap_or_default();
    if results.is_empty() {
        if ex.html_only {
            b.push_str(&format!("Your message{when} has only an HTML part: orders must be sent as plain text.\n\n"));
        } else {
            b.push_str(&format!("No signed orders were found in your message{when}.\n\n"));
        }
        for n in &ex.notes {
            b.push_str(&format!("Note: {n}\n"));
        }
        if !ex.notes.is_empty() {
            b.push('\n');
        }
        b.push_str(&how_to_send());
        return b;
    }
    b.push_str(&format!("Your message{when} held {} order file(s).\n\n", results.len()));
    for (i, r) in results.iter().enumerate() {
        let what = match (&r.game, &r.role) {
            (Some(g), Some(role)) => format!(" (game {g}, role {role})"),
            _ => String::new(),
        };
        match (&r.receipt, &r.error) {
            (Some(rc), _) => {
                b.push_str(&format!("{}. {}{what}: ACCEPTED\n", i + 1, r.label));
                b.push_str(&format!("   step {}, receipt {}, received {}\n   commitment {}\n", rc.step, rc.seq, local(&rc.received), rc.commitment));
                for w in &r.warnings {
                    b.push_str(&format!("   note: {w}\n"));
                }
                b.push_str(&paragraph("   ", if r.ended_game {
                    "The host-signed receipt is attached: keep it (`pbem audit GAME --receipt FILE` shows that this order ended the game)."
                } else {
                    "The host-signed receipt is attached: keep it (`pbem audit GAME --receipt FILE` shows whether the order used was this one or a later one). A later order for the same step replaces this one while the step is open."
                }));
            }
            (None, Some(e)) => {
                // What the refusal quotes of the order (a key, a value) shows its control
                // characters as escapes (`text::shown_safely`).
                let e: Vec<String> = e.split('\n').map(crate::text::shown_safely).collect();
                b.push_str(&format!("{}. {}{what}: REFUSED\n   {}\n", i + 1, r.label, e.join("\n   ")));
                if r.label == "the message body" && r.format_problem {
                    b.push_str(&paragraph(
                        "   ",
                        "(Line numbers count from the first line of the pasted order. If your mail program wrapped long lines, attach the order file instead: with its .sig beside it, or signed with `pbem sign --append`.)",
                    ));
                }
            }
            (None, None) => {}
        }
        b.push('\n');
    }
    for n in &ex.notes {
        b.push_str(&format!("Note: {n}\n"));
    }
    let refused: Vec<&str> = results.iter().filter_map(|r| r.error.as_deref()).collect();
    if !refused.is_empty() && refused.iter().all(|e| e.contains("the game is over")) {
        // No advice to send them again (tester10 L2).
        b.push('\n');
        b.push_str(&paragraph("", "The game is over: it takes no more orders (its final reports give the result)."));
    } else if !refused.is_empty() && refused.iter().all(|e| crate::pipeline::is_former_holders(e)) {
        b.push('\n');
        b.push_str(&paragraph("", "The seat has passed to another player, so these orders count for nothing. If you did not expect this, write to the host."));
    } else if !refused.is_empty() && refused.iter().all(|e| crate::pipeline::is_late(e)) {
        // Sent again, it would be refused again (tester t18a-4).
        b.push('\n');
        b.push_str(&paragraph("", "Orders for a step already resolved count for nothing, and sending them again cannot change that: the step now open has its own order form, in your newest report (or ask for it with a `status` line)."));
    } else if !refused.is_empty() {
        // The step resolves as soon as every order it awaits is in, not only at its deadline
        // (tester16 T16c-14).
        b.push('\n');
        b.push_str(&paragraph("", "Refused orders count for nothing: correct them and send them again. The step takes orders until it is resolved, which the judge does once every order it awaits is in, or else once its deadline (and the grace the game gives after it, if any) has passed."));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::reply_subject;

    /// A reply to the judge's own mail is titled by its game tags, not its stale text (tester
    /// t18a-3), and never longer than a quoted subject, however many tags it carries (t18c-4).
    #[test]
    fn a_reply_to_the_judges_mail_is_titled_by_its_tags_and_kept_short() {
        assert_eq!(reply_subject("Re: [pbem gb1] step 5 resolved: orders needed by Fri 19 Mar", &["gb1", "gb2"]), "[pbem gb1] [pbem gb2] Re: your message");
        assert_eq!(reply_subject("orders", &["gb1"]), "[pbem gb1] Re: orders");
        let many = (0..3000).map(|i| format!("[pbem g{i:05}]")).collect::<String>();
        let s = reply_subject(&many, &[]);
        assert!(s.chars().count() <= super::super::extract::QUOTE_CHARS + 30 && s.ends_with("... Re: your message"), "{s}");
    }
}
