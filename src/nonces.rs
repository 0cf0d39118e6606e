//! The nonce index `host/nonces`: every accepted order's step, receipt name and nonce (and its
//! receipt's role, seq, commitment and time), so that `submit` checks a nonce's freshness and
//! the open step's receipts without reading every sealed order and receipt of the game.
//!
//! One line an order, each with its own checksum, appended (`O_APPEND`, one `write` for a whole
//! batch of orders) before the batch's receipts: the line goes into the same durable commit as
//! the order's sealed copy, and the receipt, the commit point, is written only after it. So a
//! `submit` of a batch writes the index once, and never rewrites what is there. It is trusted
//! only while every line's checksum holds and it names exactly the receipt files on disk (a
//! listing of `receipts/` and of each step's folder; no file is read); a torn last line (a
//! power loss mid-append) is left out, and then the listing decides. On any doubt (missing,
//! unreadable, another format, damaged, a receipt it lacks or one it names that is absent: an
//! order cut off by a crash before its receipt, receipts written by an older pbem or restored
//! from a backup) it is rebuilt from the sealed orders and the receipts, as `submit` read them
//! before, and the next write replaces the file whole (temp file and rename) instead of
//! appending. It is host-side (`host/`), never published nor audited.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::error::Result;
use crate::model::Receipt;
use crate::store::{self, GameDir};
use crate::{commit, orderfile};

const MAGIC: &str = "pbem-nonces 2";

/// How many hex digits of a line's SHA-256 end it (its checksum).
const CHECK_HEX: usize = 16;

/// The largest index read (a line of ~180 bytes an accepted order); a larger file, like one that
/// is not a regular file (a FIFO, a link to `/dev/zero`: found by tester8), is rebuilt from the
/// receipts.
const MAX_BYTES: u64 = 64 << 20;

/// What the index keeps of a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The seat's role.
    pub role: String,
    /// The receipt's number for that role in its step.
    pub seq: u64,
    /// The order commitment (hex).
    pub commitment: String,
    /// When it was received (RFC 3339, as in the receipt).
    pub received: String,
}

/// One accepted order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    step: u64,
    /// The receipt's file stem, `ROLE-SEQ`.
    name: String,
    nonce: Option<[u8; 32]>,
    /// `None` for a receipt that could not be read when the index was rebuilt (only allowed for a
    /// step no longer open).
    brief: Option<Brief>,
}

/// The index of one game (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NonceIndex {
    entries: Vec<Entry>,
    /// How many of `entries` the file holds exactly as they would be written (appending the rest
    /// brings it up to date); `None` when the file must be replaced whole (rebuilt, torn, damaged,
    /// missing, or an entry that cannot be written on one line).
    on_file: Option<usize>,
}

/// What brings the index file up to date ([`NonceIndex::update`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Lines to append to the file as it is.
    Append(Vec<u8>),
    /// The whole file, to replace it.
    Replace(Vec<u8>),
}

/// `DIR/host/nonces`.
pub fn path(dir: &GameDir) -> PathBuf {
    dir.root.join("host").join("nonces")
}

/// The receipt files on disk, as (step, `ROLE-SEQ`).
fn on_disk(dir: &GameDir) -> Result<BTreeSet<(u64, String)>> {
    let mut out = BTreeSet::new();
    for folder in store::list(&dir.root.join("receipts"))? {
        let Some(step) = folder.parse::<u64>().ok().filter(|s| dir.receipts(*s).ends_with(&folder)) else { continue };
        for name in store::list(&dir.receipts(step))? {
            if let Some(stem) = name.strip_suffix(".toml") {
                out.insert((step, stem.to_string()));
            }
        }
    }
    Ok(out)
}

impl NonceIndex {
    /// The index of the game in `dir` whose open step is `open`: the stored one when it holds,
    /// else rebuilt from the files. Errors: a receipt of the open step or a sealed order that
    /// cannot be read.
    pub fn load(dir: &GameDir, open: u64) -> Result<NonceIndex> {
        let disk = on_disk(dir)?;
        if let Some(idx) = store::read_hint(&path(dir), MAX_BYTES).and_then(|t| NonceIndex::parse(t.as_bytes()))
            && idx.entries.iter().map(|e| (e.step, e.name.clone())).collect::<BTreeSet<_>>() == disk
            && idx.entries.len() == disk.len()
            && idx.entries.iter().all(|e| e.step != open || e.brief.is_some())
        {
            return Ok(idx);
        }
        NonceIndex::rebuild(dir, &disk, open)
    }

