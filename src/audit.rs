//! `pbem audit`: re-checks a whole game from its files: signatures, receipts, commitments, seed
//! derivations, the hash chain, and a replay of every step to byte-identical states and reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::commit::{self, NMR_NONCE};
use crate::dice::Ctx;
use crate::error::{AuditCheck, AuditFailure, Error, Result};
use crate::game::{Orders, Pending};
use chrono::{DateTime, Utc};

use crate::game::{DynGame, Publication};
use crate::history;
use crate::model::{self, GameFile, LateReveal, NmrMode, Opening, Receipt, Record, Resolution, Revealed, WithheldUntil};
use crate::orderfile;
use crate::pipeline::{self, NS_ORDERS, NS_RECEIPT, NS_RECORD, sig_path};
use crate::report;
use crate::sig;
use crate::store::{self, GameDir};

mod ahead;

/// What a passing audit checked.
#[derive(Debug, Default)]
pub struct AuditSummary {
    /// Records checked in full, replay included (record 0 counts).
    pub records: u64,
    /// Revealed orders checked against signatures and receipts.
    pub orders: u64,
    /// NMR slots checked against the game's default.
    pub nmr: u64,
    /// Signed orders a record that ended the game quotes (a resignation, a draw's offers),
    /// each checked against its receipt and its seat's signature.
    pub quoted: u64,
    /// Reports regenerated and compared.
    pub reports: u64,
    /// True when `states/` and `reports/` were absent (a public copy made mid-game): every
    /// replayed state was checked against its commitment in the record instead, reports not at all.
    pub public_copy: bool,
    /// True when the state commitments could not be checked: a public copy of a game still going
    /// on, whose state key only the last record reveals.
    pub states_unchecked: bool,
    /// `Some((first, last))` when records `first..=last` could not be replayed because the orders
    /// of record `first` are still withheld (a public copy without `host/`): those records were
    /// checked only for what needs no replay (host signatures, the hash chain, host seeds against
    /// their commitments, times, every order's receipt, public orders' signatures and commitments,
    /// step seeds whose nonces are all known). `None` when every record was checked in full.
    pub secret: Option<(u64, u64)>,
    /// Signed orders checked (signature, commitment, receipt) in records that could not be replayed.
    pub unreplayed_orders: u64,
    /// The replayed state after each record checked in full, by record index from record 0 (the
    /// replay stops at the first record whose orders are still withheld): what `pbem publish`
    /// draws the public pictures from.
    pub states: Vec<String>,
    /// Every nonce of a revealed order so far, with whose order it was ("union in step 3"): a
    /// nonce is used once in a game.
    nonces: BTreeMap<[u8; 32], String>,
}

impl AuditSummary {
    /// Records the nonce of `role`'s order in `step` (read from `opath`; `empty`: the order has
    /// none, which counts as the zero placeholder); a second use, or a written nonce of zeros, fails.
    fn nonce_once(&mut self, nonce: [u8; 32], role: &str, step: u64, opath: &Path, empty: bool) -> Result<()> {
        if empty {
            return Ok(());
        }
        if nonce == NMR_NONCE {
            return Err(fail(AuditCheck::Order, opath, format!("the order of {role} in step {step} has a nonce of zeros, which submission refuses")));
        }
        let who = format!("{role} in step {step}");
        match self.nonces.insert(nonce, who.clone()) {
            Some(before) if before != who => Err(fail(AuditCheck::Order, opath, format!("the order of {who} reuses the nonce of the order of {before} (a replayed order?)"))),
            _ => Ok(()),
        }
    }
}

impl AuditSummary {
    /// E.g. "22 records, 42 signed orders, 2 NMR, 44 reports replayed byte for byte"; for a partial
    /// audit "up to record 7 (...); record 8 holds orders the game still keeps secret, so records
    /// 8-9 were checked without replay (...): audit again when they are revealed".
    pub fn describe(&self) -> String {
        let n = |k: u64, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        // A game its players ended: the orders its last record quotes too (tester15 T15-8).
        let orders = match self.quoted {
            0 => n(self.orders, "signed order", "signed orders"),
            q => format!("{} ({q} more quoted by the end)", n(self.orders, "signed order", "signed orders")),
        };
        let counts = if self.public_copy {
            format!(
                "{}, {}, {} NMR, {} (a public copy: no states/ or reports/ to compare)",
                n(self.records, "record", "records"),
                orders,
                self.nmr,
                if self.states_unchecked {
                    "state commitments not checked yet (the last record reveals their key)"
                } else {
                    "every replayed state matching its record's commitment"
                }
            )
        } else {
            format!(
                "{}, {}, {} NMR, {} replayed byte for byte",
                n(self.records, "record", "records"),
                orders,
                self.nmr,
                n(self.reports, "report", "reports")
            )
        };
        match self.secret {
            None => counts,
            Some((first, last)) => {
                let which = if first == last { format!("record {first} was") } else { format!("records {first}-{last} were") };
                format!(
                    "up to record {} ({counts}); record {first} holds orders the game still keeps secret, so {which} \
                     checked without replay (host signatures, hash chain, host seeds, times, every order's receipt, {}, \
                     step seeds whose nonces are all known, every roll from its step seed): audit again when they are revealed",
                    first - 1,
                    n(self.unreplayed_orders, "public order against its signature and commitment", "public orders against their signatures and commitments")
                )
            }
        }
    }
}

/// An audit failure of `check` about `path`: `PATH: what`. A `what` that already names the path
/// (an error passed on from a reader, `PATH:LINE: ...`) or is itself an audit failure is not
/// wrapped again.
fn fail(check: AuditCheck, path: &Path, what: impl std::fmt::Display) -> Error {
    let p = path.display().to_string();
    let what = what.to_string();
    let what = what.strip_prefix("audit failed: ").unwrap_or(&what);
    if let Some(rest) = what.strip_prefix(&format!("{p}:")) {
        let (line, detail) = match rest.split_once(": ") {
            Some((l, d)) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => (l.parse().ok(), d),
            _ => (None, rest.strip_prefix(' ').unwrap_or(rest)),
        };
        return AuditFailure::new(check, path, detail).at_line(line).into();
    }
    AuditFailure::new(check, path, what).into()
}

/// `e` as an audit failure of `check` about `path`: one already about `path` (an audit failure,
/// a problem in the file) keeps its own check and line; anything else is wrapped as [`fail`] does.
fn fail_err(check: AuditCheck, path: &Path, e: Error) -> Error {
    let f = AuditFailure::from_error(check, e);
    if f.path.as_deref() == Some(path) {
        return f.into();
    }
    fail(check, path, f)
}

/// [`fail`] for an error reading `path`: `missing` when it is not there, else the reader's reason.
fn fail_read(check: AuditCheck, path: &Path, e: Error) -> Error {
    match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => fail(AuditCheck::Missing, path, "missing"),
        Error::Io { source, .. } => fail(check, path, source),
        e => fail_err(check, path, e),
    }
}

/// `file` against what the replay made of it (`want`): the first line (from 1, split at `\n`
/// only, so a changed line ending shows too) where they differ, as `FILE:LINE: WHAT differs from
/// the replay: the file has "...", the replay has "..."` (each line cut to 100 characters).
fn differs(file: &Path, have: &[u8], want: &str, what: &str) -> Error {
    let have = String::from_utf8_lossy(have);
    // Lines, each without its `\n` (the text after the last `\n` is a line only if not empty).
    let lines = |t: &str| -> Vec<String> { t.strip_suffix('\n').unwrap_or(t).split('\n').map(str::to_string).collect() };
    let (h, w) = (lines(&have), lines(want));
    let shown = |l: Option<&String>, whose: &str| match l {
        Some(l) if l.chars().count() > 100 => format!("{whose} has {:?}...", l.chars().take(100).collect::<String>()),
        Some(l) => format!("{whose} has {l:?}"),
        None => format!("{whose} ends before it"),
    };
    match (0..h.len().max(w.len())).find(|&i| h.get(i) != w.get(i)) {
        Some(i) => AuditFailure::new(AuditCheck::Replay, file, format!("{what} differs from the replay: {}, {}", shown(h.get(i), "the file"), shown(w.get(i), "the replay"))).at_line(Some(i + 1)).into(),
        None => fail(AuditCheck::Replay, file, format!("{what} differs from the replay in its last line's end (a final newline)")),
    }
}

/// The first event where a record and its replay part: `resolution.events[I]: the record has
/// "...", the replay of step N has "..."` (an event's text, with its roll when it has one).
fn different_events(step: u64, recorded: &[crate::dice::Event], replayed: &[crate::dice::Event]) -> String {
    let shown = |e: Option<&crate::dice::Event>, whose: &str| match e {
        None => format!("{whose} has no such event"),
        Some(e) => {
            let mut about: Vec<String> = e.roll.iter().map(|r| format!("roll {} on a d{}", r.value, r.sides)).collect();
            about.extend((!e.to.is_empty()).then(|| format!("for {}", e.to.join(", "))));
            let about = if about.is_empty() { String::new() } else { format!(" ({})", about.join(", ")) };
            format!("{whose} has {:?}{about}", e.text)
        }
    };
    let i = (0..recorded.len().max(replayed.len())).find(|&i| recorded.get(i) != replayed.get(i)).unwrap_or(0);
    format!("resolution.events[{i}]: {}, {}", shown(recorded.get(i), "the record"), shown(replayed.get(i), &format!("the replay of step {step}")))
}

/// A record's opening (of step `want_step`) or outcome against what the replayed state waits
/// for: the one field that differs, with the record's and the replay's values.
fn check_next(rpath: &Path, bytes: &[u8], want_step: u64, rec: &Record, pending: Pending) -> Result<()> {
    let asks = |a: &[crate::game::Ask]| a.iter().map(|a| format!("{} ({})", a.role, a.kind)).collect::<Vec<_>>().join(", ");
    let at = |field: &str, what: String| fail_field(AuditCheck::Replay, rpath, bytes, field, "", what);
    match (pending, &rec.opening, &rec.outcome) {
        (Pending::Orders(want), Some(op), None) => {
            if op.step != want_step {
                return Err(at("opening.step", format!("is {}, but the replay opens step {want_step}", op.step)));
            }
            if want != op.asks {
                return Err(at("opening.asks", format!("the record asks {}, the replay asks {}", asks(&op.asks), asks(&want))));
            }
            Ok(())
        }
        (Pending::Over(o), None, Some(ro)) if &o == ro => Ok(()),
        (Pending::Over(o), None, Some(ro)) => Err(at("outcome", format!("the record has {:?} (winner {}), the replay has {:?} (winner {})", ro.summary, ro.winner.as_deref().unwrap_or("none"), o.summary, o.winner.as_deref().unwrap_or("none")))),
        (Pending::Over(o), _, _) => Err(at("opening", format!("the record opens another step, but in the replay the game is over: {}", o.summary))),
        (Pending::Orders(want), _, _) => Err(at("outcome", format!("the record ends the game (or opens no step), but in the replay it goes on, asking {}", asks(&want)))),
    }
}

/// Verifies the host signature beside `path` over the file's bytes. Each signature is checked
/// once an audit: one the work ahead (`ahead`) found good is marked so (`ReadReceipt::signed`,
/// `Ahead::record_signed`, `Ahead::order_signed`) and not checked again in order.
fn check_host_sig(path: &Path, bytes: &[u8], host: &ssh_key::PublicKey, ns: &str) -> Result<()> {
    check_host_sig_read(path, bytes, host, ns, None)
}

/// [`check_host_sig`], the signature file's text `read` already (else read now).
fn check_host_sig_read(path: &Path, bytes: &[u8], host: &ssh_key::PublicKey, ns: &str, read: Option<&str>) -> Result<()> {
    let sp = sig_path(path);
    let armored = match read {
        Some(text) => std::borrow::Cow::Borrowed(text),
        None => std::borrow::Cow::Owned(store::read_text(&sp).map_err(|e| fail_read(AuditCheck::Signature, &sp, e))?),
    };
    sig::verify(host, ns, bytes, &armored).map_err(|e| fail(AuditCheck::Signature, path, format!("host signature: {e}")))
}

