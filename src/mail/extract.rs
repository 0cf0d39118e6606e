//! Finding signed order files in a mail message, wherever a mail client put them.
//!
//! MIME is parsed by `mail-parser` (transfer encodings, charsets, nested `message/rfc822`
//! parts). What this module adds: undoing `format=flowed`, dropping quoted text (`>` lines, and
//! everything under a reply or forward separator such as `-----Original Message-----` or
//! `On ... wrote:`), pairing `X.sig` attachments with `X`, keeping an attachment's bytes as sent
//! beside its charset-decoded text, and cutting pasted orders out of a body where the sender's
//! greeting, signature or quoted text surround them. It also tells delivery reports (bounces) and
//! automatic mail apart, which must never be answered. Nothing here decides whether an order is
//! good: each found file goes to [`crate::pipeline::submit`] exactly as if it had been dropped in
//! a folder.

use mail_parser::{Message, MessageParser, MimeHeaders, PartType};
use ssh_key::PublicKey;

use super::recover;
use crate::sig::{self, ARMOR_BEGIN, ARMOR_END, NS_ORDERS};

/// One order file found in a message, ready to be written out and submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it was found, for replies: `attachment "union.toml"` or `the message body`.
    pub label: String,
    /// The file name to give it (the attachment's name, or `orders.toml`).
    pub name: String,
    /// The file's bytes (with an appended signature block when it was pasted or appended).
    pub file: Vec<u8>,
    /// A detached signature (`X.sig` attached beside `X`).
    pub detached: Option<String>,
    /// Why it cannot be submitted at all (e.g. not signed), if so.
    pub problem: Option<String>,
    /// The file as it stands in the bytes as sent (after the transfer encoding only, no charset
    /// conversion), when they are UTF-8 and differ from `file`: a charset label that does not
    /// match the bytes (UTF-8 labelled `windows-1252`) changes the text, not what was signed.
    pub raw: Option<Vec<u8>>,
}

/// What a message holds, as far as intake cares.
#[derive(Debug, Default)]
pub struct Extracted {
    /// The sender's address (lowercase), from `From` (or `Sender`).
    pub from: Option<String>,
    /// The sender's display name with the address, for the reply's `To`.
    pub from_display: Option<String>,
    /// Subject line.
    pub subject: String,
    /// `Message-ID`, without angle brackets.
    pub message_id: Option<String>,
    /// Order files found, in the order they appear.
    pub orders: Vec<Found>,
    /// The lines the sender wrote now in the message's own plain-text body (no quoted text, nothing
    /// under a reply or forward separator, nothing of an attached message): where commands and
    /// press are read (the commands module).
    pub text: String,
    /// True when the message has HTML but no plain-text part and no usable attachment.
    pub html_only: bool,
    /// Things worth telling the sender (e.g. a `.sig` with no file beside it).
    pub notes: Vec<String>,
    /// Why the message is an automatic one that must not be answered (RFC 3834: an
    /// `Auto-Submitted` other than `no`; `Precedence: bulk`, `junk`, `list` or `auto_reply`;
    /// `X-Autoreply` or `X-Autorespond`; a mailing list's `List-Id`, `List-Post` or
    /// `List-Unsubscribe`; a null `Return-Path: <>`), e.g. "Auto-Submitted: auto-replied".
    pub automatic: Option<String>,
    /// Why the message is a delivery report (a bounce), which is neither read for orders nor
    /// answered: `Content-Type: multipart/report`, `From` a `MAILER-DAEMON` or `postmaster`, or an
    /// `X-Failed-Recipients` header.
    pub bounce: Option<String>,
}

/// A piece of text taken from one MIME part.
struct Chunk {
    /// The attachment's file name, if any.
    name: Option<String>,
    /// The part's text (after transfer decoding and charset conversion).
    text: String,
    /// A body part (quoted lines are dropped) rather than an attachment (taken byte for byte).
    body: bool,
    /// The part said `format=flowed` (and whether `delsp=yes`).
    flowed: Option<bool>,
    /// The part's bytes before charset conversion, when UTF-8 and not the same as `text`.
    raw: Option<String>,
    /// Inside an attached message (`message/rfc822`): a forwarded original, not the new part.
    attached: bool,
}

/// `raw` parsed by mail-parser, or `None` when it is not a message. mail-parser 0.11 panics on
/// some malformed multipart nestings ("Invalid part ID, could not find multipart", found by the
/// no-panic property test): such bytes are not a message we can read, and no input may make the
/// judge panic, so the panic is caught here and the message taken for unreadable.
pub fn parse_message(raw: &[u8]) -> Option<Message<'_>> {
    std::panic::catch_unwind(|| MessageParser::default().parse(raw)).ok().flatten()
}

/// A message whose every line ends in a bare CR (no LF anywhere: old Mac line ends, which RFC 5322
/// 2.3 does not allow but some clients and scripts still write) given back with CRLF line ends, so
/// it is read as the message its sender meant; `None` for any other message, which is read as it is
/// (a stray CR inside a line of a message with LF line ends stays part of that line).
fn bare_cr_lines(raw: &[u8]) -> Option<Vec<u8>> {
    if !raw.contains(&b'\r') || raw.contains(&b'\n') {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 32);
    for &b in raw {
        out.push(b);
        if b == b'\r' {
            out.push(b'\n');
        }
    }
    Some(out)
}

