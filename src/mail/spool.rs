//! The spool Maildir (`ROOT/.mail/spool/`) and arrival order: piped and mbox messages are
//! delivered into the spool as `SECONDS.SEQUENCE.HASH`, each message once, and every Maildir
//! (the spool too) is read in the order its messages arrived.

use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::config::HostConfig;
use super::config::state_dir;
use crate::error::{Error, Result};
use crate::store;

/// Delivers the message on standard input into the spool (over the size limit: its head only,
/// with its size); returns its spool name, or `None` when the same bytes wait there already or
/// were handled before ([`spool_in`]).
pub(super) fn spool_stdin(root: &Path, cfg: &HostConfig, now: DateTime<Utc>) -> Result<Option<String>> {
    let spool = state_dir(root).join("spool");
    let max = cfg.intake.max_message_bytes;
    let mut raw = Vec::new();
    std::io::stdin().take(max.saturating_add(1)).read_to_end(&mut raw).map_err(|e| store::io(Path::new("<stdin>"), e))?;
    if raw.len() as u64 > max {
        // Keep the head only (enough to answer) and count the rest without keeping it.
        raw.truncate(HEAD_BYTES);
        let rest = std::io::copy(&mut std::io::stdin(), &mut std::io::sink()).unwrap_or(0);
        spool_too_large(&spool, &raw, max.saturating_add(1).saturating_add(rest), now, 0)
    } else {
        spool_in(&spool, &raw, now, 0, None)
    }
}

/// Splits an mbox into the spool Maildir (each message once, whatever was taken before).
pub(super) fn spool_mbox(spool: &Path, f: &Path, cfg: &HostConfig, now: DateTime<Utc>) -> Result<()> {
    // Spooled messages are named by when and in which order they were taken in, so they are
    // handled in arrival order (the newest order of a role is the one that counts).
    let mut seq = 0u32;
    // A regular file only: a FIFO or `/dev/zero` would never end (tester9 D6).
    let file = store::open_regular(f).map_err(|e| store::io(f, e))?;
    let max = cfg.intake.max_message_bytes;
    split_mbox(std::io::BufReader::new(file), max, &mut |bytes, size| {
        seq += 1;
        if size > max { spool_too_large(spool, bytes, size, now, seq).map(|_| ()) } else { spool_in(spool, bytes, now, seq, None).map(|_| ()) }
    })
    .map_err(|e| match e {
        Error::Io { source, .. } => store::io(f, source),
        other => other,
    })
}

/// A message waiting: its Maildir (or the spool), its path and its file name.
pub(super) type Arrived = (PathBuf, PathBuf, String);

/// Something among the messages that cannot be one: its path and why.
pub(super) type NotMessage = (PathBuf, String);

/// The messages waiting in the Maildirs' `new/` and `cur/`, as (Maildir, path, name), in the
/// order they arrived across all of them: by the delivery second that starts a Maildir name (else
/// the file's modification second), then by modification time, then by name compared with digit
/// runs as numbers (names carry counters, e.g. `1797100000.M99999P1.host` before
/// `1797100000.M100000P2.host`; spooled names are `SECONDS.SEQUENCE.HASH`). The name comes first
/// so that a Maildir copied without its file times keeps its order.
///
/// Also returns what is there but cannot be a message, each (path, why): a FIFO, a device, a
/// folder, a dangling link, a file that cannot be looked at. It is left in place, never read or
/// waited on; the run names it and exits 1 (tester9 D9, tester11 D7, tester t25a-7).
pub(super) fn arrival_order(maildirs: &[PathBuf]) -> Result<(Vec<Arrived>, Vec<NotMessage>)> {
    let mut found = Vec::new();
    let mut not_messages = Vec::new();
    for maildir in maildirs {
        for sub in ["new", "cur"] {
            let dir = maildir.join(sub);
            for name in store::list(&dir)? {
                if name.starts_with('.') || name.ends_with(".toolarge") {
                    continue;
                }
                let path = dir.join(&name);
                let meta = match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => m,
                    // Moved away since it was listed (a mail reader sharing the Maildir); a
                    // dangling link is said below.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.symlink_metadata().is_err() => continue,
                    // Said at every run (cron mails it to the host), never read.
                    other => {
                        not_messages.push((path, other.map_or_else(|e| e.to_string(), |_| "not a regular file (a FIFO, a device or a folder)".to_string())));
                        continue;
                    }
                };
                let mtime = meta.modified().ok();
                let mtime_secs = mtime.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs());
                let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
                let second = if digits.len() >= 9 && name[digits.len()..].starts_with('.') { digits.parse().unwrap_or(mtime_secs) } else { mtime_secs };
                found.push(((second, mtime), maildir.clone(), path, name));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| natural_cmp(&a.3, &b.3)));
    Ok((found.into_iter().map(|(_, m, p, n)| (m, p, n)).collect(), not_messages))
}