/// Checks receipts a player holds (as mailed to them, each with its `.sig` beside it) against
/// the game in `dir`: each is signed by the game's host key, is in the game's `receipts/`
/// byte for byte, and, once its step is resolved, the order used for its role is that receipt's
/// or a later one, never an older one or an NMR (see `check_used_key` for a key that changed
/// meanwhile: a `warning:` line). This is what shows a host that dropped a
/// player's newer order: the game's own files alone cannot. Returns one line per receipt.
///
/// Errors: [`Error::Audit`] naming the receipt file and what is wrong.
pub fn check_held_receipts(dir: &Path, files: &[PathBuf]) -> Result<Vec<String>> {
    if files.is_empty() {
        // Nothing held to check (what the game's own files say, the audit checks).
        return Ok(Vec::new());
    }
    let gd = GameDir::new(dir);
    let gf = pipeline::read_game_file(&gd)?;
    let host = sig::public_key_line(&gf.host_key).map_err(|e| fail(AuditCheck::HeldReceipt, &gd.game_file(), format!("host_key: {e}")))?;
    let last = gd.last_contiguous_record()?.unwrap_or(0);
    let hist = history::read(&gd, last, &store::read(&gd.game_file())?, &store::read(&gd.scenario_file())?)?;
    let mut used: BTreeMap<(u64, String), (u64, Option<u64>)> = BTreeMap::new();
    for (n, rec) in hist.records.iter().map(|r| &r.record).enumerate().skip(1) {
        let n = n as u64;
        if let Some(res) = &rec.resolution {
            for o in &res.orders {
                used.insert((res.step, o.role.clone()), (n, o.seq));
            }
        }
    }
    let end = hist.records.last().map(|r| &r.record).filter(|r| r.outcome.is_some());
    let mut out = Vec::new();
    for f in files {
        // Bounded as an order file is (tester t18b-4: a 5 GB file was read whole).
        let bytes = store::read_limited(f, pipeline::MAX_ORDER_FILE_BYTES, "a receipt")?;
        let sp = sig_path(f);
        let armored = store::read_text_limited(&sp, pipeline::MAX_ORDER_FILE_BYTES, "a signature file").map_err(|e| fail_read(AuditCheck::Signature, &sp, e))?;
        check_host_sig_read(f, &bytes, &host, NS_RECEIPT, Some(&armored))?;
        let r: Receipt = toml::from_str(std::str::from_utf8(&bytes).unwrap_or("")).map_err(|e: toml::de::Error| fail(AuditCheck::HeldReceipt, f, format!("not a receipt: {}", e.message().trim())))?;
        if r.game != gf.id {
            return Err(fail(AuditCheck::HeldReceipt, f, format!("is a receipt of game {}, not of {}", r.game, gf.id)));
        }
        // The setup the receipt was issued under (as the records follow it through the seat
        // changes): a host that rewrote game.toml since (another seat key, deadline or NMR
        // policy) and re-signed record 0 is caught here.
        if hist.spans.contains_key(&r.step) && !hist.setup_during(r.step, &r.setup) {
            return Err(fail(AuditCheck::HeldReceipt, f, "was issued for another setup of this game: game.toml or scenario.toml (seat keys, deadlines, NMR policy, options) were rewritten since"));
        }
        // The history it was issued in: a record that stood while its step was open, and so
        // every record before (hash chain). A game cut short or rewritten since cannot match it.
        if let Err(e) = hist.check_receipt(r.step, &r.record, &r.setup) {
            return Err(fail(AuditCheck::HeldReceipt, f, format!("was issued after a record of step {}'s time the game does not hold as it had it then ({e}): the history was rewritten or cut short", r.step)));
        }
        let ours = gd.receipts(r.step).join(format!("{}-{}.toml", r.role, r.seq));
        match store::read(&ours) {
            Ok(b) if b == bytes => {}
            Ok(_) => return Err(fail(AuditCheck::HeldReceipt, f, format!("differs from the game's {}", ours.display()))),
            Err(_) => return Err(fail(AuditCheck::HeldReceipt, f, format!("is signed by the host but missing from the game ({} is not there): the host dropped it", ours.display()))),
        }
        let line = match used.get(&(r.step, r.role.clone())) {
            None => match end {
                Some(rec) => {
                    // A newer order of the role the end quotes, signed under another key: the
                    // warning (or failure) a used one gets (tester17 T17-5).
                    if let Some(seq) = rec.control.iter().flat_map(|c| &c.orders).find(|o| o.step == r.step && o.role == r.role && o.seq > r.seq).map(|o| o.seq) {
                        out.extend(check_used_key(&gd, &hist, f, &r, rec.index, seq, "ended the game quoting")?);
                    }
                    ended_before(f, &r, rec)
                }
                None => format!("{}: step {} not resolved yet; receipt {} of {} is in the game", f.display(), r.step, r.seq, r.role),
            },
            Some((n, None)) => return Err(fail(AuditCheck::HeldReceipt, f, format!("record {n} resolved step {} with {} as NMR, though the host had accepted this order", r.step, r.role))),
            Some((n, Some(seq))) if *seq < r.seq => {
                return Err(fail(AuditCheck::HeldReceipt, f, format!("record {n} used receipt {seq} of {} in step {}, older than this receipt {}: a newer order was dropped", r.role, r.step, r.seq)));
            }
            Some((n, Some(seq))) => {
                out.extend(check_used_key(&gd, &hist, f, &r, *n, *seq, "used")?);
                let also = end.filter(|e| quotes(e, r.step, &r.role, *seq)).map(|e| format!(", which record {} quotes in ending the game", e.index)).unwrap_or_default();
                format!("{}: receipt {} of {} in step {} is in the game; record {n} used receipt {seq}{also}", f.display(), r.seq, r.role, r.step)
            }
        };
        out.push(line);
    }
    Ok(out)
}

/// What a held receipt `r` (file `f`) of a step no record resolved says when record `end` ended
/// the game first: the game ended with this very order (a resignation, a draw offer it quotes),
/// or before the step was resolved (tester15 T15-8: it said "not resolved yet").
fn ended_before(f: &Path, r: &Receipt, end: &Record) -> String {
    let summary = end.outcome.as_ref().map_or("", |o| o.summary.as_str());
    let quoted = quotes(end, r.step, &r.role, r.seq);
    let how = if quoted { "ended the game quoting this order" } else { "ended the game before the step was resolved" };
    format!("{}: receipt {} of {} in step {} is in the game; record {} {how} ({summary})", f.display(), r.seq, r.role, r.step, end.index)
}

/// Whether the record `end` quotes receipt `seq` of `role` in `step` (a resignation, a draw).
fn quotes(end: &Record, step: u64, role: &str, seq: u64) -> bool {
    end.control.iter().flat_map(|c| &c.orders).any(|o| (o.step, o.role.as_str(), o.seq) == (step, role, seq))
}

/// A later order of the held receipt `r`'s role that record `n` used (receipt `seq`) was signed
/// under the seat key in force when it was received. When that is another key than the one `r`
/// was issued under while the key in force at the resolution is `r`'s again, the host swapped a
/// key in and back (to put in an order of its own): that fails, naming the seat changes. A key
/// that changed and stayed changed (the player asked for a new key, or the seat changed hands)
/// is announced in every report: a `warning:` line naming it and its seat changes, and a pass.
/// `Ok(None)` when the key did not change.
fn check_used_key(gd: &GameDir, hist: &history::History, f: &Path, r: &Receipt, n: u64, seq: u64, used_how: &str) -> Result<Option<String>> {
    if seq == r.seq {
        return Ok(None);
    }
    let path = gd.receipts(r.step).join(format!("{}-{seq}.toml", r.role));
    let used: Receipt = toml::from_str(&store::read_text(&path)?).map_err(|e| fail(AuditCheck::HeldReceipt, &path, format!("not a receipt: {}", e.message().trim())))?;
    let key_after = |record: &str| hist.by_hash.get(record).and_then(|&k| hist.seat_key(k, &r.role));
    let (held, then) = (key_after(&r.record), key_after(&used.record));
    if held == then {
        return Ok(None);
    }
    // The records before `n` stood while the step was open: the last of them has the key in
    // force when the step was resolved.
    let at_resolution = hist.seat_key(n.saturating_sub(1), &r.role);
    let changes: Vec<String> = hist.key_changes_during(r.step, &r.role).iter().map(u64::to_string).collect();
    let (role, step) = (&r.role, r.step);
    let what = format!(
        "record {n} {used_how} receipt {seq} of {role} in step {step}, an order signed with seat key {} while this receipt was issued under key {}: \
         the host changed {role}'s key while step {step} was open (seat change record(s) {})",
        then.unwrap_or_else(|| "?".into()),
        held.clone().unwrap_or_else(|| "?".into()),
        if changes.is_empty() { "none found".into() } else { changes.join(", ") },
    );
    if at_resolution == held {
        return Err(fail(AuditCheck::HeldReceipt, f, format!("{what} and back to this receipt's key before the step was resolved: an order put in under a key swapped in for a moment is not yours")));
    }
    Ok(Some(format!("warning: {}: {what}. If you did not change your key and send that order yourself, it is not yours", f.display())))
}

/// The most a kept report may weigh: a report is a few kilobytes; a whole saved mail with its
/// order-form attachment somewhat more.
const KEPT_REPORT_LIMIT: u64 = 4 << 20;

/// Checks reports a player kept (the report text or the whole mail as received) against the game
/// in `dir`: each names this game, and the game holds the record it names with the SHA-256 it
/// gives (so, through the hash chain, every record before it); a report saying the game ended
/// there needs that record to be the game's last. This is what shows a game cut short (its last
/// records removed with their states and reports, and what remains re-signed): the game's own
/// files alone cannot. Returns one line per report.
///
/// Errors: [`Error::Audit`] naming the report file and what is wrong or missing.
pub fn check_kept_reports(dir: &Path, files: &[PathBuf]) -> Result<Vec<String>> {
    let gd = GameDir::new(dir);
    let gf = pipeline::read_game_file(&gd)?;
    let last = gd.last_contiguous_record()?.ok_or_else(|| fail(AuditCheck::Missing, &gd.record(0), "missing: no records"))?;
    let mut out = Vec::new();
    // A file may hold several reports (a reply quoting an older one): each is checked.
    let mut pins = Vec::new();
    for f in files {
        pins.extend(read_kept_report(f)?.into_iter().map(|p| (f, p)));
    }
    for (f, pin) in pins {
        if pin.game != gf.id {
            return Err(fail(AuditCheck::KeptReport, f, format!("is a report of game {}, not of {}", pin.game, gf.id)));
        }
        let rpath = gd.record(pin.record);
        let bytes = match store::read(&rpath) {
            Ok(b) => b,
            Err(_) => {
                return Err(fail(AuditCheck::KeptReport, f, format!(
                    "follows record {} ({} is missing; the game's records stop at record {last}): the history was cut short{}",
                    pin.record,
                    rpath.display(),
                    if pin.over { ", and the end of the game removed" } else { "" }
                )))
            }
        };
        let hash = commit::sha256_hex(&bytes);
        if hash != pin.sha256 {
            return Err(fail(AuditCheck::KeptReport, f, format!(
                "follows record {} with SHA-256 {}, but the game's {} has {hash}: the history was rewritten since (or the report is not of this game)",
                pin.record, pin.sha256, rpath.display()
            )));
        }
        let rec: Record = serde_json::from_slice(&bytes).map_err(|e| fail(AuditCheck::KeptReport, &rpath, format!("not a record: {e}")))?;
        if pin.over != rec.outcome.is_some() {
            return Err(fail(AuditCheck::KeptReport, f, format!("says the game {} with record {}, but that record {}: the report was edited", if pin.over { "ended" } else { "went on" }, pin.record, if pin.over { "opens another step" } else { "ends it" })));
        }
        if pin.over && pin.record != last {
            return Err(fail(AuditCheck::KeptReport, f, format!("says the game ended with record {}, but the game goes on to record {last}", pin.record)));
        }
        out.push(if pin.over {
            format!("{}: the game ends with record {} as this report says (hash matches)", f.display(), pin.record)
        } else {
            format!("{}: record {} is in the game with this report's hash (the game has records up to {last})", f.display(), pin.record)
        });
    }
    Ok(out)
}