/// Parses `raw` (one RFC 5322 message) and finds the order files in it. `key_for(game, role)`
/// returns the seat's key when that game and seat exist: it is used only to find where a pasted
/// order starts (the first line that makes the signature verify). `None` when the bytes are not a
/// mail message at all.
pub fn extract(raw: &[u8], key_for: &dyn Fn(&str, &str) -> Option<PublicKey>) -> Option<Extracted> {
    let lines_fixed = bare_cr_lines(raw);
    let msg = parse_message(lines_fixed.as_deref().unwrap_or(raw))?;
    if msg.headers().is_empty() {
        return None;
    }
    let mut out = Extracted { subject: msg.subject().unwrap_or("").to_string(), message_id: msg.message_id().map(str::to_string), ..Default::default() };
    let sender = msg.from().or_else(|| msg.sender()).and_then(|a| a.first());
    if let Some(a) = sender
        && let Some(addr) = a.address()
    {
        out.from = Some(addr.trim().to_ascii_lowercase());
        // Through lettre's Mailbox, so a name with a comma, quotes or non-ASCII letters is
        // quoted or encoded as a header needs it ("Meade, George" <meade@example.org>).
        out.from_display = Some(display_address(a.name(), addr.trim()));
    }
    let header = |name: &str| msg.header_raw(name).map(|v| v.trim().to_ascii_lowercase());
    if let Some(v) = header("Auto-Submitted").filter(|v| v != "no" && !v.starts_with("no;") && !v.starts_with("no ")) {
        out.automatic = Some(format!("Auto-Submitted: {v}"));
    } else if let Some(v) = header("Precedence").filter(|v| ["bulk", "junk", "list", "auto_reply"].contains(&v.as_str())) {
        out.automatic = Some(format!("Precedence: {v}"));
    } else if let Some(h) = ["X-Autoreply", "X-Autorespond", "X-Auto-Response"].into_iter().find(|h| header(h).is_some()) {
        // Older vacation programs mark their replies so instead of with Auto-Submitted.
        out.automatic = Some(format!("{h} present"));
    } else if let Some(h) = ["List-Id", "List-Post", "List-Unsubscribe"].into_iter().find(|h| header(h).is_some()) {
        // A mailing list's copy (RFC 2369, 2919): RFC 3834 2 asks automatic responders not to
        // answer it; its orders count, but the answer would go to a list's reader.
        out.automatic = Some(format!("{h} present (a mailing list's copy)"));
    } else if header("Return-Path").is_some_and(|v| v.trim_start_matches('<').trim_end_matches('>').trim().is_empty()) {
        // The null sender: what bounces and other automatic mail are sent from (RFC 5321 4.5.5).
        out.automatic = Some("Return-Path: <> (a null sender)".into());
    }
    out.bounce = bounce_of(&msg, out.from.as_deref());
    let mut chunks = Vec::new();
    let mut html = 0;
    collect(&msg, &mut chunks, &mut html, &mut out.notes, 0);
    // Only the new part of a message holds orders: a message attached whole (forwarded as an
    // attachment) is read only when the message has no orders of its own.
    let (attached, own): (Vec<Chunk>, Vec<Chunk>) = chunks.into_iter().partition(|c| c.attached);
    find_orders(own, key_for, &mut out);
    if !attached.is_empty() {
        let mut inner = Extracted::default();
        find_orders(attached, key_for, &mut inner);
        if out.orders.is_empty() {
            out.orders = inner.orders;
            out.notes.extend(inner.notes);
        } else if !inner.orders.is_empty() {
            out.notes.push(format!(
                "{} order file(s) in an attached message were not read: the message has orders of its own, and only the new part of a message holds orders",
                inner.orders.len()
            ));
        }
    }
    drop_repeated_orders(&mut out);
    out.html_only = out.orders.is_empty() && html > 0 && !out.notes.iter().any(|n| n.contains(".sig"));
    out.notes = merge_notes(std::mem::take(&mut out.notes));
    if out.automatic.is_none() && out.orders.is_empty() && out_of_office(&out.subject) {
        // Outlook's and Exchange's out-of-office replies carry none of the headers above.
        let subject: String = out.subject.trim().chars().take(60).collect();
        out.automatic = Some(format!("Subject: {subject:?}, an out-of-office reply"));
    }
    Some(out)
}

/// Keeps one of each order file the message holds more than once (the same text, pasted twice
/// or pasted and attached: tester T24a-1, "2 of 2 accepted" and the receipt attached twice for
/// one order), with a note; the copies are compared as the intake reads them (line endings and
/// trailing blanks normalized, [`sig::normalize`]).
fn drop_repeated_orders(out: &mut Extracted) {
    let mut kept: Vec<Found> = Vec::new();
    let mut seen: std::collections::BTreeSet<(Vec<u8>, Option<String>)> = std::collections::BTreeSet::new();
    for f in std::mem::take(&mut out.orders) {
        let text = sig::normalize(&f.file).map_or_else(|_| f.file.clone(), String::into_bytes);
        if seen.insert((text, f.detached.clone())) {
            kept.push(f);
        } else {
            out.notes.push(format!("{} holds the same order file as one before it in this message: read once", f.label));
        }
    }
    out.orders = kept;
}

/// The most notes one message's reply carries (after identical ones are merged).
pub const MAX_NOTES: usize = 20;

/// `notes` with identical ones merged into one line with their count, in the order first seen,
/// the first [`MAX_NOTES`] of them and a line for the rest: a message of 100,000 stray signature
/// blocks gets a reply of one note, not 100,000.
fn merge_notes(notes: Vec<String>) -> Vec<String> {
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut merged: Vec<(String, usize)> = Vec::new();
    for n in notes {
        match at.get(&n) {
            Some(&i) => merged[i].1 += 1,
            None => {
                at.insert(n.clone(), merged.len());
                merged.push((n, 1));
            }
        }
    }
    let more = merged.len().saturating_sub(MAX_NOTES);
    let mut out: Vec<String> = merged.into_iter().take(MAX_NOTES).map(|(n, k)| if k > 1 { format!("{n} ({k} times)") } else { n }).collect();
    if more > 0 {
        out.push(format!("... and {more} more notes like these"));
    }
    out
}