/// Compares names with each run of ASCII digits taken as a number (`M99999` < `M100000`).
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for ((da, xa), (db, xb)) in ra.iter().zip(rb.iter()) {
        let ord = if *da && *db {
            let (ta, tb) = (xa.trim_start_matches('0'), xb.trim_start_matches('0'));
            ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb))
        } else {
            xa.cmp(xb)
        };
        if ord.is_ne() {
            return ord;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

/// Delivers `raw` into the spool Maildir as `new/SECONDS.SEQUENCE.HASH` (the intake time `now`,
/// the message's place in its mbox, the SHA-256 of its bytes) unless a message with those bytes
/// is already waiting there or was handled (marked seen in `.mail/log`); returns the name, or `None`.
/// `too_large`: the real size of a message of which `raw` is only the head, written first to
/// the marker `new/NAME.toolarge`.
pub(super) fn spool_in(spool: &Path, raw: &[u8], now: DateTime<Utc>, seq: u32, too_large: Option<u64>) -> Result<Option<String>> {
    let hash = crate::commit::sha256_hex(raw);
    let seen = match spool.parent() {
        Some(state) => super::log::seen_on_disk(state, &hash)?,
        None => false,
    };
    if seen || store::list(&spool.join("new"))?.iter().any(|n| n.ends_with(&format!(".{hash}"))) {
        return Ok(None);
    }
    let name = format!("{:011}.{seq:06}.{hash}", now.timestamp().max(0));
    if let Some(size) = too_large {
        store::write_atomic(&spool.join("new").join(format!("{name}.toolarge")), format!("{size}\n").as_bytes())?;
    }
    store::write_atomic(&spool.join("new").join(&name), raw)?;
    std::fs::create_dir_all(spool.join("cur")).map_err(|e| store::io(spool, e))?;
    Ok(Some(name))
}

/// How much of a message over the size limit is kept: enough for its headers, to answer it.
pub(super) const HEAD_BYTES: usize = 64 * 1024;

/// Delivers the head of a message over the size limit into the spool Maildir, with the marker
/// `new/NAME.toolarge` holding its real size in bytes, so it is refused (and answered) without
/// ever being held whole.
pub(super) fn spool_too_large(spool: &Path, head: &[u8], size: u64, now: DateTime<Utc>, seq: u32) -> Result<Option<String>> {
    // At most HEAD_BYTES in all, so the hash taken when it is handled (of its first HEAD_BYTES)
    // is the hash it was spooled under, and taking the mbox again adds nothing.
    const CUT: &[u8] = b"\n[pbem: message cut: larger than max_message_bytes]\n";
    let head = &head[..head.len().min(HEAD_BYTES - CUT.len())];
    let mut cut = head.to_vec();
    cut.extend_from_slice(CUT);
    spool_in(spool, &cut, now, seq, Some(size))
}

/// Splits an mbox into its messages, holding at most `max` + one line bytes of any one, and
/// calls `each(bytes, size)` per message: `bytes` is the whole message when `size <= max`, else
/// only its head (the first [`HEAD_BYTES`]).
///
/// The format (mboxo/mboxrd, RFC 4155): a message starts at a line beginning `From ` at the start
/// of the file or after a newline (that separator line is not part of the message); inside a
/// message a line `>From `, `>>From `, ... loses one `>`. Bytes before the first separator are
/// ignored. mail-parser's mbox reader holds each message whole, which would let one 20 MB
/// attachment into memory before the size check, hence this reader; lines are read in pieces of
/// at most [`HEAD_BYTES`], so a file without newlines is not held whole either.
///
/// Errors: the reader's I/O errors, and whatever `each` returns.
pub(super) fn split_mbox(mut reader: impl std::io::BufRead, max: u64, each: &mut dyn FnMut(&[u8], u64) -> Result<()>) -> Result<()> {
    let io = |e| store::io(Path::new("<mbox>"), e);
    let mut current: Option<(Vec<u8>, u64)> = None;
    let mut line = Vec::new();
    let mut at_line_start = true;
    loop {
        line.clear();
        let n = std::io::BufRead::read_until(&mut (&mut reader).take(HEAD_BYTES as u64), b'\n', &mut line).map_err(io)?;
        if n == 0 {
            break;
        }
        let starts_line = at_line_start;
        at_line_start = line.ends_with(b"\n");
        if starts_line && line.starts_with(b"From ") {
            if let Some((bytes, size)) = current.take() {
                each(&bytes, size)?;
            }
            current = Some((Vec::new(), 0));
            continue;
        }
        let Some((bytes, size)) = current.as_mut() else { continue };
        let quotes = line.iter().take_while(|&&b| b == b'>').count();
        let piece = if starts_line && quotes > 0 && line[quotes..].starts_with(b"From ") { &line[1..] } else { &line[..] };
        *size += piece.len() as u64;
        if *size <= max {
            bytes.extend_from_slice(piece);
        } else if bytes.len() > HEAD_BYTES {
            bytes.truncate(HEAD_BYTES);
        } else if bytes.len() < HEAD_BYTES {
            let room = HEAD_BYTES - bytes.len();
            bytes.extend_from_slice(&piece[..piece.len().min(room)]);
        }
    }
    if let Some((bytes, size)) = current {
        each(&bytes, size)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &[u8], max: u64) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        split_mbox(text, max, &mut |b, size| {
            out.push((b.to_vec(), size));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn mbox_separators_quotes_and_leading_junk() {
        let text = b"junk before any separator\nFrom a@b Wed Jul  1 13:00:00 2026\nSubject: one\n\n>From here\n>>From there\nFrom: a header line is no separator\nFrom b@c Thu Jul  2 13:00:00 2026\nSubject: two\n";
        let got = split(text, 1000);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, b"Subject: one\n\nFrom here\n>From there\nFrom: a header line is no separator\n".to_vec());
        assert_eq!(got[1].0, b"Subject: two\n".to_vec());
        assert!(got.iter().all(|(b, size)| b.len() as u64 == *size));
    }

    #[test]
    fn an_mbox_message_over_the_limit_keeps_only_its_head_but_counts_every_byte() {
        let mut text = b"From a@b Wed Jul  1 13:00:00 2026\nSubject: big\n\n".to_vec();
        // One line of 3 * HEAD_BYTES without a newline: read in pieces, never whole.
        text.extend(std::iter::repeat_n(b'x', 3 * HEAD_BYTES));
        text.extend_from_slice(b"\nFrom b@c Thu Jul  2 13:00:00 2026\nSubject: small\n");
        let got = split(&text, 1000);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1, 14 + 3 * HEAD_BYTES as u64 + 1);
        assert_eq!(got[0].0.len(), HEAD_BYTES);
        assert!(got[0].0.starts_with(b"Subject: big\n"));
        // A line starting "From " in the middle of a long line is not a separator.
        assert_eq!(got[1].0, b"Subject: small\n".to_vec());
    }
}