/// Every pin of a kept report: read from the file's text, or, for a saved mail (`.eml`, as a mail
/// client writes it, with encoded body parts), from its text parts.
fn read_kept_report(f: &Path) -> Result<Vec<report::Pin>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let file = store::open_regular(f).map_err(|e| store::io(f, e))?;
    file.take(KEPT_REPORT_LIMIT + 1).read_to_end(&mut bytes).map_err(|e| store::io(f, e))?;
    if bytes.len() as u64 > KEPT_REPORT_LIMIT {
        return Err(fail(AuditCheck::KeptReport, f, format!("is larger than {} MB: not a report", KEPT_REPORT_LIMIT >> 20)));
    }
    let direct = report::read_pins(&String::from_utf8_lossy(&bytes));
    if direct.is_ok() {
        return direct.map_err(|e| fail(AuditCheck::KeptReport, f, e));
    }
    // A saved mail: its text parts decoded (transfer encoding, charset).
    let body = crate::mail::extract::parse_message(&bytes)
        .filter(|m| !m.headers().is_empty())
        .map(|m| (0..m.text_body_count()).filter_map(|i| m.body_text(i)).collect::<Vec<_>>().join("\n"));
    match body.map(|b| report::read_pins(&b)) {
        Some(Ok(pins)) => Ok(pins),
        _ => direct.map_err(|e| fail(AuditCheck::KeptReport, f, e)),
    }
}

/// Audits the game in `dir`; `Ok` only if every check passes, otherwise [`Error::Audit`] naming
/// the first failure and its file. `templates` must be the override folder used by the host, if any.
/// On every core ([`audit_on`]).
pub fn audit(dir: &Path, templates: Option<&Path>) -> Result<AuditSummary> {
    audit_on(dir, templates, 0)
}

/// [`audit`] on at most `jobs` threads (0: one per core). The result, and the first failure
/// named, are the same whatever `jobs`; with 1 every check is done in order on this thread.
pub fn audit_on(dir: &Path, templates: Option<&Path>, jobs: usize) -> Result<AuditSummary> {
    let here = env!("CARGO_PKG_VERSION");
    // `game.toml` is read again only for a failure (the audit reads it first of all).
    audit_game(dir, templates, jobs).map_err(|e| match (e, pipeline::read_game_file(&GameDir::new(dir))) {
        (Error::Audit(mut f), Ok(gf)) if gf.pbem != here => {
            f.made_by = Some(gf.pbem);
            Error::Audit(f)
        }
        (e, _) => e,
    })
}

/// The line (from 1) of a field in a record's JSON text (`opening.deadline`: the `"deadline"`
/// line after the `"opening"` line) or a receipt's TOML text (`received`), holding `value` (any
/// value when empty: an object or a number), to point a failure at the field.
fn line_of(bytes: &[u8], field: &str, value: &str) -> Option<usize> {
    let text = std::str::from_utf8(bytes).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let mut parts: Vec<&str> = field.split('.').collect();
    let key = parts.pop()?;
    let mut from = 0;
    for p in parts {
        from += lines[from..].iter().position(|l| l.trim_start().starts_with(&format!("\"{p}\": ")))?;
    }
    let (json, toml) = if value.is_empty() {
        (format!("\"{key}\": "), format!("{key} = "))
    } else {
        (format!("\"{key}\": \"{value}\""), format!("{key} = \"{value}\""))
    };
    lines[from..].iter().position(|l| l.trim_start().starts_with(&json) || l.trim_start().starts_with(&toml)).map(|i| from + i + 1)
}

/// A failure at a field of a file: `FILE:LINE: FIELD: message`.
fn fail_field(check: AuditCheck, path: &Path, bytes: &[u8], field: &str, value: &str, what: impl std::fmt::Display) -> Error {
    AuditFailure::new(check, path, format!("{field}: {what}")).at_line(line_of(bytes, field, value)).into()
}

/// Parses a time a record or receipt holds; failures name the file and field.
fn time_of(path: &Path, bytes: &[u8], field: &str, value: &str) -> Result<DateTime<Utc>> {
    pipeline::parse_time(value).map_err(|_| fail_field(AuditCheck::Times, path, bytes, field, value, format!("{value:?} is not an RFC 3339 time")))
}

/// An opening's deadline is its `opened` time plus the hours `game.toml` gives its asks, computed
/// exactly as the pipeline does (the longest of the asked kinds' hours).
fn check_deadline(path: &Path, bytes: &[u8], gf: &GameFile, op: &Opening) -> Result<DateTime<Utc>> {
    let opened = time_of(path, bytes, "opening.opened", &op.opened)?;
    time_of(path, bytes, "opening.deadline", &op.deadline)?;
    let hours = gf.deadlines.hours_for(op.asks.iter().map(|a| a.kind.as_str()));
    let want = crate::when::later_hours(opened, hours).map_err(|e| fail_field(AuditCheck::Times, path, bytes, "opening.opened", &op.opened, e))?;
    let want = pipeline::timestamp(want);
    if op.deadline != want {
        let kinds: Vec<&str> = op.asks.iter().map(|a| a.kind.as_str()).collect();
        return Err(fail_field(AuditCheck::Times, path, bytes, "opening.deadline", &op.deadline, format!(
            "is not opening.opened ({}) plus the {hours} hours game.toml gives step {}'s asks ({}): want {want}",
            op.opened, op.step, kinds.join(", ")
        )));
    }
    Ok(opened)
}

/// Every receipt of `step` was issued while the step was open: at or after `opened`, and, once
/// the step is resolved, at or before the time `resolved` gives with the record that resolved it.
fn check_receipt_times(receipts: &[ReadReceipt], step: u64, opened: DateTime<Utc>, resolved: Option<(DateTime<Utc>, u64)>) -> Result<()> {
    for ReadReceipt { path, bytes, receipt: r, .. } in receipts {
        let t = time_of(path, bytes, "received", &r.received)?;
        if t < opened {
            return Err(fail_field(AuditCheck::Times, path, bytes, "received", &r.received, format!("is before step {step} opened ({})", pipeline::timestamp(opened))));
        }
        if let Some((res, n)) = resolved
            && t > res {
                return Err(fail_field(AuditCheck::Times, path, bytes, "received", &r.received, format!(
                    "is after step {step} was resolved in record {n} ({}): an order accepted too late",
                    pipeline::timestamp(res)
                )));
            }
    }
    Ok(())
}

/// The times of record `n` resolving the step `opening` opened: resolved no earlier than opened,
/// an NMR only once the deadline and grace had passed (and never under the `wait` policy), the
/// next step opened when this one was resolved. Returns when the step opened and was resolved
/// (every receipt of the step must lie in between: [`check_receipt_times`]).
fn check_times(gd: &GameDir, gf: &GameFile, n: u64, bytes: &[u8], rec: &Record, opening: &Opening, res: &Resolution) -> Result<(DateTime<Utc>, DateTime<Utc>)> {
    let rpath = gd.record(n);
    let opened = pipeline::parse_time(&opening.opened).map_err(|e| fail(AuditCheck::Times, &gd.record(n - 1), e))?;
    let resolved = time_of(&rpath, bytes, "resolution.resolved", &res.resolved)?;
    if resolved < opened {
        return Err(fail_field(AuditCheck::Times, &rpath, bytes, "resolution.resolved", &res.resolved, format!(
            "is before step {} opened ({}, record {}): times go backwards",
            res.step, opening.opened, n - 1
        )));
    }
    if let Some(nmr) = res.orders.iter().find(|o| o.seq.is_none()) {
        if gf.nmr.policy == NmrMode::Wait {
            let what = format!("{} is NMR in step {}, but the game's NMR policy is wait (game.toml [nmr])", nmr.role, res.step);
            return Err(AuditFailure::new(AuditCheck::Times, &rpath, what).at_line(line_of(bytes, "resolution.role", &nmr.role)).into());
        }
        let deadline = pipeline::parse_time(&opening.deadline).map_err(|e| fail(AuditCheck::Times, &gd.record(n - 1), e))?;
        let due = crate::when::later_hours(deadline, gf.deadlines.grace_hours).map_err(|e| fail(AuditCheck::Times, &gd.record(n - 1), format!("opening.deadline: {e}")))?;
        if resolved < due {
            return Err(fail_field(AuditCheck::Times, &rpath, bytes, "resolution.resolved", &res.resolved, format!(
                "{} is NMR in step {}, resolved before its deadline {} plus {} grace hour(s) ({})",
                nmr.role, res.step, opening.deadline, gf.deadlines.grace_hours, pipeline::timestamp(due)
            )));
        }
    }
    if let Some(next) = &rec.opening
        && next.opened != res.resolved {
            return Err(fail_field(AuditCheck::Times, &rpath, bytes, "opening.opened", &next.opened, format!(
                "differs from resolution.resolved ({}): the next step opens when this one is resolved",
                res.resolved
            )));
        }
    Ok((opened, resolved))
}

/// The host's files of a step no record reached: a host seed or sealed orders of a step after
/// `open_step` (the one the last record opened), or withheld orders of a step after `last` (a
/// step is resolved only by its record). Each is written before the record that needs it, so
/// one is left by an interrupted adjudication (the next `pbem adjudicate` redoes the step) or
/// by records removed since: a history cut short.
fn check_host_leftovers(gd: &GameDir, last: u64, last_resolved: u64, open_step: u64) -> Result<()> {
    let host = gd.root.join("host");
    let step_of = |name: &str| name.get(..6).and_then(|d| d.parse::<u64>().ok());
    let mut found: Vec<(PathBuf, u64, &str)> = Vec::new();
    for (folder, after, what) in [("seeds", open_step, "the host seed of"), ("sealed", open_step, "sealed orders of"), ("withheld", last_resolved, "withheld orders of")] {
        let dir = host.join(folder);
        if !dir.is_dir() {
            continue;
        }
        for name in store::list(&dir)? {
            if let Some(step) = step_of(&name).filter(|s| *s > after) {
                found.push((dir.join(&name), step, what));
            }
        }
    }
    match found.into_iter().next() {
        None => Ok(()),
        Some((path, step, what)) => Err(fail(AuditCheck::Inventory, &path, format!(
            "holds {what} step {step}, which no record reached (the last record is {last}): records removed since (a history cut short), \
             or an interrupted adjudication (run `pbem adjudicate` to finish it)"
        ))),
    }
}

/// One audit of one game: what its checks share from record to record (the game's files and
/// keys, the replayed state, the orders still withheld, what has been counted), with one method
/// per check. [`Audit::open`] reads the game and checks its inventory; [`Audit::run`] checks each
/// record in order, then the receipts against the history.
struct Audit {
    gd: GameDir,
    gf: GameFile,
    game: &'static dyn DynGame,
    host: ssh_key::PublicKey,
    env: std::sync::Arc<minijinja::Environment<'static>>,
    /// The last record's index.
    last: u64,
    /// The setup in force record by record.
    hist: std::sync::Arc<history::History>,
    /// True when `states/` and `reports/` are there (the host's copy, not a public one).
    has_states: bool,
    /// The replayed state after the record last checked (before record 0: the setup).
    state: String,
    /// The record last checked, as read: the next one chains to it.
    prev: Option<std::sync::Arc<history::ReadRecord>>,
    /// Steps each role has missed so far, as the NMR policy counts them.
    misses: BTreeMap<String, u32>,
    /// Late reveals by (step, role), from every record (checked where they stand).
    reveal_map: std::sync::Arc<RevealMap>,
    /// The key of the state commitments: the host's own, or the one the last record reveals once
    /// the game is over. `None` (a public copy of a game still going on): not checked yet.
    state_key: Option<[u8; 32]>,
    /// Orders withheld and not yet revealed, with how long they wait.
    outstanding: BTreeMap<(u64, String), WithheldUntil>,
    /// The first record whose orders are withheld with neither a later reveal nor the host's copy
    /// (a public copy mid-game): from there on no step can be replayed, and only what needs no
    /// replay is checked (signatures, the hash chain, host seeds, receipts, times).
    secret_from: Option<u64>,
    /// The full events of the step being checked (the record holds only the public ones).
    events: Vec<crate::dice::Event>,
    /// What the game waits for in the replayed state, once the step of the record being checked
    /// has asked (the record's opening or outcome is checked against it).
    pending: Option<Pending>,
    sum: AuditSummary,
    /// The threads to use (0: one per core; 1: every check in order on this thread).
    jobs: usize,
    /// What was worked out ahead on every core for the records being checked.
    ahead: ahead::Ahead,
    /// Every receipt of each step a record opened, read once and checked in place (host
    /// signature, numbering) by [`Audit::check_step_files`].
    receipts: std::sync::Arc<StepReceipts>,
}

/// The step a record resolves, as its checks need it.
struct Step<'a> {
    /// The record's index and path.
    n: u64,
    rpath: PathBuf,
    /// The opening of the record before (the step resolved) and the record's resolution.
    opening: &'a Opening,
    res: &'a Resolution,
    /// The seat keys the step's orders are checked with.
    keys: BTreeMap<String, ssh_key::PublicKey>,
    /// The host seed the record reveals.
    host_seed: [u8; 32],
}