/// Whether `subject` is that of an out-of-office or other automatic reply (`Automatic reply:`,
/// `Auto:`, `Out of Office`), in any letter case.
fn out_of_office(subject: &str) -> bool {
    let s = subject.trim_start().to_ascii_lowercase();
    ["automatic reply:", "auto:", "out of office"].iter().any(|p| s.starts_with(p))
}

/// Why `msg` is a delivery report, if it is one.
fn bounce_of(msg: &Message<'_>, from: Option<&str>) -> Option<String> {
    if let Some(ct) = msg.content_type()
        && ct.ctype().eq_ignore_ascii_case("multipart")
        && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("report"))
    {
        return Some("Content-Type: multipart/report".into());
    }
    if let Some(from) = from {
        let local = from.split('@').next().unwrap_or("");
        if local.eq_ignore_ascii_case("mailer-daemon") || local.eq_ignore_ascii_case("postmaster") {
            return Some(format!("from {from}"));
        }
    }
    msg.header_raw("X-Failed-Recipients").map(|_| "X-Failed-Recipients present".into())
}

/// The bytes of `part` as sent, after undoing its transfer encoding only (no charset
/// conversion), if they are UTF-8.
fn raw_text(msg: &Message<'_>, part: &mail_parser::MessagePart<'_>) -> Option<String> {
    let raw = msg.raw_message().get(part.raw_body_offset() as usize..part.raw_end_offset() as usize)?;
    let bytes = match part.encoding {
        mail_parser::Encoding::None => raw.to_vec(),
        mail_parser::Encoding::QuotedPrintable => mail_parser::decoders::quoted_printable::quoted_printable_decode(raw)?,
        mail_parser::Encoding::Base64 => mail_parser::decoders::base64::base64_decode(raw)?,
    };
    String::from_utf8(bytes).ok()
}

/// How many characters of a sender's subject (or Message-ID) a reply quotes: a header line must
/// stay under RFC 5322's 998 characters even where a mail library cannot fold it (a subject of
/// one 200,000-letter word), and a reply need not repeat more to be recognized.
pub const QUOTE_CHARS: usize = 160;