    /// From the receipts and sealed orders (a sealed order without its receipt was never accepted).
    fn rebuild(dir: &GameDir, disk: &BTreeSet<(u64, String)>, open: u64) -> Result<NonceIndex> {
        let mut entries = Vec::new();
        for (step, name) in disk {
            let rpath = dir.receipts(*step).join(format!("{name}.toml"));
            let brief = match crate::model::read_receipt(&rpath) {
                Ok(r) => Some(Brief { role: r.role, seq: r.seq, commitment: r.commitment, received: r.received }),
                Err(e) if *step == open => return Err(e),
                Err(_) => None,
            };
            let sealed = dir.sealed(*step).join(format!("{name}.txt"));
            let nonce = if sealed.exists() {
                // By value: the same 32 bytes written in capitals or with spaces are the same nonce.
                orderfile::parse(&store::read_text(&sealed)?).ok().and_then(|f| commit::parse_32(&f.header.nonce))
            } else {
                None
            };
            entries.push(Entry { step: *step, name: name.clone(), nonce, brief });
        }
        Ok(NonceIndex { entries, on_file: None })
    }

    /// A nonce of an order ever accepted in this game.
    pub fn used(&self, nonce: &[u8; 32]) -> bool {
        self.entries.iter().any(|e| e.nonce.as_ref() == Some(nonce))
    }

    /// The receipts of `step`, sorted by role and then seq.
    pub fn receipts(&self, step: u64) -> Vec<&Brief> {
        let mut out: Vec<&Brief> = self.entries.iter().filter(|e| e.step == step).filter_map(|e| e.brief.as_ref()).collect();
        out.sort_by(|a, b| (&a.role, a.seq).cmp(&(&b.role, b.seq)));
        out
    }

    /// The newest receipt of `role` in a step up to `step`, as (step, seq): its order is the one
    /// of the seat's in force (a draw offer stands in it).
    pub fn newest_of(&self, role: &str, step: u64) -> Option<(u64, u64)> {
        self.entries.iter().filter(|e| e.step <= step).filter_map(|e| e.brief.as_ref().filter(|b| b.role == role).map(|b| (e.step, b.seq))).max()
    }

    /// Adds an accepted order (before its receipt is written).
    pub fn add(&mut self, receipt: &Receipt, nonce: Option<[u8; 32]>) {
        let brief = Brief { role: receipt.role.clone(), seq: receipt.seq, commitment: receipt.commitment.clone(), received: receipt.received.clone() };
        self.entries.push(Entry { step: receipt.step, name: format!("{}-{}", receipt.role, receipt.seq), nonce, brief: Some(brief) });
    }

    /// What to write so that the file holds every entry: the new entries' lines to append, or
    /// the whole file when it cannot be appended to; `None` when it is up to date, or when an
    /// entry cannot be written on one line (then the file is left to be rebuilt by the next
    /// `submit`, which reads the files). Call [`NonceIndex::written`] once it is written.
    pub fn update(&self) -> Option<Update> {
        let from = self.on_file.unwrap_or(0);
        if self.on_file == Some(self.entries.len()) {
            return None;
        }
        let mut text = if self.on_file.is_some() { String::new() } else { format!("{MAGIC}\n") };
        for e in &self.entries[from..] {
            text.push_str(&line(e)?);
        }
        Some(if self.on_file.is_some() { Update::Append(text.into_bytes()) } else { Update::Replace(text.into_bytes()) })
    }

    /// Notes that [`NonceIndex::update`]'s bytes were written.
    pub fn written(&mut self) {
        self.on_file = Some(self.entries.len());
    }