/// `(a(), b())`, `a` on a thread of its own when `two` (a panic in it is passed on here).
fn beside<A: Send, B>(two: bool, a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    if !two {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let first = s.spawn(a);
        let second = b();
        (first.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), second)
    })
}

fn audit_game(dir: &Path, templates: Option<&Path>, jobs: usize) -> Result<AuditSummary> {
    Audit::open(dir, templates, jobs)?.run()
}

impl Audit {
    /// Reads the game in `dir` and checks what needs no record read in full: the keys, the
    /// records numbered without gaps, nothing left past the last record, the host key, receipts
    /// of opened steps only, and the host's folders.
    fn open(dir: &Path, templates: Option<&Path>, jobs: usize) -> Result<Self> {
        let gd = GameDir::new(dir);
        let gf = pipeline::read_game_file(&gd)?;
        let game = pipeline::rules(&gf.rules)?;
        let host = sig::public_key_line(&gf.host_key).map_err(|e| fail(AuditCheck::Setup, &gd.game_file(), format!("host_key: {e}")))?;
        for s in &gf.seats {
            sig::public_key_line(&s.key).map_err(|e| fail(AuditCheck::Setup, &gd.game_file(), format!("seat {}: {e}", s.role)))?;
        }
        let gf_bytes = store::read(&gd.game_file())?;
        let scenario = store::read_text(&gd.scenario_file())?;
        let options = crate::team::rules_options(&gf.options);
        // The templates compiled and the game set up on a thread of their own meanwhile (when
        // working ahead); a failure of theirs is still met where it was.
        let ((env, setup), read) = beside(ahead::works_ahead(jobs), || (report::shared_environment(templates), game.setup(&scenario, &options)), || -> Result<(u64, history::History)> {
            let last = gd.last_contiguous_record()?.ok_or_else(|| fail(AuditCheck::Missing, &gd.record(0), "missing: no records"))?;
            check_inventory(&gd, last, &host)?;
            Ok((last, history::read_on(&gd, last, &gf_bytes, scenario.as_bytes(), jobs)?))
        });
        let env = env?;
        let (last, hist) = read?;
        let mut audit = Audit {
            gd,
            gf,
            game,
            host,
            env,
            last,
            hist: std::sync::Arc::new(hist),
            has_states: false,
            state: String::new(),
            prev: None,
            misses: BTreeMap::new(),
            reveal_map: Default::default(),
            state_key: None,
            outstanding: BTreeMap::new(),
            secret_from: None,
            events: Vec::new(),
            pending: None,
            sum: AuditSummary::default(),
            jobs,
            ahead: ahead::Ahead::default(),
            receipts: Default::default(),
        };
        let loaded = audit.read_receipts();
        audit.check_step_files(loaded)?;
        audit.check_folders()?;
        audit.state = setup.map_err(|e| fail(AuditCheck::Setup, &audit.gd.scenario_file(), e))?;
        let revealed_key = audit.read_reveals();
        audit.state_key = audit.read_state_key(revealed_key)?;
        audit.sum.states_unchecked = audit.state_key.is_none();
        Ok(audit)
    }

    /// Checks every record in order (a run at a time, worked out ahead on every core first),
    /// then every receipt against the history.
    fn run(mut self) -> Result<AuditSummary> {
        for first in (0..=self.last).step_by(ahead::RUN as usize) {
            self.check_run(first..=(first + ahead::RUN - 1).min(self.last))?;
        }
        self.sum.secret = self.secret_from.map(|first| (first, self.last));
        // Every receipt names a record that stood while its step was open (the one that opened it
        // or a host control after it) and the setup in force then (checked last, so that an edited
        // record is reported by the checks of the record itself).
        for step in 1..=self.hist.open_step {
            for ReadReceipt { path, receipt: r, .. } in self.receipts_of(step)?.iter() {
                self.hist.check_receipt(step, &r.record, &r.setup).map_err(|e| fail(AuditCheck::History, path, e))?;
            }
        }
        self.check_sealed_copies()?;
        self.check_open_seed()?;
        Ok(self.sum)
    }

    /// On the host's copy of a game still going, the open step's host seed is the one its opening
    /// committed to: the step's adjudication uses it, and could not go on with another (tester
    /// t18b-6: a seed file overwritten passed the audit and stopped the game at its next step).
    fn check_open_seed(&self) -> Result<()> {
        let Some(op) = self.hist.records[self.last as usize].record.opening.as_ref().filter(|_| self.has_states && self.gd.host().is_dir()) else { return Ok(()) };
        match pipeline::open_host_seed(&self.gd, &self.gf.id, op) {
            Ok(_) => Ok(()),
            Err(Error::Input { file, message, .. }) => Err(fail(if message.starts_with("missing") { AuditCheck::Missing } else { AuditCheck::Seed }, &file, message)),
            Err(e) => Err(fail_err(AuditCheck::Seed, &self.gd.host_seed(op.step), e)),
        }
    }

    /// On the host's copy, `host/sealed/` keeps each order as its receipt was issued for it: its
    /// text the receipt's commitment, its `.sig` the seat's signature under the key of then. The
    /// newest order of each seat in the open step of a game still going must be there (the next
    /// adjudication reads it: tester14 T14a-7); any other copy no record revealed (superseded,
    /// or of the step a game ended before resolving: T14b-8) is checked where it is kept, and may
    /// be gone (nothing reads it: a player who sent an order again to replace a lost copy leaves
    /// a game that audits, tester17 T17-2). The orders a record used are compared with what it
    /// reveals where they are checked. A public copy holds none.
    fn check_sealed_copies(&self) -> Result<()> {
        if !self.has_states || !self.gd.host().is_dir() {
            return Ok(());
        }
        let live = self.hist.records[self.last as usize].record.opening.is_some();
        for step in 1..=self.hist.open_step {
            let receipts = self.receipts_of(step)?;
            let newest = latest(&receipts);
            let resolved = step <= self.hist.last_resolved;
            for ReadReceipt { receipt: r, .. } in receipts.iter() {
                let is_newest = newest.get(&r.role).map(|n| n.seq) == Some(r.seq);
                let needed = live && !resolved && step == self.hist.open_step && is_newest;
                if (resolved && is_newest) || (!needed && !self.gd.sealed(step).join(format!("{}-{}.txt", r.role, r.seq)).exists()) {
                    continue;
                }
                let recover = if needed { pipeline::Recover::Resend } else { pipeline::Recover::Backup };
                let sealed_failure = |e: Error| match e {
                    Error::Input { file, message, .. } if message.starts_with("missing") => fail(AuditCheck::Missing, &file, message),
                    Error::Input { file, message, .. } => fail(AuditCheck::Order, &file, message),
                    e => fail_err(AuditCheck::Order, &self.gd.sealed(step), e),
                };
                let (_, text, signature) = pipeline::read_sealed(&self.gd, &self.gf.id, r, recover).map_err(sealed_failure)?;
                pipeline::verify_sealed(&self.gd, r, &text, &signature, recover).map_err(sealed_failure)?;
            }
        }
        Ok(())
    }

    /// Receipts exist only for steps a record opened (one for a later step shows a history cut
    /// short, or receipts made up); no host file of a step no record reached; every receipt of
    /// an opened step (`loaded`: as read, step 1 first) in its place, each kept for the checks
    /// that meet it again.
    fn check_step_files(&mut self, loaded: Vec<Result<Vec<ReadReceipt>>>) -> Result<()> {
        let open_step = self.hist.open_step;
        for name in store::list(&self.gd.root.join("receipts"))? {
            if name.parse::<u64>().is_ok_and(|s| s > open_step) {
                return Err(fail(AuditCheck::Inventory, &self.gd.root.join("receipts").join(&name), format!("receipts for a step no record opened (the last step opened is {open_step}): a history cut short?")));
            }
        }
        check_host_leftovers(&self.gd, self.last, self.hist.last_resolved, open_step)?;
        let mut all = StepReceipts::new();
        for (step, read) in (1..=open_step).zip(loaded) {
            let receipts = read.map_err(receipt_failure)?;
            check_receipts(&receipts, &self.gf.id, step, &self.host)?;
            all.insert(step, receipts);
        }
        self.receipts = std::sync::Arc::new(all);
        Ok(())
    }

    /// A public copy made mid-game holds records/ and receipts/ only: states can hold secrets (the
    /// plans of a paused round, hands) and each report is for its own role (README "What is
    /// public"). Either folder present means the host's copy, where every file must be there.
    fn check_folders(&mut self) -> Result<()> {
        let has_states = self.gd.root.join("states").is_dir();
        let has_reports = self.gd.root.join("reports").is_dir();
        if has_states != has_reports {
            let (present, absent) = if has_states { ("states", "reports") } else { ("reports", "states") };
            return Err(fail(AuditCheck::Inventory, &self.gd.root.join(absent), format!("missing while {present}/ is present (a host's copy has both; a public copy neither)")));
        }
        self.has_states = has_states;
        self.sum.public_copy = !has_states;
        Ok(())
    }

    /// Collects the late reveals of every record readable (each is checked where it stands);
    /// returns the state key the last record reveals, if it does.
    fn read_reveals(&mut self) -> Option<String> {
        let (mut revealed_key, mut map) = (None, RevealMap::new());
        for (n, r) in self.hist.records.iter().map(|r| &r.record).enumerate() {
            for l in &r.reveals {
                map.insert((l.step, l.role.clone()), (l.clone(), n as u64));
            }
            if n as u64 == self.last {
                revealed_key = r.state_key.clone();
            }
        }
        self.reveal_map = std::sync::Arc::new(map);
        revealed_key
    }

    /// The key of the state commitments: the host's own, or `revealed` by the last record once
    /// the game is over (both, if both are there, must agree).
    fn read_state_key(&self, revealed: Option<String>) -> Result<Option<[u8; 32]>> {
        let host_file = self.gd.state_key();
        let host = match store::read_text(&host_file) {
            Ok(t) => Some(commit::parse_32(&t).ok_or_else(|| fail(AuditCheck::Commitment, &host_file, "not 64 hex digits"))?),
            Err(_) => None,
        };
        let revealed = match &revealed {
            Some(t) => Some(commit::parse_32(t).ok_or_else(|| fail(AuditCheck::Commitment, &self.gd.record(self.last), "state_key is not 64 hex digits"))?),
            None => None,
        };
        if let (Some(h), Some(r)) = (host, revealed)
            && h != r
        {
            return Err(fail(AuditCheck::Commitment, &host_file, format!("differs from the state key revealed in record {}", self.last)));
        }
        Ok(host.or(revealed))
    }

    /// Record `n`: its header (signature, canonical form, index, times), its place in the chain,
    /// the step it resolves (or its host control), and, while replaying, what it commits to.
    fn check_record(&mut self, n: u64) -> Result<()> {
        let rpath = self.gd.record(n);
        let read = self.read_checked_record(n)?;
        let (bytes, rec) = (&read.bytes, &read.record);
        let prev = self.prev.take();
        self.pending = None;
        match prev.as_deref().map(|p| (&p.sha256, &p.record)) {
            None => {
                // Its setup hash was checked with the history (through any seat changes since).
                if rec.prev.is_some() || rec.resolution.is_some() || !rec.reveals.is_empty() || rec.control.is_some() {
                    return Err(fail(AuditCheck::Record, &rpath, "record 0 must have no predecessor, resolution, reveals or host control"));
                }
            }
            Some((phash, prec)) => {
                if rec.prev.as_deref() != Some(phash.as_str()) {
                    return Err(fail(AuditCheck::HashChain, &rpath, format!("hash chain broken: prev does not match record {}", n - 1)));
                }
                if rec.control.is_some() {
                    self.check_control_record(&rpath, rec, prec)?;
                } else {
                    self.check_step(n, bytes, rec, prec)?;
                }
            }
        }
        // The step a record opens: the one after the step it resolves (record 0: step 1); a host
        // control keeps the step open as it was.
        let want_step = match (&rec.resolution, &prev) {
            (Some(r), _) => r.step + 1,
            (None, Some(p)) if rec.control.is_some() => p.record.opening.as_ref().map_or(0, |o| o.step),
            (None, _) => 1,
        };
        // The state key is revealed by the record that ends the game, and by no other.
        if rec.state_key.is_some() != rec.outcome.is_some() {
            let what = if rec.outcome.is_some() { "ends the game without revealing the state key" } else { "reveals the state key before the game is over" };
            return Err(fail_field(AuditCheck::Commitment, &rpath, bytes, "state_key", "", what));
        }
        if self.secret_from.is_none() {
            self.check_replayed(n, bytes, rec, want_step)?;
        } else if rec.opening.as_ref().is_some_and(|op| op.step != want_step) || rec.opening.is_some() == rec.outcome.is_some() {
            return Err(fail(AuditCheck::Record, &rpath, format!("must either open step {want_step} or state the outcome")));
        }
        self.prev = Some(read);
        Ok(())
    }

