//! The nonce index `host/nonces`: every accepted order's step, receipt name and nonce (and its
//! receipt's role, seq, commitment and time), so that `submit` checks a nonce's freshness and
//! the open step's receipts without reading every sealed order and receipt of the game.
//!
//! `submit` writes it with each receipt, in the same durable commit (before the receipt, the
//! commit point). It is trusted only while its checksum holds and it names exactly the receipt
//! files on disk (a listing of `receipts/` and of each step's folder; no file is read). On any
//! doubt (missing, unreadable, another format, damaged, a receipt it lacks or one it names that
//! is absent: an order cut off by a crash before its receipt, receipts written by an older pbem or
//! restored from a backup) it is rebuilt from the sealed orders and the receipts, as `submit` read
//! them before. It is host-side (`host/`), never published nor audited.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::error::Result;
use crate::model::Receipt;
use crate::store::{self, GameDir};
use crate::{commit, orderfile};

const MAGIC: &str = "pbem-nonces 1";

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
        if let Some(idx) = std::fs::read_to_string(path(dir)).ok().and_then(|t| NonceIndex::parse(&t))
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
        Ok(NonceIndex { entries })
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

    /// Adds an accepted order (before its receipt is written).
    pub fn add(&mut self, receipt: &Receipt, nonce: Option<[u8; 32]>) {
        let brief = Brief { role: receipt.role.clone(), seq: receipt.seq, commitment: receipt.commitment.clone(), received: receipt.received.clone() };
        self.entries.push(Entry { step: receipt.step, name: format!("{}-{}", receipt.role, receipt.seq), nonce, brief: Some(brief) });
    }

    /// The file's text; `None` when a field could not be written on one line (then no index is
    /// kept, and every submit reads the files).
    pub fn text(&self) -> Option<String> {
        let word = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        let mut body = format!("{MAGIC}\n");
        for e in &self.entries {
            let nonce = e.nonce.map_or("-".to_string(), hex::encode);
            if !word(&e.name) {
                return None;
            }
            body.push_str(&format!("{} {} {nonce}", e.step, e.name));
            if let Some(b) = &e.brief {
                if !(word(&b.role) && word(&b.commitment) && word(&b.received)) {
                    return None;
                }
                body.push_str(&format!(" {} {} {} {}", b.role, b.seq, b.commitment, b.received));
            }
            body.push('\n');
        }
        let sum = commit::sha256_hex(body.as_bytes());
        Some(format!("{body}sha256 {sum}\n"))
    }

    fn parse(text: &str) -> Option<NonceIndex> {
        let (body, last) = text.strip_suffix('\n')?.rsplit_once('\n').map(|(b, l)| (format!("{b}\n"), l))?;
        if last.strip_prefix("sha256 ")? != commit::sha256_hex(body.as_bytes()) {
            return None;
        }
        let mut lines = body.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut entries = Vec::new();
        for line in lines {
            let f: Vec<&str> = line.split(' ').collect();
            let nonce = match *f.get(2)? {
                "-" => None,
                n => Some(commit::parse_32(n)?),
            };
            let brief = match f.as_slice() {
                [_, _, _] => None,
                [_, _, _, role, seq, commitment, received] => {
                    Some(Brief { role: role.to_string(), seq: seq.parse().ok()?, commitment: commitment.to_string(), received: received.to_string() })
                }
                _ => return None,
            };
            entries.push(Entry { step: f[0].parse().ok()?, name: f[1].to_string(), nonce, brief });
        }
        Some(NonceIndex { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_damage_is_refused() {
        let brief = Brief { role: "union".into(), seq: 2, commitment: "ab".repeat(32), received: "2026-07-01T12:00:00Z".into() };
        let idx = NonceIndex {
            entries: vec![
                Entry { step: 1, name: "union-1".into(), nonce: Some([7; 32]), brief: None },
                Entry { step: 2, name: "union-2".into(), nonce: None, brief: Some(brief) },
            ],
        };
        let text = idx.text().unwrap();
        assert_eq!(NonceIndex::parse(&text), Some(idx.clone()));
        assert_eq!(NonceIndex::parse(&NonceIndex::default().text().unwrap()), Some(NonceIndex::default()));
        for cut in 0..text.len() - 1 {
            assert_eq!(NonceIndex::parse(&text[..cut]), None, "cut at {cut}");
        }
        // A changed nonce with the checksum left as it was.
        assert_eq!(NonceIndex::parse(&text.replace(&"07".repeat(32), &"08".repeat(32))), None);
        assert!(idx.used(&[7; 32]) && !idx.used(&[8; 32]));
    }
}