/// `s` cut to [`QUOTE_CHARS`] characters (with `...` when cut), control characters as spaces.
pub fn quote_short(s: &str) -> String {
    let mut out: String = s.chars().take(QUOTE_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect();
    if s.chars().nth(QUOTE_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

/// The sender as a reply's `To`: the name and address through lettre's `Mailbox`, so a name with a
/// comma, quotes or non-ASCII letters is quoted or encoded as a header needs it ("Meade, George"
/// <meade@example.org>). Control characters in the name (a CR a sender slipped in) become spaces;
/// a name lettre still cannot write, or an address it does not take, leaves the bare address.
fn display_address(name: Option<&str>, addr: &str) -> String {
    // Cut short as a quoted subject is: a header line must stay under 998 characters.
    let name: Option<String> = name.map(|n| quote_short(n.trim()).trim().to_string());
    match (name, addr.parse::<lettre::Address>()) {
        (Some(n), Ok(ad)) if !n.is_empty() => {
            let mut out = String::new();
            // Not `to_string()`: lettre's Display can fail on a name, and that would panic.
            match std::fmt::Write::write_fmt(&mut out, format_args!("{}", lettre::message::Mailbox::new(Some(n), ad))) {
                Ok(()) => out,
                Err(_) => addr.to_string(),
            }
        }
        _ => addr.to_string(),
    }
}

fn flowed_of(part: &mail_parser::MessagePart<'_>) -> Option<bool> {
    let ct = part.content_type()?;
    if !ct.attribute("format").is_some_and(|f| f.eq_ignore_ascii_case("flowed")) {
        return None;
    }
    Some(ct.attribute("delsp").is_some_and(|d| d.eq_ignore_ascii_case("yes")))
}

/// Every text-bearing part of `msg` (and of messages attached to it), each part once.
fn collect(msg: &Message<'_>, chunks: &mut Vec<Chunk>, html: &mut usize, notes: &mut Vec<String>, depth: usize) {
    for (i, part) in msg.parts.iter().enumerate() {
        let name = part.attachment_name().map(str::to_string);
        let in_body = msg.text_body.contains(&(i as u32));
        let attached = depth > 0;
        if is_tnef(part, name.as_deref()) {
            notes.push(format!("attachment {:?} is Outlook's rich-text packaging (application/ms-tnef), which pbem cannot read: attach order files to a plain-text message (in Outlook: Format Text > Plain Text, or send to this address in plain text only)", name.as_deref().unwrap_or("winmail.dat")));
            continue;
        }
        if let Some(r) = recover::recover(msg, part) {
            if part.content_type().is_some_and(|ct| ct.ctype().eq_ignore_ascii_case("text") && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("html"))) {
                *html += 1;
            } else {
                recovered_chunk(part, name, r, attached, chunks, notes);
            }
            continue;
        }
        if recover::cut_base64(msg, part) {
            // Decoded by mail-parser as far as it goes, its closing boundary there (tester18 T18-1).
            let shown = name.clone().unwrap_or_else(|| "a part of the message".into());
            notes.push(format!("attachment {shown:?} is cut off (its base64 stops in the middle): it was read up to where it stops"));
        }
        match &part.body {
            PartType::Text(t) => {
                let body = in_body && name.is_none();
                let raw = raw_text(msg, part).filter(|r| r.as_str() != t.as_ref());
                chunks.push(Chunk { name: name.clone(), text: t.to_string(), body, flowed: flowed_of(part), raw, attached })
            }
            PartType::Html(_) => *html += 1,
            PartType::Binary(b) | PartType::InlineBinary(b) => match std::str::from_utf8(b) {
                Ok(t) => chunks.push(Chunk { name, text: t.to_string(), body: false, flowed: None, raw: None, attached }),
                Err(_) => not_utf8(name.as_deref(), notes),
            },
            PartType::Message(m) if depth < 4 => collect(m, chunks, html, notes, depth + 1),
            PartType::Message(_) | PartType::Multipart(_) => {}
        }
    }
}

/// Whether `part` is Outlook's TNEF packaging of a rich-text message and its attachments
/// (`application/ms-tnef` or `application/vnd.ms-tnef`, usually named `winmail.dat`): the files
/// inside it are not read.
fn is_tnef(part: &mail_parser::MessagePart<'_>, name: Option<&str>) -> bool {
    let by_type = part.content_type().is_some_and(|ct| {
        ct.ctype().eq_ignore_ascii_case("application") && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("ms-tnef") || s.eq_ignore_ascii_case("vnd.ms-tnef"))
    });
    by_type || name.is_some_and(|n| n.eq_ignore_ascii_case("winmail.dat"))
}

/// The note for an attachment that is not UTF-8, when its name says it should be text.
fn not_utf8(name: Option<&str>, notes: &mut Vec<String>) {
    if let Some(n) = name
        && (n.ends_with(".toml") || n.ends_with(".sig") || n.ends_with(".txt"))
    {
        notes.push(format!("attachment {n:?} is not UTF-8 text; save order files as UTF-8"));
    }
}

/// A part mail-parser could not decode, read as Python's `email` reads it ([`recover`]): a chunk
/// like any other (a body text when it has no name and is `text/plain`), and a note naming it when
/// its base64 stops in the middle (the message was cut off inside it).
fn recovered_chunk(part: &mail_parser::MessagePart<'_>, name: Option<String>, r: recover::Recovered, attached: bool, chunks: &mut Vec<Chunk>, notes: &mut Vec<String>) {
    let shown = name.clone().unwrap_or_else(|| "a part of the message".into());
    if r.cut {
        let why = if r.unclosed { "the message ends inside it, with no closing MIME boundary" } else { "its base64 stops in the middle" };
        notes.push(format!("attachment {shown:?} is cut off ({why}): it was read up to where it stops"));
    }
    let Ok(text) = String::from_utf8(r.bytes) else {
        return not_utf8(name.as_deref(), notes);
    };
    let plain = part.content_type().is_none_or(|ct| ct.ctype().eq_ignore_ascii_case("text") && ct.subtype().is_none_or(|s| s.eq_ignore_ascii_case("plain")));
    let body = name.is_none() && plain && !part.content_disposition().is_some_and(|d| d.is_attachment());
    chunks.push(Chunk { name, text, body, flowed: flowed_of(part), raw: None, attached });
}

/// Undoes RFC 3676 `format=flowed`: a line ending in a space continues on the next line (the
/// space is dropped too with `delsp=yes`); space-stuffing is removed; the signature separator
/// `-- ` is not a soft break.
pub fn unflow(text: &str, delsp: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        // Quoted lines keep their own flow; we drop them later anyway.
        let line = line.strip_prefix(' ').unwrap_or(line);
        let soft = line.ends_with(' ') && line != "-- ";
        let piece = if soft && delsp { &line[..line.len() - 1] } else { line };
        out.push_str(piece);
        if soft {
            open = true;
        } else {
            out.push('\n');
            open = false;
        }
    }
    if open {
        out.push('\n');
    }
    // split('\n') gives one more piece than there are newlines.
    if out.ends_with("\n\n") && !text.ends_with("\n\n") && !text.ends_with("\r\n\r\n") {
        out.pop();
    }
    out
}

/// Whether `text` is a pbem receipt (by its shape: exactly a receipt's fields, whatever the
/// file is called).
fn is_receipt(text: &str) -> bool {
    text.contains("commitment") && toml::from_str::<crate::model::Receipt>(text.trim_start_matches('\u{FEFF}')).is_ok()
}

fn is_sig_only(text: &str) -> bool {
    let t = text.trim_start_matches('\u{FEFF}').trim();
    t.starts_with(ARMOR_BEGIN) && !t.lines().any(|l| l.trim() == "[pbem]")
}

fn has_pbem_line(lines: &[&str]) -> bool {
    lines.iter().any(|l| l.trim() == "[pbem]")
}

/// A signature that came as an attachment of its own, waiting for the order file it signs.
struct DetachedSig {
    /// Its file name (`X.sig`), or "signature" when it had none.
    name: String,
    text: String,
    /// Paired with an order file already.
    used: bool,
}

fn find_orders(chunks: Vec<Chunk>, key_for: &dyn Fn(&str, &str) -> Option<PublicKey>, out: &mut Extracted) {
    let (mut sigs, files) = split_signatures(chunks);
    for c in files {
        if out.orders.len() > MAX_ORDER_FILES {
            break;
        }
        let text = match c.flowed {
            Some(delsp) => unflow(&c.text, delsp),
            None => c.text.clone(),
        };
        if c.body {
            body_chunk_orders(c, &text, key_for, out);
        } else {
            attached_order(c, &text, &mut sigs, out);
        }
    }
    if out.orders.len() > MAX_ORDER_FILES {
        out.orders.truncate(MAX_ORDER_FILES);
        out.notes.push(format!("only the first {MAX_ORDER_FILES} order files of a message are read; send the others in another message"));
    }
    pair_leftovers(&mut sigs, out);
}