    /// Record `n` read and checked on its own: host-signed, a record in canonical form, of this
    /// game with this index, its opening's deadline as `game.toml` sets it (and, for the last
    /// record, the open step's receipts issued since it opened).
    fn read_checked_record(&self, n: u64) -> Result<std::sync::Arc<history::ReadRecord>> {
        let rpath = self.gd.record(n);
        // Read (and found to be a record) with the history.
        let read = self.hist.records.get(n as usize).cloned().ok_or_else(|| fail(AuditCheck::Missing, &rpath, "missing (deleted record?)"))?;
        let (bytes, rec) = (&read.bytes, &read.record);
        // Found host-signed ahead: these very bytes, the same key.
        if !self.ahead.record_signed() {
            check_host_sig(&rpath, bytes, &self.host, NS_RECORD)?;
        }
        let canonical = model::record_bytes(rec);
        if canonical != *bytes {
            // Named at the first line that differs from its canonical form (tester14 T14b-4).
            let line = first_differing_line(bytes, &canonical);
            return Err(AuditFailure::new(AuditCheck::Record, &rpath, "not in canonical form (pretty-printed JSON, keys in pbem's order, a final newline)").at_line(Some(line)).into());
        }
        if rec.index != n || rec.game != self.gf.id {
            return Err(fail(AuditCheck::Record, &rpath, format!("says it is record {} of game {}", rec.index, rec.game)));
        }
        if let Some(op) = &rec.opening {
            // A host control keeps its step's opening, perhaps with another deadline (checked with
            // the control).
            let opened = match &rec.control {
                None => check_deadline(&rpath, bytes, &self.gf, op)?,
                Some(_) => time_of(&rpath, bytes, "opening.opened", &op.opened)?,
            };
            if n == self.last {
                check_receipt_times(&self.receipts_of(op.step).map_err(receipt_failure)?, op.step, opened, None)?;
            }
        }
        Ok(read)
    }

    /// A host control record after `prec`: as SPEC.md "Host controls" allows, revealing only what
    /// an abandoned game's end reveals (everything still withheld).
    fn check_control_record(&mut self, rpath: &Path, rec: &Record, prec: &Record) -> Result<()> {
        history::check_control(rpath, rec, prec)?;
        history::check_players_end(&self.gd, &self.hist, &self.host, self.game, &self.state, rpath, rec, prec)?;
        // Those of the open step: one of a resolved step was counted where it was used (T17-6).
        let open = prec.opening.as_ref().map(|o| o.step);
        self.sum.quoted += rec.control.iter().flat_map(|c| &c.orders).filter(|o| Some(o.step) == open).count() as u64;
        // Only a game's end reveals: everything still withheld, as any game's end does.
        let keys: Vec<(u64, String)> = rec.reveals.iter().map(|r| (r.step, r.role.clone())).collect();
        let due: Vec<(u64, String)> = if rec.outcome.is_some() { self.outstanding.keys().cloned().collect() } else { Vec::new() };
        if keys != due {
            return Err(fail(AuditCheck::Publication, rpath, format!("reveals {keys:?}, but the orders due are {due:?}")));
        }
        if rec.outcome.is_some() {
            self.outstanding.clear();
        }
        self.events.clear();
        Ok(())
    }

    /// The step record `n` resolves (opened by `prec`): the step and host seed against the
    /// opening, the orders asked, the times, then its orders, replayed or (orders still withheld)
    /// checked without replay, and every roll against the step seed.
    fn check_step(&mut self, n: u64, bytes: &[u8], rec: &Record, prec: &Record) -> Result<()> {
        let rpath = self.gd.record(n);
        let opening = prec.opening.as_ref().ok_or_else(|| fail(AuditCheck::Record, &rpath, "follows a record that ended the game"))?;
        let res = rec.resolution.as_ref().ok_or_else(|| fail(AuditCheck::Record, &rpath, "no resolution"))?;
        if let Some(since) = &opening.paused {
            return Err(fail(AuditCheck::Record, &rpath, format!("resolves step {} while the host had paused the game (since {since}, record {})", res.step, n - 1)));
        }
        let keys = self.keys_for_step(n - 1, res.step)?;
        if res.step != opening.step {
            return Err(fail(AuditCheck::Record, &rpath, format!("resolves step {} but step {} was open", res.step, opening.step)));
        }
        let host_seed = self.check_host_seed(n, opening, res)?;
        let asked: Vec<&str> = opening.asks.iter().map(|a| a.role.as_str()).collect();
        let revealed: Vec<&str> = res.orders.iter().map(|o| o.role.as_str()).collect();
        if asked != revealed {
            return Err(fail(AuditCheck::Record, &rpath, format!("orders revealed for {revealed:?}, but step {} asked {asked:?}", res.step)));
        }
        let (opened, resolved) = check_times(&self.gd, &self.gf, n, bytes, rec, opening, res)?;
        check_receipt_times(&self.receipts_of(res.step).map_err(receipt_failure)?, res.step, opened, Some((resolved, n)))?;
        check_withheld_marks(&rpath, res)?;
        let st = Step { n, rpath, opening, res, keys, host_seed };
        match self.join_reveals(&st)? {
            None => self.check_unreplayed_record(&st, rec)?,
            Some((full, source)) => {
                let (publication, pending) = self.replay_step(&st, &full, &source)?;
                let over = matches!(pending, Pending::Over(_));
                self.pending = Some(pending);
                check_publication(&st.rpath, rec, res, publication, over, &mut self.outstanding)?;
            }
        }
        // Every roll is re-derived from the record's step seed, replayed or not (SPEC.md "Dice");
        // checked after the seed itself where its nonces are known (above).
        let step_seed = commit::parse_32(&res.seed).ok_or_else(|| fail(AuditCheck::Seed, &st.rpath, "resolution.seed is not 64 hex digits"))?;
        if let Some((i, want)) = crate::dice::first_underived_roll(step_seed, &res.events) {
            return Err(fail(AuditCheck::Seed, &st.rpath, format!("resolution.events[{i}].roll: is not the next draw of step {}'s seed (the stream gives {want}): a roll changed?", res.step)));
        }
        Ok(())
    }

    /// The host seed record `n` reveals: 64 hex digits, matching the commitment in the opening
    /// and the host's own copy (when kept).
    fn check_host_seed(&self, n: u64, opening: &Opening, res: &Resolution) -> Result<[u8; 32]> {
        let rpath = self.gd.record(n);
        let host_seed = commit::parse_32(&res.host_seed).ok_or_else(|| fail(AuditCheck::Seed, &rpath, "host_seed is not 64 hex digits"))?;
        if hex::encode(commit::host_seed_commitment(&self.gf.id, res.step, &host_seed)) != opening.host_seed_commitment {
            return Err(fail(AuditCheck::Seed, &rpath, format!("revealed host seed of step {} does not match its commitment in record {}", res.step, n - 1)));
        }
        let seed_file = self.gd.host_seed(res.step);
        let seed = match self.ahead.file(&seed_file) {
            Some(read) => read.and_then(|b| std::str::from_utf8(b).ok()).map(std::borrow::Cow::Borrowed),
            None => store::read_text(&seed_file).ok().map(std::borrow::Cow::Owned),
        };
        if let Some(t) = seed
            && t.trim() != res.host_seed
        {
            return Err(fail(AuditCheck::Seed, &seed_file, format!("differs from the host seed revealed in record {n}")));
        }
        Ok(host_seed)
    }

    /// The step's orders in full: withheld ones taken from the later record that reveals them
    /// (or, auditing on the host, from its own withheld copy), each with the file its text was
    /// read from, named by any failure about it. `None` when an order is still secret (a public
    /// copy mid-game; this step and every later one cannot be replayed here).
    #[allow(clippy::type_complexity)]
    fn join_reveals(&mut self, st: &Step<'_>) -> Result<Option<(Vec<Revealed>, BTreeMap<String, PathBuf>)>> {
        if self.secret_from.is_some() {
            return Ok(None);
        }
        let mut full: Vec<Revealed> = Vec::new();
        let mut source: BTreeMap<String, PathBuf> = BTreeMap::new();
        for o in &st.res.orders {
            let hp = self.gd.withheld(st.res.step, &o.role);
            if !o.withheld {
                // A copy of orders this record published: a withheld copy left by an interrupted
                // run (adjudication removes them), or one put there since.
                if self.ahead.file(&hp) != Some(None) && hp.exists() {
                    return Err(fail(AuditCheck::Publication, &hp, format!("holds withheld orders of {} in step {}, but record {} published them (a copy left by an interrupted run? remove it)", o.role, st.res.step, st.rpath.display())));
                }
                full.push(o.clone());
                source.insert(o.role.clone(), st.rpath.clone());
                continue;
            }
            let host_copy = match store::read_text(&hp) {
                Ok(t) => Some(serde_json::from_str::<LateReveal>(&t).map_err(|e| fail(AuditCheck::Publication, &hp, e))?),
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                // A FIFO, a folder or a link to a device is there, and is not the copy (tester21
                // T21a-3: it was called missing).
                Err(e) => return Err(fail(AuditCheck::Publication, &hp, e)),
            };
            if let Some(wrong) = host_copy.as_ref().and_then(|h| h.not_for(st.res.step, &o.role)) {
                return Err(fail(AuditCheck::Publication, &hp, wrong));
            }
            match (self.reveal_map.get(&(st.res.step, o.role.clone())), host_copy) {
                (Some((r, at)), host_copy) => {
                    // Revealed: the host's withheld copy, if kept, must be what was revealed.
                    if host_copy.is_some_and(|h| &h != r) {
                        return Err(fail(AuditCheck::Publication, &hp, format!("differs from the orders of {} revealed in record {at}", o.role)));
                    }
                    full.push(o.with_reveal(r));
                    source.insert(o.role.clone(), self.gd.record(*at));
                }
                (None, Some(h)) => {
                    full.push(o.with_reveal(&h));
                    source.insert(o.role.clone(), hp);
                }
                (None, None) => {
                    // The host's copy keeps every withheld order until it is revealed: a missing
                    // one would switch the replay off for everything after it.
                    if self.gd.root.join("host").is_dir() {
                        return Err(fail(AuditCheck::Missing, &hp, format!("missing: the host's copy keeps the withheld orders of {} in step {} until a record reveals them", o.role, st.res.step)));
                    }
                    if !self.game.ever_withholds() {
                        return Err(fail(AuditCheck::Publication, &st.rpath, format!("marks the orders of {} withheld, but {} publishes every step at once", o.role, self.game.title())));
                    }
                    self.secret_from = Some(st.n);
                    return Ok(None);
                }
            }
        }
        Ok(Some((full, source)))
    }

    /// A step that cannot be replayed (orders still withheld): its orders as far as they are
    /// known, reveals naming only orders still withheld, and at the game's end none left.
    fn check_unreplayed_record(&mut self, st: &Step<'_>, rec: &Record) -> Result<()> {
        self.check_unreplayed(st)?;
        for r in &rec.reveals {
            if self.outstanding.remove(&(r.step, r.role.clone())).is_none() {
                return Err(fail(AuditCheck::Publication, &st.rpath, format!("reveals orders of {} in step {} that were not withheld or were revealed before", r.role, r.step)));
            }
        }
        self.outstanding.extend(st.res.orders.iter().filter(|o| o.withheld).map(|o| ((st.res.step, o.role.clone()), o.withheld_until)));
        // At the game's end every order is due, whatever the game said of its step.
        if rec.outcome.is_some() && !self.outstanding.is_empty() {
            let list: Vec<String> = self.outstanding.keys().map(|(s, r)| format!("{r} in step {s}")).collect();
            return Err(fail(AuditCheck::Publication, &st.rpath, format!("the game is over, but the orders of {} were never revealed", list.join(", "))));
        }
        Ok(())
    }