    /// The index as the file's bytes hold it: `None` when it is not one (another format, a line
    /// damaged). A last line without its newline (torn by a power loss) is left out, and the
    /// index then cannot be appended to.
    fn parse(bytes: &[u8]) -> Option<NonceIndex> {
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let text = std::str::from_utf8(&bytes[..whole]).ok()?;
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let entries = lines.map(parse_line).collect::<Option<Vec<Entry>>>()?;
        let on_file = (whole == bytes.len()).then_some(entries.len());
        Some(NonceIndex { entries, on_file })
    }
}

/// An entry's line, ending with its checksum and a newline; `None` when a field is empty or
/// holds a space.
fn line(e: &Entry) -> Option<String> {
    let word = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
    let nonce = e.nonce.map_or("-".to_string(), hex::encode);
    if !word(&e.name) {
        return None;
    }
    let mut body = format!("{} {} {nonce}", e.step, e.name);
    if let Some(b) = &e.brief {
        if !(word(&b.role) && word(&b.commitment) && word(&b.received)) {
            return None;
        }
        body.push_str(&format!(" {} {} {} {}", b.role, b.seq, b.commitment, b.received));
    }
    let sum = commit::sha256_hex(body.as_bytes());
    Some(format!("{body} {}\n", &sum[..CHECK_HEX]))
}

/// One line (without its newline), `None` unless its checksum holds and its fields read.
fn parse_line(l: &str) -> Option<Entry> {
    let (body, sum) = l.rsplit_once(' ')?;
    if sum.len() != CHECK_HEX || commit::sha256_hex(body.as_bytes())[..CHECK_HEX] != *sum {
        return None;
    }
    let f: Vec<&str> = body.split(' ').collect();
    let nonce = match *f.get(2)? {
        "-" => None,
        n => Some(commit::parse_32(n)?),
    };
    let brief = match f.as_slice() {
        [_, _, _] => None,
        [_, _, _, role, seq, commitment, received] => Some(Brief { role: role.to_string(), seq: seq.parse().ok()?, commitment: commitment.to_string(), received: received.to_string() }),
        _ => return None,
    };
    Some(Entry { step: f[0].parse().ok()?, name: f[1].to_string(), nonce, brief })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_and_damage_or_a_torn_line_is_caught() {
        let brief = Brief { role: "union".into(), seq: 2, commitment: "ab".repeat(32), received: "2026-07-01T12:00:00Z".into() };
        let mut idx = NonceIndex { entries: vec![Entry { step: 1, name: "union-1".into(), nonce: Some([7; 32]), brief: None }], on_file: None };
        let Some(Update::Replace(mut file)) = idx.update() else { panic!("a new index is written whole") };
        idx.written();
        assert_eq!(idx.update(), None, "up to date");
        idx.entries.push(Entry { step: 2, name: "union-2".into(), nonce: None, brief: Some(brief) });
        let Some(Update::Append(more)) = idx.update() else { panic!("the new entry is appended") };
        assert_eq!(more.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        file.extend_from_slice(&more);
        idx.written();
        assert_eq!(NonceIndex::parse(&file), Some(idx.clone()));
        let empty = NonceIndex { entries: vec![], on_file: Some(0) };
        assert_eq!(NonceIndex::parse(format!("{MAGIC}\n").as_bytes()), Some(empty));
        // Cut anywhere: either refused, or the whole lines before the cut, never to be appended to.
        let first_line = file.iter().position(|b| *b == b'\n').unwrap() + 1;
        for cut in 0..file.len() - 1 {
            match NonceIndex::parse(&file[..cut]) {
                None => assert!(cut < first_line, "cut at {cut}"),
                Some(p) => {
                    assert!(p.on_file.is_none() || file[cut - 1] == b'\n', "cut at {cut}");
                    assert!(idx.entries.starts_with(&p.entries) && p.entries.len() < 2, "cut at {cut}");
                }
            }
        }
        // A changed nonce with the checksum left as it was.
        let text = String::from_utf8(file).unwrap();
        assert_eq!(NonceIndex::parse(text.replace(&"07".repeat(32), &"08".repeat(32)).as_bytes()), None);
        assert!(idx.used(&[7; 32]) && !idx.used(&[8; 32]));
        // An older format is not read (it is rebuilt, then replaced).
        assert_eq!(NonceIndex::parse(b"pbem-nonces 1\nsha256 00\n"), None);
    }
}