/// Detached signatures first: by name (`X.sig` beside `X`), or content that is only a block;
/// the other chunks, in order.
fn split_signatures(chunks: Vec<Chunk>) -> (Vec<DetachedSig>, Vec<Chunk>) {
    let mut sigs = Vec::new();
    let mut files = Vec::new();
    for c in chunks {
        let named_sig = c.name.as_deref().is_some_and(|n| n.to_ascii_lowercase().ends_with(".sig"));
        if !c.body && (named_sig || is_sig_only(&c.text)) {
            sigs.push(DetachedSig { name: c.name.clone().unwrap_or_else(|| "signature".into()), text: c.text, used: false });
        } else {
            files.push(c);
        }
    }
    (sigs, files)
}

/// An attached file `c` (its `text` unflowed): an order file, with its `X.sig` if one came, or
/// with its signature appended; anything else is not an order.
fn attached_order(c: Chunk, text: &str, sigs: &mut [DetachedSig], out: &mut Extracted) {
    let name = c.name.clone().unwrap_or_else(|| "attachment".into());
    let label = format!("attachment {name:?}");
    let want = format!("{name}.sig").to_ascii_lowercase();
    if is_receipt(text) {
        // A receipt of the judge's sent back (a reply with its attachments, a forward): its
        // signature goes with it, and neither is an order.
        if let Some(s) = sigs.iter_mut().find(|s| !s.used && s.name.to_ascii_lowercase() == want) {
            s.used = true;
        }
        out.notes.push(format!("{label} is a receipt, not an order: not read"));
        return;
    }
    let looks_like_order = |t: &str| t.contains(ARMOR_BEGIN) || has_pbem_line(&t.lines().collect::<Vec<_>>());
    // A label that made the bytes unreadable (UTF-8 sent as `utf-16`): the bytes as sent.
    let (file, raw) = match c.raw {
        Some(raw) if !looks_like_order(text) && looks_like_order(&raw) => (raw, None),
        other => (c.text, other),
    };
    if let Some(s) = sigs.iter_mut().find(|s| !s.used && s.name.to_ascii_lowercase() == want) {
        s.used = true;
        out.orders.push(Found { label, name, file: file.into_bytes(), detached: Some(s.text.clone()), problem: None, raw: raw.map(String::into_bytes) });
    } else if looks_like_order(&file) {
        // An order file with the signature appended is taken as it is, byte for byte.
        out.orders.push(Found { label, name, file: file.into_bytes(), detached: None, problem: None, raw: raw.map(String::into_bytes) });
    } else if name.to_ascii_lowercase().ends_with(".toml") {
        // Named like an order file but holding none: say so rather than "no signed orders".
        out.notes.push(format!("{label} has no [pbem] section and no signature: not read as an order"));
    }
}

/// A body text `c` (its `text` unflowed): what the sender wrote now goes to `out.text` (unless
/// it was an attached text part), and the orders pasted in it to `out.orders`.
fn body_chunk_orders(c: Chunk, text: &str, key_for: &dyn Fn(&str, &str) -> Option<PublicKey>, out: &mut Extracted) {
    if !c.attached {
        let plain = text.replace("\r\n", "\n");
        for line in new_part(plain.strip_prefix('\u{FEFF}').unwrap_or(&plain), &mut Extracted::default()) {
            out.text.push_str(line);
            out.text.push('\n');
        }
    }
    let before = out.orders.len();
    body_orders(text, key_for, out);
    // The same cut from the bytes as sent: pasted orders in a body whose charset label is wrong.
    if let Some(raw) = &c.raw {
        let raw = match c.flowed {
            Some(delsp) => unflow(raw, delsp),
            None => raw.clone(),
        };
        let mut alt = Extracted::default();
        body_orders(&raw, key_for, &mut alt);
        if out.orders.len() == before {
            // Only the bytes as sent hold orders (a label like `utf-16` made the text unreadable).
            out.orders.extend(alt.orders);
            out.notes.extend(alt.notes);
        } else if alt.orders.len() == out.orders.len() - before {
            for (f, a) in out.orders[before..].iter_mut().zip(alt.orders) {
                f.raw = Some(a.file).filter(|r| *r != f.file);
            }
        }
    }
}

/// A lone order without a signature and a lone unused `.sig` belong together; any order still
/// unsigned gets its problem, and each signature left over a note.
fn pair_leftovers(sigs: &mut [DetachedSig], out: &mut Extracted) {
    let unsigned: Vec<usize> = out.orders.iter().enumerate().filter(|(_, f)| f.detached.is_none() && !contains_block(&f.file)).map(|(i, _)| i).collect();
    let unused: Vec<usize> = sigs.iter().enumerate().filter(|(_, s)| !s.used).map(|(i, _)| i).collect();
    if unsigned.len() == 1 && unused.len() == 1 {
        out.orders[unsigned[0]].detached = Some(sigs[unused[0]].text.clone());
        sigs[unused[0]].used = true;
    }
    for f in out.orders.iter_mut() {
        if f.detached.is_none() && !contains_block(&f.file) && f.problem.is_none() {
            f.problem = Some(format!(
                "not signed: {} has no SSH signature (attach {}.sig made by `pbem sign` or `ssh-keygen -Y sign -n pbem-orders`, or sign with `pbem sign --append`)",
                f.label, f.name
            ));
        }
    }
    for s in sigs.iter().filter(|s| !s.used) {
        out.notes.push(format!("signature attachment {:?} has no order file beside it (name them X and X.sig)", s.name));
    }
}

fn contains_block(b: &[u8]) -> bool {
    String::from_utf8_lossy(b).contains(ARMOR_BEGIN)
}