    /// What record `n` commits to, against the replay: the state commitment, the state file,
    /// the opening or outcome (`want_step`), and every report byte for byte.
    fn check_replayed(&mut self, n: u64, bytes: &[u8], rec: &Record, want_step: u64) -> Result<()> {
        let rpath = self.gd.record(n);
        // Worked out ahead: this very state text is the stored one, found to match the record's
        // commitment (the two checks below pass as they would here).
        let stored_ahead = self.ahead.stored_state_is(&self.state);
        if let Some(key) = self.state_key.as_ref().filter(|_| !stored_ahead)
            && pipeline::state_commitment(&self.gf.id, n, key, &self.state) != rec.state
        {
            return Err(fail_field(AuditCheck::Commitment, &rpath, bytes, "state", "", "the replayed state does not match the record's state commitment"));
        }
        let spath = self.gd.state(n);
        if self.has_states && !stored_ahead {
            let have = store::read(&spath).map_err(|e| fail_read(AuditCheck::Replay, &spath, e))?;
            if have != self.state.as_bytes() {
                return Err(differs(&spath, &have, &self.state, "the state"));
            }
        }
        // A host control's opening or outcome was checked against the record before it.
        if rec.control.is_none() {
            let pending = match self.pending.take() {
                Some(p) => p,
                None => self.game.pending(&self.state)?,
            };
            check_next(&rpath, bytes, want_step, rec, pending)?;
        }
        let gf_then = &self.hist.files[n as usize];
        for s in gf_then.seats.iter().filter(|_| self.has_states) {
            let rendered;
            // Rendered ahead, and found there to be the stored report byte for byte, or not.
            let (want, stored) = match self.ahead.report(&s.role, &self.state, &self.events, bytes) {
                Some(done) => done,
                None => {
                    let pinned = report::Pinned { record: rec, sha256: &self.hist.records[n as usize].sha256, earlier_wording: false };
                    rendered = report::render_pinned(&self.env, self.game, gf_then, pinned, &self.events, &self.state, &s.role)?;
                    (rendered.as_str(), false)
                }
            };
            let rp = self.gd.report(n, &s.role);
            if !stored {
                let have = store::read(&rp).map_err(|e| fail_read(AuditCheck::Replay, &rp, e))?;
                if have != want.as_bytes() && !self.earlier_wording(rec, n, gf_then, &s.role, &have)? {
                    return Err(differs(&rp, &have, want, "the report"));
                }
            }
            self.sum.reports += 1;
        }
        self.sum.records += 1;
        self.sum.states.push(self.state.clone());
        Ok(())
    }

    /// Whether a report that differs from the replay is the one a version before 2026-12-03
    /// wrote for a record whose NMR the built-in player covered (worded then as the default
    /// orders) or for a host control (its time left counted from when the step opened): a game
    /// such a version made audits as it did ([`report::Pinned`]). Never for a game that carries
    /// its wording ([`report::WORDING`]): its reports are the present wording's only.
    fn earlier_wording(&self, rec: &Record, n: u64, gf: &GameFile, role: &str, have: &[u8]) -> Result<bool> {
        let bot = rec.resolution.iter().flat_map(|r| &r.orders).any(|o| o.nmr.as_deref() == Some("bot"));
        if gf.wording > 0 || (!bot && rec.control.is_none()) {
            return Ok(false);
        }
        let pinned = report::Pinned { record: rec, sha256: &self.hist.records[n as usize].sha256, earlier_wording: true };
        Ok(report::render_pinned(&self.env, self.game, gf, pinned, &self.events, &self.state, role)?.as_bytes() == have)
    }
}

/// The 1-based line where `a` and `b` first differ (one ending early: the line after its last).
fn first_differing_line(a: &[u8], b: &[u8]) -> usize {
    let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (a.split(|&c| c == b'\n').collect(), b.split(|&c| c == b'\n').collect());
    a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len())) + 1
}

/// The receipt `rp` says `nonce = said`: true exactly when the order it receipts holds a nonce
/// (`nonce`, the order's header; SPEC.md "Receipts"), so a host cannot claim an order added
/// randomness it did not add (tester14 T14b-2).
fn check_receipt_nonce(rp: &Path, said: bool, nonce: &str) -> Result<()> {
    if said != nonce.is_empty() {
        return Ok(());
    }
    let bytes = store::read(rp).unwrap_or_default();
    let has = if nonce.is_empty() { "no nonce" } else { "a nonce" };
    Err(fail_field(AuditCheck::Receipt, rp, &bytes, "nonce", "", format!("says {said}, but the order it receipts has {has}")))
}

/// Records numbered 0..=`last` without a gap (a deleted record shows as one before later
/// ones), no state or report past the last record, and the host's public key file (if kept)
/// naming `host`.
fn check_inventory(gd: &GameDir, last: u64, host: &ssh_key::PublicKey) -> Result<()> {
    let files = store::list(&gd.root.join("records"))?.iter().filter(|n| n.ends_with(".json")).count() as u64;
    if files != last + 1 {
        return Err(fail(AuditCheck::Missing, &gd.record(last + 1), "missing (deleted record?): later records exist"));
    }
    // A state or report past the last record: the record was deleted, or a run was interrupted
    // before its commit point (the next `pbem adjudicate` redoes that step and overwrites them).
    let orphan = gd.state(last + 1);
    let orphan_reports = gd.root.join("reports").join(format!("{:06}", last + 1));
    for p in [orphan, orphan_reports] {
        if p.exists() {
            return Err(fail(AuditCheck::Inventory, &p, format!("exists without record {}: a deleted record, or an interrupted adjudication (run `pbem adjudicate` to finish it)", last + 1)));
        }
    }
    let host_pub = gd.root.join("host").join("host_key.pub");
    if let Ok(text) = store::read_text(&host_pub)
        && sig::load_public_key(text.trim()).ok().as_ref() != Some(host)
    {
        return Err(fail(AuditCheck::Setup, &host_pub, "is not the host key named in game.toml"));
    }
    Ok(())
}

/// A record's orders are marked withheld only with no text, and say how long only if withheld.
fn check_withheld_marks(rpath: &Path, res: &Resolution) -> Result<()> {
    for o in &res.orders {
        if o.withheld && (o.text.is_some() || o.signature.is_some() || !o.orders.is_empty()) {
            return Err(fail(AuditCheck::Publication, rpath, format!("orders of {} are marked withheld but are present", o.role)));
        }
        if !o.withheld && !o.withheld_until.is_round_end() {
            return Err(fail(AuditCheck::Publication, rpath, format!("orders of {} say how long they are withheld but are not withheld", o.role)));
        }
    }
    Ok(())
}

/// The newest receipt of each role among a step's `receipts` (sorted by role and number), by role
/// (as `pipeline::latest_receipts` gives them).
fn latest(receipts: &[ReadReceipt]) -> BTreeMap<String, Receipt> {
    receipts.iter().map(|r| (r.receipt.role.clone(), r.receipt.clone())).collect()
}

/// An error reading a step's receipts as the receipt check's failure.
fn receipt_failure(e: Error) -> Error {
    AuditFailure::from_error(AuditCheck::Receipt, e).into()
}

/// Every receipt of each step a record opened, as read (step 1 first).
type StepReceipts = BTreeMap<u64, Vec<ReadReceipt>>;

/// Late reveals by (step, role), with the record that reveals each.
type RevealMap = BTreeMap<(u64, String), (LateReveal, u64)>;

/// The seat keys that orders of `step` are checked with: each role's key in force when the host
/// issued the receipt it used (the record the receipt names), else after record `before`.
fn keys_for_step(gd: &GameDir, hist: &history::History, all: &StepReceipts, before: u64, step: u64) -> Result<BTreeMap<String, ssh_key::PublicKey>> {
    let receipts = latest(&receipts_of(gd, all, step)?);
    let mut keys = BTreeMap::new();
    for s in &hist.files[before as usize].seats {
        let gf = receipts.get(&s.role).and_then(|r| hist.file_at(&r.record)).unwrap_or(&hist.files[before as usize]);
        let line = gf.seat(&s.role).map_or(s.key.as_str(), |x| x.key.as_str());
        let k = sig::public_key_line(line).map_err(|e| fail(AuditCheck::Setup, &gd.game_file(), format!("seat {}: {e}", s.role)))?;
        keys.insert(s.role.clone(), k);
    }
    Ok(keys)
}

/// The receipts of `step` as read once (`all`), or read now for a step no record opened.
fn receipts_of<'a>(gd: &GameDir, all: &'a StepReceipts, step: u64) -> Result<std::borrow::Cow<'a, [ReadReceipt]>> {
    match all.get(&step) {
        Some(v) => Ok(std::borrow::Cow::Borrowed(v.as_slice())),
        None => Ok(std::borrow::Cow::Owned(read_step_receipts(gd, step)?)),
    }
}

impl Audit {
    /// The seat keys that orders of `step` are checked with ([`keys_for_step`]).
    fn keys_for_step(&self, before: u64, step: u64) -> Result<BTreeMap<String, ssh_key::PublicKey>> {
        keys_for_step(&self.gd, &self.hist, &self.receipts, before, step)
    }