/// `game` and `role` from the `[pbem]` lines of a pasted order, if they parse.
fn header_of(lines: &[&str]) -> Option<(String, String)> {
    let end = lines.iter().skip(1).position(|l| l.trim_start().starts_with('[')).map_or(lines.len(), |p| p + 1);
    let t: toml::Table = lines[..end].join("\n").parse().ok()?;
    let h = t.get("pbem")?.as_table()?;
    Some((h.get("game")?.as_str()?.to_string(), h.get("role")?.as_str()?.to_string()))
}

/// The lines of a body text that the sender wrote now: without `>`-quoted lines, and without
/// everything from a reply or forward separator on (what is under it is an earlier message, so
/// its orders are old ones). An `On ... wrote:` line above a `>` quote only introduces the quote:
/// the text after the quote is new (bottom posting). A note tells the sender when orders were
/// left unread.
fn new_part<'t>(text: &'t str, out: &mut Extracted) -> Vec<&'t str> {
    let all: Vec<&str> = text.lines().collect();
    // A signed order, not a quoted report's blank form.
    let holds_order = |ls: &[&str]| ls.iter().any(|l| l.contains(ARMOR_BEGIN));
    let mut lines = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let Some(after) = separator_at(&all, i) else {
            if !all[i].trim_start().starts_with('>') {
                lines.push(all[i]);
            }
            i += 1;
            continue;
        };
        let next = (after..all.len()).find(|&k| !all[k].trim().is_empty());
        if is_attribution(all[i]) && next.is_some_and(|k| all[k].trim_start().starts_with('>')) {
            i = after;
            continue;
        }
        if holds_order(&all[i..]) {
            let line: String = all[i].trim().chars().take(60).collect();
            out.notes.push(format!(
                "orders below \"{line}\" were not read: that is a quoted or forwarded message, and only the new part of a message holds orders (send orders in a message of their own)"
            ));
        }
        return lines;
    }
    if all.iter().any(|l| l.trim_start().starts_with('>') && l.contains(ARMOR_BEGIN)) {
        out.notes.push("a quoted order (lines starting with \">\") was not read: only the new part of a message holds orders".into());
    }
    lines
}

/// `On DATE, NAME wrote:` and its translations (the start of the line).
fn is_attribution(line: &str) -> bool {
    let t = line.trim_start();
    ["On ", "Am ", "Le ", "El ", "Il ", "Op "].iter().any(|p| t.starts_with(p))
}

/// When a reply or forward separator starts at line `i`, the index of the first line after it.
/// Recognized: `-----Original Message-----` (Outlook), `-------- Original Message --------` and
/// `-------- Forwarded Message --------` (Thunderbird), `---------- Forwarded message ---------`
/// (Gmail), `Begin forwarded message:` (Apple Mail), a line of underscores above a `From:` line
/// and a `From:` line with `Sent:` or `Date:` below it (Outlook's header block), and
/// `On DATE, NAME wrote:` (Gmail, Thunderbird, Apple Mail), also when wrapped over two lines.
fn separator_at(lines: &[&str], i: usize) -> Option<usize> {
    let t = lines[i].trim();
    let lower = t.to_lowercase();
    if t.starts_with("--") {
        let words = lower.trim_matches(|c: char| c == '-' || c.is_whitespace());
        let known = ["original message", "forwarded message", "ursprüngliche nachricht", "weitergeleitete nachricht", "message d'origine", "message transféré", "mensaje original", "mensaje reenviado"];
        return known.contains(&words).then_some(i + 1);
    }
    if lower == "begin forwarded message:" {
        return Some(i + 1);
    }
    let next = |from: usize| (from..lines.len()).find(|&k| !lines[k].trim().is_empty());
    let header = |k: usize, names: &[&str]| names.iter().any(|n| lines[k].trim_start().to_lowercase().starts_with(n));
    const FROM: [&str; 3] = ["from:", "von:", "de:"];
    if t.len() >= 10 && t.chars().all(|c| c == '_') && next(i + 1).is_some_and(|k| header(k, &FROM)) {
        return Some(i + 1);
    }
    if header(i, &FROM) && (i + 1..lines.len().min(i + 4)).any(|k| header(k, &["sent:", "date:", "gesendet:", "datum:", "envoyé :", "envoyé:"])) {
        return Some(i + 1);
    }
    let wrote = |l: &str| {
        let l = l.trim_end().to_lowercase();
        ["wrote:", "schrieb:", "a écrit :", "a écrit:", "escribió:", "ha scritto:", "schreef:"].iter().any(|w| l.ends_with(w))
            || (l.contains(" schrieb ") && l.ends_with(':'))
    };
    if is_attribution(t) && t.len() < 300 {
        if wrote(t) {
            return Some(i + 1);
        }
        // Wrapped: "On Tue, Jun 30, 2026 at 9:00 PM George Meade <meade@example.org>" / "wrote:".
        if i + 1 < lines.len() && wrote(lines[i + 1]) && lines[i + 1].trim().len() < 80 && !lines[i + 1].trim_start().starts_with('>') {
            return Some(i + 2);
        }
    }
    None
}

/// How many lines above a pasted order's `[pbem]` may be where the signed file starts (its title
/// comments, a blank line among them): a greeting further up is never part of it.
const MAX_START_LINES: usize = 16;

/// How many order files one message may hold; the rest are not read, and the reply says so.
pub const MAX_ORDER_FILES: usize = 20;

/// The lines where a pasted order whose `[pbem]` is line `pbem` may start, most likely first: the
/// comment lines just above `[pbem]`, `[pbem]` itself, then each of the MAX_START_LINES lines above
/// it (not above `seg`). The signature is checked from each, each time over the whole file, so
/// the bound keeps a message whose signature fails (a changed order, another key's signature)
/// from costing a check per line of the message.
fn start_candidates(lines: &[&str], seg: usize, pbem: usize) -> Vec<usize> {
    let mut comment_start = pbem;
    while comment_start > seg && lines[comment_start - 1].trim_start().starts_with('#') {
        comment_start -= 1;
    }
    let mut starts = vec![comment_start, pbem];
    starts.extend(pbem.saturating_sub(MAX_START_LINES).max(seg)..pbem);
    starts
}