    /// The receipts of `step` as read once (host-signed, checked in place by [`check_receipts`]);
    /// read again only for a step no record opened ([`receipts_of`]).
    fn receipts_of(&self, step: u64) -> Result<std::borrow::Cow<'_, [ReadReceipt]>> {
        receipts_of(&self.gd, &self.receipts, step)
    }

    /// The receipt an order of `role` in the step `st` names (`seq`, commitment `c`): present,
    /// host-signed, matching, and the newest of that role for the step (`receipts`).
    /// Returns the receipt's path and its `nonce` flag (checked against the order's text by
    /// [`check_receipt_nonce`] once the text is read).
    fn check_order_receipt(&self, st: &Step<'_>, role: &str, seq: u64, c: &str, receipts: &BTreeMap<String, Receipt>) -> Result<(PathBuf, bool)> {
        let (n, res) = (st.n, st.res);
        let rp = self.gd.receipts(res.step).join(format!("{role}-{seq}.toml"));
        let read;
        let (rb, r) = match self.receipts.get(&res.step).and_then(|rs| rs.iter().find(|r| r.path == rp)) {
            // Read with its step's receipts, its host signature checked then.
            Some(known) => (&known.bytes, known.receipt.clone()),
            None => {
                read = store::read(&rp).map_err(|e| fail_read(AuditCheck::Receipt, &rp, e))?;
                check_host_sig(&rp, &read, &self.host, NS_RECEIPT)?;
                let r: Receipt = toml::from_str(std::str::from_utf8(&read).unwrap_or("")).map_err(|e: toml::de::Error| fail(AuditCheck::Receipt, &rp, format!("not a receipt: {}", e.message().trim())))?;
                (&read, r)
            }
        };
        if r.commitment != c {
            return Err(fail_field(AuditCheck::Receipt, &rp, rb, "commitment", &r.commitment, format!("is not the commitment of the order of {role} that record {n} used ({c})")));
        }
        if r.seq != seq || r.role != role || r.step != res.step {
            return Err(fail(AuditCheck::Receipt, &rp, format!("is the receipt of {} for step {}, number {}, not of the order of {role} record {n} used", r.role, r.step, r.seq)));
        }
        if receipts.get(role).map(|l| l.seq) != Some(seq) {
            return Err(fail(AuditCheck::Receipt, &rp, "a newer receipt exists: the newest order should have been used"));
        }
        Ok((rp, r.nonce))
    }

    /// A revealed order's signed `text` (read from `opath`): signed by the seat's key, matching its
    /// commitment `c`, naming this game, step, role and host-seed commitment, and holding `orders`.
    #[allow(clippy::too_many_arguments)]
    fn check_order_text(&self, st: &Step<'_>, role: &str, c: &str, text: &str, signature: &str, orders: &Orders, opath: &Path) -> Result<orderfile::OrderFile> {
        let res = st.res;
        let at = |check: AuditCheck, what: String| -> Error { AuditFailure::new(check, opath, what).at_line(self.order_line(st, opath, role)).into() };
        // Found signed ahead: this very text and signature, the same key.
        let signed = |key: &ssh_key::PublicKey| if self.ahead.order_signed(key, text, signature) { Ok(()) } else { sig::verify(key, NS_ORDERS, text.as_bytes(), signature) };
        signed(&st.keys[role]).map_err(|e| {
            at(AuditCheck::Signature, match e {
                sig::SigError::BadSignature | sig::SigError::TextChanged => {
                    format!("the order of {role} in step {} does not match its signature: it was changed after the player signed it", res.step)
                }
                e => format!("the signature of the order of {role} in step {}: {e}", res.step),
            })
        })?;
        let recomputed = hex::encode(commit::order_commitment(&self.gf.id, res.step, role, text.as_bytes()));
        if recomputed != c {
            return Err(at(AuditCheck::Order, format!("revealed order of {role} does not match its commitment")));
        }
        let f = orderfile::parse(text).map_err(|p| at(AuditCheck::Order, format!("order of {role}: {}", p.message)))?;
        let h = &f.header;
        let header = [
            ("game", h.game.clone(), self.gf.id.clone()),
            ("step", h.step.to_string(), res.step.to_string()),
            ("role", h.role.clone(), role.to_string()),
            ("host_seed_commitment", h.host_seed_commitment.clone(), st.opening.host_seed_commitment.clone()),
        ];
        if let Some((field, has, want)) = header.iter().find(|(_, has, want)| has != want) {
            return Err(at(AuditCheck::Order, format!("the order of {role} in step {} has pbem.{field} {has:?}, not {want:?}", res.step)));
        }
        if &f.orders != orders {
            return Err(at(AuditCheck::Order, format!("orders of {role} differ from the signed text")));
        }
        Ok(f)
    }

    /// The line of `role`'s order in `opath` (tester14 T14b-4), if found: in the step's record,
    /// its entry under `resolution`; in a later record, under `reveals`; in the host's withheld
    /// copy, its `role` line.
    fn order_line(&self, st: &Step<'_>, opath: &Path, role: &str) -> Option<usize> {
        if opath == st.rpath {
            return line_of(&self.hist.records.get(st.n as usize)?.bytes, "resolution.role", role);
        }
        if let Some(r) = (0..=self.last).find(|i| self.gd.record(*i) == opath).and_then(|i| self.hist.records.get(i as usize)) {
            return line_of(&r.bytes, "reveals.role", role);
        }
        line_of(&store::read(opath).ok()?, "role", role)
    }

    /// What can be checked of the step `st` without replaying it (a public copy, past orders
    /// still withheld): every order's receipt (withheld ones included), every order whose text
    /// is public (here or in a later reveal) against its signature and commitment, and, when
    /// every nonce is known, the step seed.
    fn check_unreplayed(&mut self, st: &Step<'_>) -> Result<()> {
        let (rpath, res) = (&st.rpath, st.res);
        let receipts = latest(&self.receipts_of(res.step)?);
        let mut nonces: BTreeMap<String, [u8; 32]> = BTreeMap::new();
        let mut all_known = true;
        for o in &res.orders {
            match (&o.seq, &o.commitment) {
                (None, None) => {
                    if receipts.contains_key(&o.role) {
                        return Err(fail(AuditCheck::Receipt, rpath, format!("{} is NMR but has a receipt for step {}", o.role, res.step)));
                    }
                    nonces.insert(o.role.clone(), NMR_NONCE);
                }
                (Some(seq), Some(c)) => {
                    let (rp, said) = self.check_order_receipt(st, &o.role, *seq, c, &receipts)?;
                    let public = if o.withheld {
                        self.reveal_map.get(&(res.step, o.role.clone())).map(|(r, at)| (r.text.clone(), r.signature.clone(), r.orders.clone(), self.gd.record(*at)))
                    } else {
                        Some((o.text.clone(), o.signature.clone(), o.orders.clone(), rpath.clone()))
                    };
                    match public {
                        Some((Some(text), Some(signature), orders, opath)) => {
                            let f = self.check_order_text(st, &o.role, c, &text, &signature, &orders, &opath)?;
                            check_receipt_nonce(&rp, said, &f.header.nonce)?;
                            self.sum.unreplayed_orders += 1;
                            let nonce = commit::parse_32(&f.header.nonce).unwrap_or(NMR_NONCE);
                            self.sum.nonce_once(nonce, &o.role, res.step, &opath, f.header.nonce.is_empty())?;
                            nonces.insert(o.role.clone(), nonce);
                        }
                        Some(_) => return Err(fail(AuditCheck::Order, rpath, format!("order of {} is half revealed", o.role))),
                        None => all_known = false,
                    }
                }
                _ => return Err(fail(AuditCheck::Order, rpath, format!("order of {} is half revealed", o.role))),
            }
        }
        if all_known {
            self.check_step_seed(st, &nonces)?;
        }
        Ok(())
    }

    /// The step seed of `st` is derived from its host seed and the orders' `nonces`.
    fn check_step_seed(&self, st: &Step<'_>, nonces: &BTreeMap<String, [u8; 32]>) -> Result<[u8; 32]> {
        let seed = commit::step_seed(&self.gf.id, st.res.step, &st.host_seed, nonces.iter().map(|(r, n)| (r.as_str(), n)));
        if hex::encode(seed) != st.res.seed {
            let bytes = self.hist.records.get(st.n as usize).map_or(&[][..], |r| &r.bytes[..]);
            return Err(fail_field(AuditCheck::Seed, &st.rpath, bytes, "resolution.seed", "", format!("the step seed of step {} is not derived from the host seed and nonces", st.res.step)));
        }
        Ok(seed)
    }

    /// Checks every order of the step `st` (`full`: withheld ones joined with their reveal, each
    /// read from `source[role]`) and replays the step from the state: signatures, receipts,
    /// commitments, legality, the step seed, NMR orders, and the public events. Returns what the
    /// game says of publishing the step's orders, and what it waits for after the step.
    fn replay_step(&mut self, st: &Step<'_>, full: &[Revealed], source: &BTreeMap<String, PathBuf>) -> Result<(Publication, Pending)> {
        let res = st.res;
        let receipts = latest(&self.receipts_of(res.step)?);
        let orders: BTreeMap<String, Orders> = full.iter().map(|o| (o.role.clone(), o.orders.clone())).collect();
        // Resolved ahead from this very state with these orders: the game checked each of them.
        let legal = self.ahead.resolved_from(&self.state, &orders);
        let mut nonces: BTreeMap<String, [u8; 32]> = BTreeMap::new();
        for o in full {
            let nonce = self.check_replayed_order(st, o, &source[&o.role], &receipts, legal)?;
            nonces.insert(o.role.clone(), nonce);
        }
        let seed = self.check_step_seed(st, &nonces)?;
        self.check_nmr_orders(st, full, &seed)?;
        model::count_misses(&mut self.misses, res.orders.iter().map(|o| (o.role.as_str(), o.seq.is_some())));
        let (after, events, answers) = match self.ahead.replayed(&self.state, &orders, &seed) {
            Some((after, events, publication, pending)) => (after, events, Some((publication, pending))),
            None => {
                let mut ctx = Ctx::new(seed).worded(self.gf.wording).unsent(model::unsent(full));
                (self.game.resolve(&self.state, &orders, &mut ctx)?, ctx.into_events(), None)
            }
        };
        self.events = events;
        let replayed = pipeline::public_events(&self.events);
        if replayed != res.events {
            return Err(fail(AuditCheck::Replay, &st.rpath, different_events(res.step, &res.events, &replayed)));
        }
        let answers = match answers {
            Some(done) => done,
            None => (self.game.publication(&self.state, &after)?, self.game.pending(&after)?),
        };
        self.state = after;
        Ok(answers)
    }

    /// One order `o` of the step `st` being replayed (its text read from `opath`): an NMR without
    /// a receipt, or a signed order with its receipt, legal in the state, matching the host's
    /// sealed copy, with a nonce not used before (`legal`: the game's check of it already passed
    /// in this state). Returns its nonce.
    fn check_replayed_order(&mut self, st: &Step<'_>, o: &Revealed, opath: &Path, receipts: &BTreeMap<String, Receipt>, legal: bool) -> Result<[u8; 32]> {
        let (n, res) = (st.n, st.res);
        match (&o.seq, &o.commitment, &o.text, &o.signature) {
            (None, None, None, None) => {
                if receipts.contains_key(&o.role) {
                    return Err(fail(AuditCheck::Receipt, &st.rpath, format!("{} is NMR but has a receipt for step {}", o.role, res.step)));
                }
                // Checked once the step seed is known (a built-in player's orders come from a seed
                // derived from it).
                self.sum.nmr += 1;
                Ok(NMR_NONCE)
            }
            (Some(seq), Some(c), Some(text), Some(signature)) => {
                let (rp, said) = self.check_order_receipt(st, &o.role, *seq, c, receipts)?;
                let f = self.check_order_text(st, &o.role, c, text, signature, &o.orders, opath)?;
                check_receipt_nonce(&rp, said, &f.header.nonce)?;
                if let Some(p) = if legal { None } else { self.game.check_order(&self.state, &o.role, &f.orders)?.err() } {
                    return Err(fail(AuditCheck::Order, opath, format!("order of {} is illegal: {}: {}", o.role, p[0].field, p[0].message)));
                }
                let sealed = self.gd.sealed(res.step).join(format!("{}-{seq}.txt", o.role));
                // The host's sealed copy (absent from a public copy of the game), read ahead or now.
                let kept = match self.ahead.file(&sealed) {
                    Some(read) => read.map(std::borrow::Cow::Borrowed),
                    None if sealed.exists() => Some(std::borrow::Cow::Owned(store::read(&sealed)?)),
                    None => None,
                };
                if let Some(kept) = kept {
                    if *kept != *text.as_bytes() {
                        return Err(fail(AuditCheck::Order, &sealed, format!("differs from the order of {} revealed in record {n}", o.role)));
                    }
                    let sealed_sig = sig_path(&sealed);
                    let kept_sig = match self.ahead.file(&sealed_sig) {
                        Some(read) => read.map(std::borrow::Cow::Borrowed),
                        None => store::read(&sealed_sig).ok().map(std::borrow::Cow::Owned),
                    };
                    if kept_sig.as_deref() != Some(signature.as_bytes()) {
                        return Err(fail(AuditCheck::Order, &sealed_sig, format!("differs from the signature of {}'s order revealed in record {n}", o.role)));
                    }
                }
                self.sum.orders += 1;
                let nonce = commit::parse_32(&f.header.nonce).unwrap_or(NMR_NONCE);
                self.sum.nonce_once(nonce, &o.role, res.step, opath, f.header.nonce.is_empty())?;
                Ok(nonce)
            }
            _ => Err(fail(AuditCheck::Order, &st.rpath, format!("order of {} is half revealed", o.role))),
        }
    }

    /// The NMR orders of the step `st` are what the game's NMR policy gives from the step `seed`.
    fn check_nmr_orders(&self, st: &Step<'_>, full: &[Revealed], seed: &[u8; 32]) -> Result<()> {
        for o in full.iter().filter(|o| o.seq.is_none()) {
            let missed = self.misses.get(&o.role).copied().unwrap_or(0);
            let (want, kind) = pipeline::nmr_orders(self.game, &self.gf, &self.state, st.res.step, seed, &o.role, missed)?;
            if o.nmr.as_deref().unwrap_or("default") != kind || want != o.orders {
                let line = self.order_line(st, &st.rpath, &o.role);
                return Err(AuditFailure::new(AuditCheck::Replay, &st.rpath, format!(
                    "NMR orders of {} in step {} are not what the NMR policy gives ({kind} orders after {missed} missed step(s))",
                    o.role, st.res.step
                )).at_line(line).into());
            }
        }
        Ok(())
    }
}

/// Orders are withheld exactly as long as the game says (`publication` of the step, `over` when
/// its record ends the game), and each record reveals exactly the withheld orders then due:
/// nothing early, nothing late, nothing twice.
fn check_publication(
    rpath: &Path,
    rec: &Record,
    res: &Resolution,
    publication: Publication,
    over: bool,
    outstanding: &mut BTreeMap<(u64, String), WithheldUntil>,
) -> Result<()> {
    let want = WithheldUntil::for_step(publication, over);
    for o in &res.orders {
        let got = o.withheld.then_some(o.withheld_until);
        if got != want {
            let say = |w: Option<WithheldUntil>| match w {
                None => "published",
                Some(WithheldUntil::RoundEnd) => "withheld until the round's end",
                Some(WithheldUntil::GameEnd) => "withheld until the game's end",
            };
            return Err(fail(AuditCheck::Publication, rpath, format!(
                "orders of {} in step {} are {}, but the game's rule says {}",
                o.role, res.step, say(got), say(want)
            )));
        }
    }
    let due: Vec<(u64, String)> = outstanding.iter().filter(|(_, u)| u.due(publication, over)).map(|(k, _)| k.clone()).collect();
    let keys: Vec<(u64, String)> = rec.reveals.iter().map(|r| (r.step, r.role.clone())).collect();
    if keys != due {
        let list = |v: &[(u64, String)]| if v.is_empty() { "none".to_string() } else { v.iter().map(|(s, r)| format!("{r} of step {s}")).collect::<Vec<_>>().join(", ") };
        return Err(fail(AuditCheck::Publication, rpath, format!("reveals {} but the orders due now are {}", list(&keys), list(&due))));
    }
    for k in &due {
        outstanding.remove(k);
    }
    if let Some(until) = want {
        outstanding.extend(res.orders.iter().map(|o| ((res.step, o.role.clone()), until)));
    }
    Ok(())
}