/// Cuts pasted order files out of a body text: each armored block with the nearest `[pbem]` above
/// it; the start is the first line that makes the signature verify (else the comment lines just
/// above `[pbem]`, so that a changed file is reported as changed).
fn body_orders(text: &str, key_for: &dyn Fn(&str, &str) -> Option<PublicKey>, out: &mut Extracted) {
    let text = text.replace("\r\n", "\n");
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    // Quoted text (an old report, a previous message) is never orders.
    let lines = new_part(text, out);
    let mut seg = 0;
    let mut i = 0;
    let mut found_any = false;
    while i < lines.len() && out.orders.len() <= MAX_ORDER_FILES {
        if !lines[i].trim_end().ends_with(ARMOR_BEGIN) {
            i += 1;
            continue;
        }
        let end = (i..lines.len()).find(|&j| lines[j].trim() == ARMOR_END).unwrap_or(lines.len() - 1);
        let mut block = String::new();
        for l in &lines[i..=end] {
            block.push_str(l.trim());
            block.push('\n');
        }
        let Some(pbem) = (seg..i).rev().find(|&k| lines[k].trim() == "[pbem]") else {
            out.notes.push("a signature block in the message body has no [pbem] orders above it".into());
            seg = end + 1;
            i = end + 1;
            continue;
        };
        let starts = start_candidates(&lines, seg, pbem);
        let comment_start = starts[0];
        let file_for = |s: usize| {
            let mut f = lines[s..i].join("\n");
            f.push('\n');
            f.push_str(&block);
            f
        };
        let key = header_of(&lines[pbem..i]).and_then(|(g, r)| key_for(&g, &r));
        let chosen = key
            .and_then(|k| starts.iter().copied().find(|&s| sig::verify_order_text(&k, NS_ORDERS, file_for(s).as_bytes(), None).is_ok()))
            .unwrap_or(comment_start);
        out.orders.push(Found { label: "the message body".into(), name: "orders.toml".into(), file: file_for(chosen).into_bytes(), detached: None, problem: None, raw: None });
        found_any = true;
        seg = end + 1;
        i = end + 1;
    }
    // Orders pasted without any signature.
    if !found_any && lines[seg.min(lines.len())..].iter().any(|l| l.trim() == "[pbem]") {
        let pbem = (seg..lines.len()).find(|&k| lines[k].trim() == "[pbem]").expect("present");
        let mut s = pbem;
        while s > seg && lines[s - 1].trim_start().starts_with('#') {
            s -= 1;
        }
        let mut f = lines[s..].join("\n");
        f.push('\n');
        out.orders.push(Found { label: "the message body".into(), name: "orders.toml".into(), file: f.into_bytes(), detached: None, problem: None, raw: None });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_order_is_tried_from_a_bounded_number_of_lines() {
        let mut lines = vec!["hello"; 10_000];
        lines.extend(["# Union, step 1", "#", "# answer below", "[pbem]"]);
        let pbem = lines.len() - 1;
        let starts = start_candidates(&lines, 0, pbem);
        assert_eq!(starts[..2], [pbem - 3, pbem], "the title comments first, then [pbem]");
        assert_eq!(starts.len(), 2 + MAX_START_LINES);
        assert!(starts.iter().all(|&s| s >= pbem - MAX_START_LINES));
        // Never above the end of the previous order.
        assert!(start_candidates(&lines, pbem - 2, pbem).iter().all(|&s| s >= pbem - 2));
    }

    #[test]
    fn a_message_is_read_for_at_most_max_order_files() {
        let mut raw = String::from("From: a@b.c\r\nSubject: x\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=z\r\n\r\n");
        for n in 0..(MAX_ORDER_FILES + 30) {
            raw.push_str(&format!("--z\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=o{n}.toml\r\n\r\n[pbem]\r\ngame = \"g{n}\"\r\n"));
        }
        raw.push_str("--z--\r\n");
        let e = extract(raw.as_bytes(), &|_, _| None).unwrap();
        assert_eq!(e.orders.len(), MAX_ORDER_FILES);
        assert!(e.notes.iter().any(|n| n.contains("only the first 20 order files")), "{:?}", e.notes);
    }

    #[test]
    fn unflow_joins_soft_breaks() {
        assert_eq!(unflow("a b \r\nc\r\nd\r\n", false), "a b c\nd\n");
        assert_eq!(unflow("ab \nc\n", true), "abc\n");
        assert_eq!(unflow(" >x\n-- \nsig\n", false), ">x\n-- \nsig\n");
    }

    #[test]
    fn html_only_is_noticed() {
        let raw = b"From: a@b.c\r\nSubject: x\r\nContent-Type: text/html\r\n\r\n<p>[pbem]</p>\r\n";
        let e = extract(raw, &|_, _| None).unwrap();
        assert!(e.html_only && e.orders.is_empty());
        assert_eq!(e.from.as_deref(), Some("a@b.c"));
    }

    fn new_text(text: &str) -> String {
        let mut out = Extracted::default();
        new_part(text, &mut out).join("\n")
    }

    #[test]
    fn text_under_a_reply_or_forward_separator_is_not_new() {
        for sep in [
            "-----Original Message-----",
            "-------- Original Message --------",
            "-------- Forwarded Message --------",
            "---------- Forwarded message ---------",
            "Begin forwarded message:",
            "On Tue, Jun 30, 2026 at 9:00 PM George Meade <meade@example.org> wrote:",
            "On Tue, Jun 30, 2026 at 9:00 PM George Meade <meade@example.org>\nwrote:",
            "Am 30.06.2026 um 21:00 schrieb George Meade:",
            "________________________________\nFrom: George Meade\nSent: Tuesday",
            "From: George Meade <meade@example.org>\nDate: Tue, 30 Jun 2026",
        ] {
            assert_eq!(new_text(&format!("new\n{sep}\nold\n")), "new", "{sep}");
        }
        // Not separators: a signature line, an armor line, a comment, a line that only mentions one.
        let keep = "-- \n-----BEGIN SSH SIGNATURE-----\n# On the ridge, Buford wrote: hold\nsee the Original Message below";
        assert_eq!(new_text(keep), keep);
        // An attribution above a `>` quote introduces the quote only: bottom posting is new text.
        assert_eq!(new_text("On Tue, Meade wrote:\n> old\n\nnew"), "\nnew");
        let mut out = Extracted::default();
        new_part("new\n-----Original Message-----\n[pbem]\n-----BEGIN SSH SIGNATURE-----\n", &mut out);
        assert!(out.notes[0].contains("\"-----Original Message-----\" were not read"), "{:?}", out.notes);
    }

    #[test]
    fn the_text_for_commands_is_the_new_part_only() {
        let raw = b"From: a@b.c\r\nSubject: x\r\n\r\nstatus\r\n> help\r\nOn Tue, Meade wrote:\r\n> report\r\n\r\npress to all\r\n-----Original Message-----\r\nreport g1\r\n";
        assert_eq!(extract(raw, &|_, _| None).unwrap().text, "status\n\npress to all\n");
    }

    #[test]
    fn bounces_are_told_apart() {
        let dsn = b"From: x@y.z\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n";
        assert!(extract(dsn, &|_, _| None).unwrap().bounce.is_some());
        let daemon = b"From: Mail Delivery System <MAILER-DAEMON@mx.example>\r\nSubject: x\r\n\r\nbody\r\n";
        assert!(extract(daemon, &|_, _| None).unwrap().bounce.is_some());
        let null = b"Return-Path: <>\r\nFrom: a@b.c\r\nSubject: x\r\n\r\nbody\r\n";
        let e = extract(null, &|_, _| None).unwrap();
        assert!(e.bounce.is_none() && e.automatic.as_deref().is_some_and(|a| a.contains("null sender")));
        let person = b"Return-Path: <a@b.c>\r\nFrom: a@b.c\r\nSubject: x\r\n\r\nbody\r\n";
        let e = extract(person, &|_, _| None).unwrap();
        assert!(e.bounce.is_none() && e.automatic.is_none());
    }

    #[test]
    fn a_mislabelled_attachment_keeps_its_bytes() {
        let raw = "From: a@b.c\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; charset=windows-1252\r\nContent-Disposition: attachment; filename=o.toml\r\nContent-Transfer-Encoding: base64\r\n\r\nW3BiZW1dCiMgw6kK\r\n--b--\r\n";
        let e = extract(raw.as_bytes(), &|_, _| None).unwrap();
        assert_eq!(e.orders[0].raw.as_deref(), Some("[pbem]\n# é\n".as_bytes()));
        assert_ne!(e.orders[0].file, e.orders[0].raw.clone().unwrap());
    }

    #[test]
    fn a_control_character_in_the_senders_name_is_no_panic() {
        for name in ["Mea\rde", "Meade \u{a0}\u{1F600}\r=", "\u{0}", "\u{7f}x", "Meade, George \u{85}"] {
            let raw = format!("From: {name} <meade@example.org>\r\nSubject: x\r\n\r\nhi\r\n");
            let e = extract(raw.as_bytes(), &|_, _| None).unwrap();
            if let Some(shown) = e.from_display {
                assert!(shown.contains("meade@example.org") && !shown.chars().any(char::is_control), "{shown:?}");
            }
        }
        let e = extract(b"From: Mea\rde <meade@example.org>\r\nSubject: x\r\n\r\nhi\r\n", &|_, _| None).unwrap();
        assert_eq!(e.from_display.as_deref(), Some("Mea de <meade@example.org>"));
    }

    #[test]
    fn an_attached_toml_that_is_no_order_is_named() {
        let raw = "From: a@b.c\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=o.toml\r\n\r\nx = 1\r\n--b--\r\n";
        let e = extract(raw.as_bytes(), &|_, _| None).unwrap();
        assert_eq!(e.notes, ["attachment \"o.toml\" has no [pbem] section and no signature: not read as an order"]);
    }

    #[test]
    fn the_same_order_file_twice_in_a_message_is_read_once() {
        // Attached twice, once with CRLF line ends: the same file as intake reads it (T24a-1).
        let part = |name: &str, body: &str| format!("--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename={name}\r\n\r\n{body}\r\n");
        let raw = format!(
            "From: a@b.c\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n{}{}{}--b--\r\n",
            part("a.toml", "[pbem]\r\ngame = \"g\"\r\n"),
            part("b.toml", "[pbem]\r\ngame = \"g\"\r\n"),
            part("c.toml", "[pbem]\r\ngame = \"h\"\r\n")
        );
        let e = extract(raw.as_bytes(), &|_, _| None).unwrap();
        assert_eq!(e.orders.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["a.toml", "c.toml"]);
        assert_eq!(e.notes.len(), 1, "{:?}", e.notes);
        assert!(e.notes[0].contains("b.toml") && e.notes[0].contains("same order file"), "{:?}", e.notes);
    }

    #[test]
    fn garbage_is_not_a_message() {
        assert!(extract(b"", &|_, _| None).is_none());
    }
}