/// A receipt as the audit reads it, once: its path, bytes and what they say, and the text of
/// its host signature file if it could be read then (else read again where it is checked);
/// `signed`: these bytes were found signed by the host key with that text (working ahead).
#[derive(Clone)]
struct ReadReceipt {
    path: PathBuf,
    bytes: Vec<u8>,
    receipt: Receipt,
    armored: Option<String>,
    signed: bool,
}

/// Every receipt of `step`, sorted by role and number, with the errors of
/// `pipeline::read_receipts`.
fn read_step_receipts(gd: &GameDir, step: u64) -> Result<Vec<ReadReceipt>> {
    let mut out = Vec::new();
    let rdir = gd.receipts(step);
    for name in store::list(&rdir)?.into_iter().filter(|n| n.ends_with(".toml")) {
        let path = rdir.join(&name);
        let text = store::read_text_no_link(&path)?;
        let receipt = model::parse_receipt(&path, &text)?;
        let armored = store::read_text(&sig_path(&path)).ok();
        out.push(ReadReceipt { path, bytes: text.into_bytes(), receipt, armored, signed: false });
    }
    out.sort_by(|a, b| (&a.receipt.role, a.receipt.seq).cmp(&(&b.receipt.role, b.receipt.seq)));
    Ok(out)
}

/// Every receipt of `step` (`receipts`): host-signed, for this game and step, numbered 1, 2, ...
/// per role.
fn check_receipts(receipts: &[ReadReceipt], game: &str, step: u64, host: &ssh_key::PublicKey) -> Result<()> {
    let mut next: BTreeMap<String, u64> = BTreeMap::new();
    let mut commitments: BTreeMap<(String, String), u64> = BTreeMap::new();
    for ReadReceipt { path, bytes, receipt: r, armored, signed } in receipts {
        let path = path.as_path();
        if !signed {
            check_host_sig_read(path, bytes, host, NS_RECEIPT, armored.as_deref())?;
        }
        let want = next.entry(r.role.clone()).or_insert(1);
        let name = format!("{}-{}.toml", r.role, r.seq);
        if r.game != game || r.step != step || r.seq != *want || path.file_name().and_then(|n| n.to_str()) != Some(&name) {
            // At the first field out of place (the file's name: no line).
            let line = [("game", r.game != game), ("step", r.step != step), ("seq", r.seq != *want)].iter().find(|(_, off)| *off).and_then(|(f, _)| line_of(bytes, f, ""));
            return Err(AuditFailure::new(AuditCheck::Receipt, path, format!("receipt out of place: expected {}-{want}.toml of step {step} of game {game}", r.role)).at_line(line).into());
        }
        // The same order accepted twice would let a host bring back a superseded order as the
        // newest (and choose between their nonces); `submit` refuses such a resend.
        if let Some(first) = commitments.insert((r.role.clone(), r.commitment.clone()), r.seq) {
            return Err(fail_field(AuditCheck::Receipt, path, bytes, "commitment", &r.commitment, format!("has the commitment of receipt {first}: the same order accepted twice (a superseded order brought back?)")));
        }
        *want += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the example game in `tmp`.
    fn example(tmp: &Path) -> PathBuf {
        fn copy(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    copy(&e.path(), &to.join(e.file_name()));
                } else {
                    std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
                }
            }
        }
        let to = tmp.join("game");
        copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("turns/demo-gettysburg-campaign-18630701"), &to);
        to
    }

    /// The audit failure of the game in `dir`.
    fn failure(dir: &Path) -> AuditFailure {
        match audit(dir, None) {
            Err(Error::Audit(f)) => *f,
            other => panic!("not an audit failure: {other:?}"),
        }
    }

    #[test]
    fn a_missing_signature_or_an_edited_record_is_its_own_check_with_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let game = example(tmp.path());
        let sig = game.join("records/000001.json.sig");
        let saved = std::fs::read(&sig).unwrap();
        std::fs::remove_file(&sig).unwrap();
        let f = failure(&game);
        assert_eq!((f.check, f.path.as_deref(), f.line, f.detail.as_str()), (AuditCheck::Missing, Some(sig.as_path()), None, "missing"));

        std::fs::write(&sig, saved).unwrap();
        let r1 = game.join("records/000001.json");
        let text = std::fs::read_to_string(&r1).unwrap();
        std::fs::write(&r1, text.replacen("\"step\": 1", "\"step\": 2", 1)).unwrap();
        let f = failure(&game);
        assert_eq!((f.check, f.path.as_deref()), (AuditCheck::Signature, Some(r1.as_path())), "{f}");
        assert!(f.detail.starts_with("host signature: "), "{f}");
    }

    #[test]
    fn an_edited_setup_is_a_history_failure_at_the_line_of_record_0s_setup() {
        let tmp = tempfile::tempdir().unwrap();
        let game = example(tmp.path());
        let gf = game.join("game.toml");
        let text = std::fs::read_to_string(&gf).unwrap();
        std::fs::write(&gf, format!("{text}\n")).unwrap();
        let r0 = game.join("records/000000.json");
        let line = std::fs::read_to_string(&r0).unwrap().lines().position(|l| l.trim_start().starts_with("\"setup\": ")).map(|i| i + 1);
        let f = failure(&game);
        assert_eq!((f.check, f.path.as_deref(), f.line), (AuditCheck::History, Some(r0.as_path()), line), "{f}");
        assert_eq!(Error::from(f).to_string(), format!("audit failed: {}:{}: setup: is not the hash of game.toml and scenario.toml as they are now: one of them was edited since the game began", r0.display(), line.unwrap()));
    }

    /// Work done ahead on more threads changes nothing found: on a game edited in more and more
    /// places, each earlier than the last, every check in order on one thread and the default
    /// (working ahead) name the same first failure, the earliest edit.
    #[test]
    fn working_ahead_names_the_same_first_failure_as_checking_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let game = example(tmp.path());
        // One thread, every core, and more threads than cores (helpers and the checking thread
        // taking records in turn).
        let both = || {
            let one = audit_on(&game, None, 1);
            for jobs in [0, 2, 5] {
                assert_eq!(format!("{one:?}"), format!("{:?}", audit_on(&game, None, jobs)), "--jobs {jobs}");
            }
            one
        };
        let clean = both().unwrap();
        assert_eq!((clean.records, clean.reports, clean.states.len()), (15, 30, 15));
        let edit = |rel: &str, from: &str, to: &str| {
            let p = game.join(rel);
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(text.contains(from), "{rel}");
            std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
            p
        };
        let first = |want: &Path| match both() {
            Err(Error::Audit(f)) => assert_eq!(f.path.as_deref(), Some(want), "{f}"),
            other => panic!("not an audit failure: {other:?}"),
        };
        first(&edit("states/000013.json", "\n", " \n"));
        first(&edit("reports/000011/union.txt", "\n", "\n\n"));
        // A dishonest host's edit of an order, the record signed again.
        let r5 = edit("records/000005.json", "# built-in player", "# built-in Player");
        let key = pipeline::host_key(&GameDir::new(&game)).unwrap();
        std::fs::write(sig_path(&r5), sig::sign(&key, NS_RECORD, &std::fs::read(&r5).unwrap()).unwrap()).unwrap();
        first(&r5);
        first(&edit("receipts/000003/union-1.toml", "\n", " \n"));
    }

    /// The keys decoded once a process (`sig`'s Ed25519 points) change nothing found: after a
    /// clean audit has decoded the host's and the seats' keys, a record signed by another key, by
    /// the host key for receipts, with another record's signature, and an order whose signature
    /// is another order's each still fail their signature check, on one thread and working ahead.
    #[test]
    fn a_wrong_key_namespace_or_signature_still_fails_with_the_keys_decoded_before() {
        let tmp = tempfile::tempdir().unwrap();
        let game = example(tmp.path());
        for jobs in [1, 0] {
            audit_on(&game, None, jobs).unwrap();
        }
        let host = pipeline::host_key(&GameDir::new(&game)).unwrap();
        let other = sig::generate_ed25519("other");
        let r4 = game.join("records/000004.json");
        let (bytes, saved) = (std::fs::read(&r4).unwrap(), std::fs::read(sig_path(&r4)).unwrap());
        let checks = [
            (sig::sign(&other, NS_RECORD, &bytes).unwrap(), "signed by a different key"),
            (sig::sign(&host, NS_RECEIPT, &bytes).unwrap(), "namespace"),
            (std::fs::read_to_string(game.join("records/000003.json.sig")).unwrap(), "does not match"),
        ];
        for (signature, why) in checks {
            std::fs::write(sig_path(&r4), signature).unwrap();
            for jobs in [1, 0] {
                match audit_on(&game, None, jobs) {
                    Err(Error::Audit(f)) => assert!((f.check, f.path.as_deref()) == (AuditCheck::Signature, Some(r4.as_path())) && f.detail.contains(why), "{why}: {f}"),
                    other => panic!("{why}: not an audit failure: {other:?}"),
                }
            }
        }
        std::fs::write(sig_path(&r4), saved).unwrap();
        // The union's order of step 3 with its signature of step 4 (the seat's key, the orders'
        // namespace, another text), the record signed again by the host.
        let r3 = game.join("records/000003.json");
        let union_signature = |p: &Path| {
            let r: Record = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            r.resolution.unwrap().orders.into_iter().find(|o| o.role == "union").and_then(|o| o.signature).unwrap()
        };
        let (mine, theirs) = (union_signature(&r3), union_signature(&r4));
        let text = std::fs::read_to_string(&r3).unwrap();
        let json = |s: &str| serde_json::to_string(s).unwrap();
        std::fs::write(&r3, text.replacen(&json(&mine), &json(&theirs), 1)).unwrap();
        std::fs::write(sig_path(&r3), sig::sign(&host, NS_RECORD, &std::fs::read(&r3).unwrap()).unwrap()).unwrap();
        for jobs in [1, 0] {
            match audit_on(&game, None, jobs) {
                Err(Error::Audit(f)) => assert!(f.check == AuditCheck::Signature && f.detail.contains("does not match its signature"), "{f}"),
                other => panic!("a swapped order signature: not an audit failure: {other:?}"),
            }
        }
    }

    #[test]
    fn a_failed_audit_of_a_game_made_by_another_version_names_that_version() {
        let tmp = tempfile::tempdir().unwrap();
        let game = example(tmp.path());
        let gf = game.join("game.toml");
        let text = std::fs::read_to_string(&gf).unwrap();
        let line = text.lines().find(|l| l.starts_with("pbem = ")).unwrap();
        std::fs::write(&gf, text.replacen(line, "pbem = \"0.0.1\"", 1)).unwrap();
        match audit_on(&game, None, 1) {
            Err(Error::Audit(f)) => assert_eq!(f.made_by.as_deref(), Some("0.0.1"), "{f}"),
            other => panic!("not an audit failure: {other:?}"),
        }
    }

    #[test]
    fn a_game_made_by_another_version_says_so_after_the_failure() {
        let mut f = AuditFailure::new(AuditCheck::Replay, "reports/000001/union.txt", "the report differs from the replay");
        f.made_by = Some(String::new());
        let here = env!("CARGO_PKG_VERSION");
        assert_eq!(
            Error::from(f).to_string(),
            format!("audit failed: reports/000001/union.txt: the report differs from the replay. Note: the game was made by pbem of unknown version, this is pbem {here}: reports and rules may differ between versions")
        );
    }

    #[test]
    fn a_failure_passed_on_about_its_own_file_keeps_its_line_and_is_not_named_twice() {
        let p = Path::new("receipts/000001/union-1.toml");
        let e = Error::Input { file: p.to_path_buf(), line: Some(3), field: Some("seq".into()), message: "not a number".into() };
        let Error::Audit(f) = fail_err(AuditCheck::Receipt, p, e) else { panic!() };
        assert_eq!((f.check, f.line, f.detail.as_str()), (AuditCheck::Receipt, Some(3), "seq: not a number"));
        assert_eq!(f.to_string(), "receipts/000001/union-1.toml:3: seq: not a number");
        let Error::Audit(f) = fail(AuditCheck::Order, Path::new("other.txt"), Error::from(*f)) else { panic!() };
        assert_eq!((f.path.as_deref(), f.line), (Some(Path::new("other.txt")), None));
        assert_eq!(f.to_string(), "other.txt: receipts/000001/union-1.toml:3: seq: not a number");
    }
}
