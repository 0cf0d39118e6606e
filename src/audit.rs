//! `pbem audit`: re-checks a whole game from its files: signatures, receipts, commitments, seed
//! derivations, the hash chain, and a replay of every step to byte-identical states and reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::commit::{self, NMR_NONCE};
use crate::dice::Ctx;
use crate::error::{Error, Result};
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

/// What a passing audit checked.
#[derive(Debug, Default)]
pub struct AuditSummary {
    /// Records checked in full, replay included (record 0 counts).
    pub records: u64,
    /// Revealed orders checked against signatures and receipts.
    pub orders: u64,
    /// NMR slots checked against the game's default.
    pub nmr: u64,
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
            return Err(fail(opath, format!("the order of {role} in step {step} has a nonce of zeros, which submission refuses")));
        }
        let who = format!("{role} in step {step}");
        match self.nonces.insert(nonce, who.clone()) {
            Some(before) if before != who => Err(fail(opath, format!("the order of {who} reuses the nonce of the order of {before} (a replayed order?)"))),
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
        let counts = if self.public_copy {
            format!(
                "{}, {}, {} NMR, {} (a public copy: no states/ or reports/ to compare)",
                n(self.records, "record", "records"),
                n(self.orders, "signed order", "signed orders"),
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
                n(self.orders, "signed order", "signed orders"),
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

/// An audit failure about `path`: `PATH: what`. A `what` that already names the path (an error
/// passed on from a reader) or is itself an audit failure is not wrapped again, and a file that
/// is not there is `missing`.
fn fail(path: &Path, what: impl std::fmt::Display) -> Error {
    let p = path.display().to_string();
    let what = what.to_string();
    let what = what.strip_prefix("audit failed: ").unwrap_or(&what);
    if what.starts_with(&format!("{p}:")) {
        return Error::Audit(what.to_string());
    }
    Error::Audit(format!("{p}: {what}"))
}

/// [`fail`] for an error reading `path`: `missing` when it is not there, else the reader's reason.
fn fail_read(path: &Path, e: Error) -> Error {
    match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => fail(path, "missing"),
        Error::Io { source, .. } => fail(path, source),
        e => fail(path, e),
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
        Some(i) => Error::Audit(format!("{}:{}: {what} differs from the replay: {}, {}", file.display(), i + 1, shown(h.get(i), "the file"), shown(w.get(i), "the replay"))),
        None => fail(file, format!("{what} differs from the replay in its last line's end (a final newline)")),
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
    let at = |field: &str, what: String| fail_field(rpath, bytes, field, "", what);
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

/// Verifies the host signature beside `path` over the file's bytes. A signature this process has
/// already found good (the same key, namespace, bytes and signature, by their SHA-256) is not
/// checked again: an audit meets each receipt twice (the step's receipts, the order that used it).
fn check_host_sig(path: &Path, bytes: &[u8], host: &ssh_key::PublicKey, ns: &str) -> Result<()> {
    static GOOD: std::sync::Mutex<std::collections::BTreeSet<[u8; 32]>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let sp = sig_path(path);
    let armored = store::read_text(&sp).map_err(|e| fail_read(&sp, e))?;
    let key = {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for part in [host.to_openssh().unwrap_or_default().as_bytes(), ns.as_bytes(), bytes, armored.as_bytes()] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        <[u8; 32]>::from(h.finalize())
    };
    if GOOD.lock().unwrap_or_else(|p| p.into_inner()).contains(&key) {
        return Ok(());
    }
    sig::verify(host, ns, bytes, &armored).map_err(|e| fail(path, format!("host signature: {e}")))?;
    GOOD.lock().unwrap_or_else(|p| p.into_inner()).insert(key);
    Ok(())
}

/// Checks receipts a player holds (as mailed to them, each with its `.sig` beside it) against
/// the game in `dir`: each is signed by the game's host key, is in the game's `receipts/`
/// byte for byte, and, once its step is resolved, the order used for its role is that receipt's
/// or a later one, never an older one or an NMR. This is what shows a host that dropped a
/// player's newer order: the game's own files alone cannot. Returns one line per receipt.
///
/// Errors: [`Error::Audit`] naming the receipt file and what is wrong.
pub fn check_held_receipts(dir: &Path, files: &[PathBuf]) -> Result<Vec<String>> {
    let gd = GameDir::new(dir);
    let gf = pipeline::read_game_file(&gd)?;
    let host = sig::public_key_line(&gf.host_key).map_err(|e| fail(&gd.game_file(), format!("host_key: {e}")))?;
    let last = gd.last_record()?.unwrap_or(0);
    let hist = history::read(&gd, last, &store::read(&gd.game_file())?, &store::read(&gd.scenario_file())?)?;
    let mut used: BTreeMap<(u64, String), (u64, Option<u64>)> = BTreeMap::new();
    for n in 1..=last {
        let rec = pipeline::read_record(&gd, n)?;
        if let Some(res) = &rec.resolution {
            for o in &res.orders {
                used.insert((res.step, o.role.clone()), (n, o.seq));
            }
        }
    }
    let mut out = Vec::new();
    for f in files {
        let bytes = store::read(f)?;
        check_host_sig(f, &bytes, &host, NS_RECEIPT)?;
        let r: Receipt = toml::from_str(std::str::from_utf8(&bytes).unwrap_or("")).map_err(|e: toml::de::Error| fail(f, format!("not a receipt: {}", e.message().trim())))?;
        if r.game != gf.id {
            return Err(fail(f, format!("is a receipt of game {}, not of {}", r.game, gf.id)));
        }
        // The setup the receipt was issued under (as the records follow it through the seat
        // changes): a host that rewrote game.toml since (another seat key, deadline or NMR
        // policy) and re-signed record 0 is caught here.
        if hist.spans.contains_key(&r.step) && !hist.setup_during(r.step, &r.setup) {
            return Err(fail(f, "was issued for another setup of this game: game.toml or scenario.toml (seat keys, deadlines, NMR policy, options) were rewritten since"));
        }
        // The history it was issued in: a record that stood while its step was open, and so
        // every record before (hash chain). A game cut short or rewritten since cannot match it.
        if let Err(e) = hist.check_receipt(r.step, &r.record, &r.setup) {
            return Err(fail(f, format!("was issued after a record of step {}'s time the game does not hold as it had it then ({e}): the history was rewritten or cut short", r.step)));
        }
        let ours = gd.receipts(r.step).join(format!("{}-{}.toml", r.role, r.seq));
        match store::read(&ours) {
            Ok(b) if b == bytes => {}
            Ok(_) => return Err(fail(f, format!("differs from the game's {}", ours.display()))),
            Err(_) => return Err(fail(f, format!("is signed by the host but missing from the game ({} is not there): the host dropped it", ours.display()))),
        }
        let line = match used.get(&(r.step, r.role.clone())) {
            None => format!("{}: step {} not resolved yet; receipt {} of {} is in the game", f.display(), r.step, r.seq, r.role),
            Some((n, None)) => return Err(fail(f, format!("record {n} resolved step {} with {} as NMR, though the host had accepted this order", r.step, r.role))),
            Some((n, Some(seq))) if *seq < r.seq => {
                return Err(fail(f, format!("record {n} used receipt {seq} of {} in step {}, older than this receipt {}: a newer order was dropped", r.role, r.step, r.seq)));
            }
            Some((n, Some(seq))) => format!("{}: receipt {} of {} in step {} is in the game; record {n} used receipt {seq}", f.display(), r.seq, r.role, r.step),
        };
        out.push(line);
    }
    Ok(out)
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
    let last = gd.last_record()?.ok_or_else(|| fail(&gd.record(0), "missing: no records"))?;
    let mut out = Vec::new();
    // A file may hold several reports (a reply quoting an older one): each is checked.
    let mut pins = Vec::new();
    for f in files {
        pins.extend(read_kept_report(f)?.into_iter().map(|p| (f, p)));
    }
    for (f, pin) in pins {
        if pin.game != gf.id {
            return Err(fail(f, format!("is a report of game {}, not of {}", pin.game, gf.id)));
        }
        let rpath = gd.record(pin.record);
        let bytes = match store::read(&rpath) {
            Ok(b) => b,
            Err(_) => {
                return Err(fail(f, format!(
                    "follows record {} ({} is missing; the game's records stop at record {last}): the history was cut short{}",
                    pin.record,
                    rpath.display(),
                    if pin.over { ", and the end of the game removed" } else { "" }
                )))
            }
        };
        let hash = commit::sha256_hex(&bytes);
        if hash != pin.sha256 {
            return Err(fail(f, format!(
                "follows record {} with SHA-256 {}, but the game's {} has {hash}: the history was rewritten since (or the report is not of this game)",
                pin.record, pin.sha256, rpath.display()
            )));
        }
        let rec: Record = serde_json::from_slice(&bytes).map_err(|e| fail(&rpath, format!("not a record: {e}")))?;
        if pin.over != rec.outcome.is_some() {
            return Err(fail(f, format!("says the game {} with record {}, but that record {}: the report was edited", if pin.over { "ended" } else { "went on" }, pin.record, if pin.over { "opens another step" } else { "ends it" })));
        }
        if pin.over && pin.record != last {
            return Err(fail(f, format!("says the game ended with record {}, but the game goes on to record {last}", pin.record)));
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
    let file = std::fs::File::open(f).map_err(|e| store::io(f, e))?;
    file.take(KEPT_REPORT_LIMIT + 1).read_to_end(&mut bytes).map_err(|e| store::io(f, e))?;
    if bytes.len() as u64 > KEPT_REPORT_LIMIT {
        return Err(fail(f, format!("is larger than {} MB: not a report", KEPT_REPORT_LIMIT >> 20)));
    }
    let direct = report::read_pins(&String::from_utf8_lossy(&bytes));
    if direct.is_ok() {
        return direct.map_err(|e| fail(f, e));
    }
    // A saved mail: its text parts decoded (transfer encoding, charset).
    let body = mail_parser::MessageParser::default()
        .parse(&bytes)
        .filter(|m| !m.headers().is_empty())
        .map(|m| (0..m.text_body_count()).filter_map(|i| m.body_text(i)).collect::<Vec<_>>().join("\n"));
    match body.map(|b| report::read_pins(&b)) {
        Some(Ok(pins)) => Ok(pins),
        _ => direct.map_err(|e| fail(f, e)),
    }
}

/// Audits the game in `dir`; `Ok` only if every check passes, otherwise [`Error::Audit`] naming
/// the first failure and its file. `templates` must be the override folder used by the host, if any.
pub fn audit(dir: &Path, templates: Option<&Path>) -> Result<AuditSummary> {
    let gf = pipeline::read_game_file(&GameDir::new(dir))?;
    let here = env!("CARGO_PKG_VERSION");
    audit_game(dir, templates).map_err(|e| match e {
        Error::Audit(m) if gf.pbem != here => Error::Audit(format!(
            "{m}. Note: the game was made by pbem {}, this is pbem {here}: reports and rules may differ between versions",
            if gf.pbem.is_empty() { "of unknown version" } else { &gf.pbem }
        )),
        e => e,
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
fn fail_field(path: &Path, bytes: &[u8], field: &str, value: &str, what: impl std::fmt::Display) -> Error {
    match line_of(bytes, field, value) {
        Some(l) => Error::Audit(format!("{}:{l}: {field}: {what}", path.display())),
        None => Error::Audit(format!("{}: {field}: {what}", path.display())),
    }
}

/// Parses a time a record or receipt holds; failures name the file and field.
fn time_of(path: &Path, bytes: &[u8], field: &str, value: &str) -> Result<DateTime<Utc>> {
    pipeline::parse_time(value).map_err(|_| fail_field(path, bytes, field, value, format!("{value:?} is not an RFC 3339 time")))
}

/// An opening's deadline is its `opened` time plus the hours `game.toml` gives its asks, computed
/// exactly as the pipeline does (the longest of the asked kinds' hours).
fn check_deadline(path: &Path, bytes: &[u8], gf: &GameFile, op: &Opening) -> Result<DateTime<Utc>> {
    let opened = time_of(path, bytes, "opening.opened", &op.opened)?;
    time_of(path, bytes, "opening.deadline", &op.deadline)?;
    let hours = gf.deadlines.hours_for(op.asks.iter().map(|a| a.kind.as_str()));
    let want = pipeline::timestamp(opened + chrono::Duration::hours(hours as i64));
    if op.deadline != want {
        let kinds: Vec<&str> = op.asks.iter().map(|a| a.kind.as_str()).collect();
        return Err(fail_field(path, bytes, "opening.deadline", &op.deadline, format!(
            "is not opening.opened ({}) plus the {hours} hours game.toml gives step {}'s asks ({}): want {want}",
            op.opened, op.step, kinds.join(", ")
        )));
    }
    Ok(opened)
}

/// Every receipt of `step` was issued while the step was open: at or after `opened`, and, once
/// the step is resolved, at or before the time `resolved` gives with the record that resolved it.
fn check_receipt_times(gd: &GameDir, step: u64, opened: DateTime<Utc>, resolved: Option<(DateTime<Utc>, u64)>) -> Result<()> {
    for (path, r) in pipeline::read_receipts(gd, step).map_err(|e| Error::Audit(e.to_string()))? {
        let bytes = store::read(&path)?;
        let t = time_of(&path, &bytes, "received", &r.received)?;
        if t < opened {
            return Err(fail_field(&path, &bytes, "received", &r.received, format!("is before step {step} opened ({})", pipeline::timestamp(opened))));
        }
        if let Some((res, n)) = resolved
            && t > res {
                return Err(fail_field(&path, &bytes, "received", &r.received, format!(
                    "is after step {step} was resolved in record {n} ({}): an order accepted too late",
                    pipeline::timestamp(res)
                )));
            }
    }
    Ok(())
}

/// The times of record `n` resolving the step `opening` opened: resolved no earlier than opened,
/// an NMR only once the deadline and grace had passed (and never under the `wait` policy), the
/// next step opened when this one was resolved, and every receipt of the step in between.
fn check_times(gd: &GameDir, gf: &GameFile, n: u64, bytes: &[u8], rec: &Record, opening: &Opening, res: &Resolution) -> Result<()> {
    let rpath = gd.record(n);
    let opened = pipeline::parse_time(&opening.opened).map_err(|e| fail(&gd.record(n - 1), e))?;
    let resolved = time_of(&rpath, bytes, "resolution.resolved", &res.resolved)?;
    if resolved < opened {
        return Err(fail_field(&rpath, bytes, "resolution.resolved", &res.resolved, format!(
            "is before step {} opened ({}, record {}): times go backwards",
            res.step, opening.opened, n - 1
        )));
    }
    if let Some(nmr) = res.orders.iter().find(|o| o.seq.is_none()) {
        if gf.nmr.policy == NmrMode::Wait {
            return Err(fail(&rpath, format!("{} is NMR in step {}, but the game's NMR policy is wait (game.toml [nmr])", nmr.role, res.step)));
        }
        let deadline = pipeline::parse_time(&opening.deadline).map_err(|e| fail(&gd.record(n - 1), e))?;
        let due = deadline + chrono::Duration::hours(gf.deadlines.grace_hours as i64);
        if resolved < due {
            return Err(fail_field(&rpath, bytes, "resolution.resolved", &res.resolved, format!(
                "{} is NMR in step {}, resolved before its deadline {} plus {} grace hour(s) ({})",
                nmr.role, res.step, opening.deadline, gf.deadlines.grace_hours, pipeline::timestamp(due)
            )));
        }
    }
    if let Some(next) = &rec.opening
        && next.opened != res.resolved {
            return Err(fail_field(&rpath, bytes, "opening.opened", &next.opened, format!(
                "differs from resolution.resolved ({}): the next step opens when this one is resolved",
                res.resolved
            )));
        }
    check_receipt_times(gd, res.step, opened, Some((resolved, n)))
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
        Some((path, step, what)) => Err(fail(&path, format!(
            "holds {what} step {step}, which no record reached (the last record is {last}): records removed since (a history cut short), \
             or an interrupted adjudication (run `pbem adjudicate` to finish it)"
        ))),
    }
}

fn audit_game(dir: &Path, templates: Option<&Path>) -> Result<AuditSummary> {
    let gd = GameDir::new(dir);
    let gf = pipeline::read_game_file(&gd)?;
    let game = pipeline::rules(&gf.rules)?;
    let host = sig::public_key_line(&gf.host_key).map_err(|e| fail(&gd.game_file(), format!("host_key: {e}")))?;
    let mut seat_keys = BTreeMap::new();
    for s in &gf.seats {
        let k = sig::public_key_line(&s.key).map_err(|e| fail(&gd.game_file(), format!("seat {}: {e}", s.role)))?;
        seat_keys.insert(s.role.clone(), k);
    }
    let env = report::shared_environment(templates)?;
    let gf_bytes = store::read(&gd.game_file())?;
    let scenario = store::read_text(&gd.scenario_file())?;
    let last = gd.last_record()?.ok_or_else(|| fail(&gd.record(0), "missing: no records"))?;
    // Records must be numbered 0..=last: a deleted record shows as a gap before later ones.
    let files = store::list(&gd.root.join("records"))?.iter().filter(|n| n.ends_with(".json")).count() as u64;
    if files != last + 1 {
        return Err(fail(&gd.record(last + 1), "missing (deleted record?): later records exist"));
    }
    // A state or report past the last record: the record was deleted, or a run was interrupted
    // before its commit point (the next `pbem adjudicate` redoes that step and overwrites them).
    let orphan = gd.state(last + 1);
    let orphan_reports = gd.root.join("reports").join(format!("{:06}", last + 1));
    for p in [orphan, orphan_reports] {
        if p.exists() {
            return Err(fail(&p, format!("exists without record {}: a deleted record, or an interrupted adjudication (run `pbem adjudicate` to finish it)", last + 1)));
        }
    }
    let host_pub = gd.root.join("host").join("host_key.pub");
    if let Ok(text) = store::read_text(&host_pub)
        && sig::load_public_key(text.trim()).ok().as_ref() != Some(&host) {
            return Err(fail(&host_pub, "is not the host key named in game.toml"));
        }
    // Receipts exist only for steps a record opened: one for a later step shows a history cut
    // short (records deleted and the chain re-signed) or receipts made up.
    let hist = history::read(&gd, last, &gf_bytes, scenario.as_bytes())?;
    let open_step = hist.open_step;
    for name in store::list(&gd.root.join("receipts"))? {
        if name.parse::<u64>().is_ok_and(|s| s > open_step) {
            return Err(fail(&gd.root.join("receipts").join(&name), format!("receipts for a step no record opened (the last step opened is {open_step}): a history cut short?")));
        }
    }
    check_host_leftovers(&gd, last, hist.last_resolved, open_step)?;
    for step in 1..=open_step {
        check_receipts(&gd, &gf.id, step, &host)?;
    }
    let mut sum = AuditSummary::default();
    // A public copy made mid-game holds records/ and receipts/ only: states can hold secrets (the
    // plans of a paused round, hands) and each report is for its own role (README "What is
    // public"). Either folder present means the host's copy, where every file must be there.
    let has_states = gd.root.join("states").is_dir();
    let has_reports = gd.root.join("reports").is_dir();
    if has_states != has_reports {
        let (present, absent) = if has_states { ("states", "reports") } else { ("reports", "states") };
        return Err(fail(&gd.root.join(absent), format!("missing while {present}/ is present (a host's copy has both; a public copy neither)")));
    }
    sum.public_copy = !has_states;
    let mut state = game.setup(&scenario, &crate::team::rules_options(&gf.options)).map_err(|e| fail(&gd.scenario_file(), e))?;
    let mut prev: Option<(Vec<u8>, Record)> = None;
    let mut misses: BTreeMap<String, u32> = BTreeMap::new();
    // Late reveals by (step, role), from every record (checked where they stand, in the loop).
    let mut reveal_map: BTreeMap<(u64, String), (LateReveal, u64)> = BTreeMap::new();
    let mut revealed_key: Option<String> = None;
    for n in 0..=last {
        if let Ok(r) = pipeline::read_record(&gd, n) {
            for l in r.reveals {
                reveal_map.insert((l.step, l.role.clone()), (l, n));
            }
            if n == last {
                revealed_key = r.state_key;
            }
        }
    }
    // The key of the state commitments: the host's own, or the one the last record reveals once
    // the game is over (both, if both are there, must agree). Without it (a public copy of a game
    // still going on) the commitments cannot be checked yet.
    let state_key: Option<[u8; 32]> = {
        let host_file = gd.state_key();
        let host = match store::read_text(&host_file) {
            Ok(t) => Some(commit::parse_32(&t).ok_or_else(|| fail(&host_file, "not 64 hex digits"))?),
            Err(_) => None,
        };
        let revealed = match &revealed_key {
            Some(t) => Some(commit::parse_32(t).ok_or_else(|| fail(&gd.record(last), "state_key is not 64 hex digits"))?),
            None => None,
        };
        if let (Some(h), Some(r)) = (host, revealed)
            && h != r
        {
            return Err(fail(&host_file, format!("differs from the state key revealed in record {last}")));
        }
        host.or(revealed)
    };
    sum.states_unchecked = state_key.is_none();
    // Orders withheld and not yet revealed, with how long they wait.
    let mut outstanding: BTreeMap<(u64, String), WithheldUntil> = BTreeMap::new();
    // The first record whose orders are withheld with neither a later reveal nor the host's copy
    // (a public copy mid-game): from there on no step can be replayed, and only what needs no
    // replay is checked (signatures, the hash chain, host seeds, receipts, times).
    let mut secret_from: Option<u64> = None;
    // The full events of the step being checked (the record holds only the public ones).
    let mut events: Vec<crate::dice::Event> = Vec::new();
    for n in 0..=last {
        let rpath = gd.record(n);
        let bytes = store::read(&rpath).map_err(|_| fail(&rpath, "missing (deleted record?)"))?;
        check_host_sig(&rpath, &bytes, &host, NS_RECORD)?;
        let rec: Record = serde_json::from_slice(&bytes).map_err(|e| fail(&rpath, format!("not a record: {e}")))?;
        if model::record_bytes(&rec) != bytes {
            return Err(fail(&rpath, "not in canonical form"));
        }
        if rec.index != n || rec.game != gf.id {
            return Err(fail(&rpath, format!("says it is record {} of game {}", rec.index, rec.game)));
        }
        if let Some(op) = &rec.opening {
            // A host control keeps its step's opening, perhaps with another deadline (checked below).
            let opened = match &rec.control {
                None => check_deadline(&rpath, &bytes, &gf, op)?,
                Some(_) => time_of(&rpath, &bytes, "opening.opened", &op.opened)?,
            };
            if n == last {
                // The open step's receipts: issued since it opened.
                check_receipt_times(&gd, op.step, opened, None)?;
            }
        }
        match &prev {
            None => {
                // Its setup hash was checked with the history (through any seat changes since).
                if rec.prev.is_some() || rec.resolution.is_some() || !rec.reveals.is_empty() || rec.control.is_some() {
                    return Err(fail(&rpath, "record 0 must have no predecessor, resolution, reveals or host control"));
                }
            }
            Some((pbytes, prec)) => {
                if rec.prev.as_deref() != Some(&commit::sha256_hex(pbytes)) {
                    return Err(fail(&rpath, format!("hash chain broken: prev does not match record {}", n - 1)));
                }
                if rec.control.is_some() {
                    history::check_control(&rpath, &rec, prec)?;
                    history::check_players_end(&gd, &hist, &host, game, &state, &rpath, &rec, prec)?;
                    // Only abandoning reveals: everything still withheld, as any game's end does.
                    let keys: Vec<(u64, String)> = rec.reveals.iter().map(|r| (r.step, r.role.clone())).collect();
                    let due: Vec<(u64, String)> = if rec.outcome.is_some() { outstanding.keys().cloned().collect() } else { Vec::new() };
                    if keys != due {
                        return Err(fail(&rpath, format!("reveals {keys:?}, but the orders due are {due:?}")));
                    }
                    if rec.outcome.is_some() {
                        outstanding.clear();
                    }
                    events.clear();
                } else {
                let opening = prec.opening.as_ref().ok_or_else(|| fail(&rpath, "follows a record that ended the game"))?;
                let res = rec.resolution.as_ref().ok_or_else(|| fail(&rpath, "no resolution"))?;
                if let Some(since) = &opening.paused {
                    return Err(fail(&rpath, format!("resolves step {} while the host had paused the game (since {since}, record {})", res.step, n - 1)));
                }
                let step_keys = keys_for_step(&gd, &hist, n - 1, res.step)?;
                if res.step != opening.step {
                    return Err(fail(&rpath, format!("resolves step {} but step {} was open", res.step, opening.step)));
                }
                let host_seed = commit::parse_32(&res.host_seed).ok_or_else(|| fail(&rpath, "host_seed is not 64 hex digits"))?;
                if hex::encode(commit::host_seed_commitment(&gf.id, res.step, &host_seed)) != opening.host_seed_commitment {
                    return Err(fail(&rpath, format!("revealed host seed of step {} does not match its commitment in record {}", res.step, n - 1)));
                }
                let seed_file = gd.host_seed(res.step);
                if let Ok(t) = store::read_text(&seed_file)
                    && t.trim() != res.host_seed {
                        return Err(fail(&seed_file, format!("differs from the host seed revealed in record {n}")));
                    }
                let asked: Vec<&str> = opening.asks.iter().map(|a| a.role.as_str()).collect();
                let revealed: Vec<&str> = res.orders.iter().map(|o| o.role.as_str()).collect();
                if asked != revealed {
                    return Err(fail(&rpath, format!("orders revealed for {revealed:?}, but step {} asked {asked:?}", res.step)));
                }
                check_times(&gd, &gf, n, &bytes, &rec, opening, res)?;
                for o in &res.orders {
                    if o.withheld && (o.text.is_some() || o.signature.is_some() || !o.orders.is_empty()) {
                        return Err(fail(&rpath, format!("orders of {} are marked withheld but are present", o.role)));
                    }
                    if !o.withheld && !o.withheld_until.is_round_end() {
                        return Err(fail(&rpath, format!("orders of {} say how long they are withheld but are not withheld", o.role)));
                    }
                }
                // Withheld orders are taken from the later record that reveals them (or, auditing
                // on the host, from its own withheld copy).
                // Each with the file its text was read from, named by any failure about it.
                let mut full: Vec<Revealed> = Vec::new();
                let mut source: BTreeMap<String, PathBuf> = BTreeMap::new();
                for o in res.orders.iter().filter(|_| secret_from.is_none()) {
                    let hp = gd.withheld(res.step, &o.role);
                    if !o.withheld {
                        // A copy of orders this record published: a withheld copy left by an
                        // interrupted run (adjudication removes them), or one put there since.
                        if hp.exists() {
                            return Err(fail(&hp, format!("holds withheld orders of {} in step {}, but record {} published them (a copy left by an interrupted run? remove it)", o.role, res.step, rpath.display())));
                        }
                        full.push(o.clone());
                        source.insert(o.role.clone(), rpath.clone());
                        continue;
                    }
                    let host_copy = match store::read_text(&hp) {
                        Ok(t) => Some(serde_json::from_str::<LateReveal>(&t).map_err(|e| fail(&hp, e))?),
                        Err(_) => None,
                    };
                    match (reveal_map.get(&(res.step, o.role.clone())), host_copy) {
                        (Some((r, at)), host_copy) => {
                            // Revealed: the host's withheld copy, if kept, must be what was revealed.
                            if host_copy.is_some_and(|h| &h != r) {
                                return Err(fail(&hp, format!("differs from the orders of {} revealed in record {at}", o.role)));
                            }
                            full.push(o.with_reveal(r));
                            source.insert(o.role.clone(), gd.record(*at));
                        }
                        (None, Some(h)) => {
                            full.push(o.with_reveal(&h));
                            source.insert(o.role.clone(), hp);
                        }
                        (None, None) => {
                            // The host's copy keeps every withheld order until it is revealed: a
                            // missing one would switch the replay off for everything after it.
                            if gd.root.join("host").is_dir() {
                                return Err(fail(&hp, format!("missing: the host's copy keeps the withheld orders of {} in step {} until a record reveals them", o.role, res.step)));
                            }
                            if !game.ever_withholds() {
                                return Err(fail(&rpath, format!("marks the orders of {} withheld, but {} publishes every step at once", o.role, game.title())));
                            }
                            // Still secret: this step and every later one cannot be replayed here.
                            secret_from = Some(n);
                            break;
                        }
                    }
                }
                if secret_from.is_some() {
                    let cx = Replay { gd: &gd, gf: &gf, game, seat_keys: &step_keys, host: &host };
                    check_unreplayed(&cx, n, opening, res, &host_seed, &reveal_map, &mut sum)?;
                    // Beyond the replay: reveals can only name orders withheld and not yet revealed.
                    for r in &rec.reveals {
                        if outstanding.remove(&(r.step, r.role.clone())).is_none() {
                            return Err(fail(&rpath, format!("reveals orders of {} in step {} that were not withheld or were revealed before", r.role, r.step)));
                        }
                    }
                    outstanding.extend(res.orders.iter().filter(|o| o.withheld).map(|o| ((res.step, o.role.clone()), o.withheld_until)));
                    // At the game's end every order is due, whatever the game said of its step.
                    if rec.outcome.is_some() && !outstanding.is_empty() {
                        let list: Vec<String> = outstanding.keys().map(|(s, r)| format!("{r} in step {s}")).collect();
                        return Err(fail(&rpath, format!("the game is over, but the orders of {} were never revealed", list.join(", "))));
                    }
                } else {
                    let cx = Replay { gd: &gd, gf: &gf, game, seat_keys: &step_keys, host: &host };
                    let publication = replay_step(&cx, n, opening, res, &full, &source, &host_seed, &mut state, &mut misses, &mut events, &mut sum)?;
                    let over = matches!(game.pending(&state)?, Pending::Over(_));
                    check_publication(&rpath, &rec, res, publication, over, &mut outstanding)?;
                }
                // Every roll is re-derived from the record's step seed, replayed or not (SPEC.md
                // "Dice"); checked after the seed itself where its nonces are known (above).
                let step_seed = commit::parse_32(&res.seed).ok_or_else(|| fail(&rpath, "resolution.seed is not 64 hex digits"))?;
                if let Some((i, want)) = crate::dice::first_underived_roll(step_seed, &res.events) {
                    return Err(fail(&rpath, format!(
                        "resolution.events[{i}].roll: is not the next draw of step {}'s seed (the stream gives {want}): a roll changed?",
                        res.step
                    )));
                }
                }
            }
        }
        // The step a record opens: the one after the step it resolves (record 0: step 1); a host
        // control keeps the step open as it was.
        let want_step = match (&rec.resolution, &prev) {
            (Some(r), _) => r.step + 1,
            (None, Some((_, p))) if rec.control.is_some() => p.opening.as_ref().map_or(0, |o| o.step),
            (None, _) => 1,
        };
        // The state key is revealed by the record that ends the game, and by no other.
        if rec.state_key.is_some() != rec.outcome.is_some() {
            return Err(fail(&rpath, if rec.outcome.is_some() { "ends the game without revealing the state key" } else { "reveals the state key before the game is over" }));
        }
        if secret_from.is_none() {
            if let Some(key) = &state_key
                && pipeline::state_commitment(&gf.id, n, key, &state) != rec.state
            {
                return Err(fail(&rpath, "replayed state does not match the record's state commitment"));
            }
            let spath = gd.state(n);
            if has_states {
                let have = store::read(&spath).map_err(|e| fail_read(&spath, e))?;
                if have != state.as_bytes() {
                    return Err(differs(&spath, &have, &state, "the state"));
                }
            }
            // A host control's opening or outcome was checked against the record before it.
            if rec.control.is_none() {
                check_next(&rpath, &bytes, want_step, &rec, game.pending(&state)?)?;
            }
            let gf_then = &hist.files[n as usize];
            for s in gf_then.seats.iter().filter(|_| has_reports) {
                let want = report::render(&env, game, gf_then, &rec, &events, &state, &s.role)?;
                let rp = gd.report(n, &s.role);
                let have = store::read(&rp).map_err(|e| fail_read(&rp, e))?;
                if have != want.as_bytes() {
                    return Err(differs(&rp, &have, &want, "the report"));
                }
                sum.reports += 1;
            }
            sum.records += 1;
            sum.states.push(state.clone());
        } else if rec.opening.as_ref().is_some_and(|op| op.step != want_step) || rec.opening.is_some() == rec.outcome.is_some() {
            return Err(fail(&rpath, format!("must either open step {want_step} or state the outcome")));
        }
        prev = Some((bytes, rec));
    }
    sum.secret = secret_from.map(|first| (first, last));
    // Every receipt names a record that stood while its step was open (the one that opened it
    // or a host control after it) and the setup in force then (checked last, so that an edited
    // record is reported by the checks of the record itself).
    for step in 1..=open_step {
        for (path, r) in pipeline::read_receipts(&gd, step)? {
            hist.check_receipt(step, &r.record, &r.setup).map_err(|e| fail(&path, e))?;
        }
    }
    Ok(sum)
}

/// The seat keys that orders of `step` are checked with: each role's key in force when the host
/// issued the receipt it used (the record the receipt names), else after record `before`.
fn keys_for_step(gd: &GameDir, hist: &history::History, before: u64, step: u64) -> Result<BTreeMap<String, ssh_key::PublicKey>> {
    let receipts = pipeline::latest_receipts(gd, step)?;
    let mut keys = BTreeMap::new();
    for s in &hist.files[before as usize].seats {
        let gf = receipts.get(&s.role).and_then(|r| hist.file_at(&r.record)).unwrap_or(&hist.files[before as usize]);
        let line = gf.seat(&s.role).map_or(s.key.as_str(), |x| x.key.as_str());
        let k = sig::public_key_line(line).map_err(|e| fail(&gd.game_file(), format!("seat {}: {e}", s.role)))?;
        keys.insert(s.role.clone(), k);
    }
    Ok(keys)
}

/// What checking one step's orders needs besides the step.
struct Replay<'a> {
    gd: &'a GameDir,
    gf: &'a GameFile,
    game: &'static dyn DynGame,
    seat_keys: &'a BTreeMap<String, ssh_key::PublicKey>,
    host: &'a ssh_key::PublicKey,
}

/// The receipt an order of `role` in record `n` names (`seq`, commitment `c`): present,
/// host-signed, matching, and the newest of that role for the step (`receipts`).
fn check_order_receipt(cx: &Replay<'_>, n: u64, res: &Resolution, role: &str, seq: u64, c: &str, receipts: &BTreeMap<String, Receipt>) -> Result<()> {
    let rp = cx.gd.receipts(res.step).join(format!("{role}-{seq}.toml"));
    let rb = store::read(&rp).map_err(|e| fail_read(&rp, e))?;
    check_host_sig(&rp, &rb, cx.host, NS_RECEIPT)?;
    let r: Receipt = toml::from_str(std::str::from_utf8(&rb).unwrap_or("")).map_err(|e: toml::de::Error| fail(&rp, format!("not a receipt: {}", e.message().trim())))?;
    if r.commitment != c {
        return Err(fail_field(&rp, &rb, "commitment", &r.commitment, format!("is not the commitment of the order of {role} that record {n} used ({c})")));
    }
    if r.seq != seq || r.role != role || r.step != res.step {
        return Err(fail(&rp, format!("is the receipt of {} for step {}, number {}, not of the order of {role} record {n} used", r.role, r.step, r.seq)));
    }
    if receipts.get(role).map(|l| l.seq) != Some(seq) {
        return Err(fail(&rp, "a newer receipt exists: the newest order should have been used"));
    }
    Ok(())
}

/// A revealed order's signed `text` (read from `opath`): signed by the seat's key, matching its
/// commitment `c`, naming this game, step, role and host-seed commitment, and holding `orders`.
#[allow(clippy::too_many_arguments)]
fn check_order_text(
    cx: &Replay<'_>,
    opening: &Opening,
    res: &Resolution,
    role: &str,
    c: &str,
    text: &str,
    signature: &str,
    orders: &Orders,
    opath: &Path,
) -> Result<orderfile::OrderFile> {
    sig::verify(&cx.seat_keys[role], NS_ORDERS, text.as_bytes(), signature).map_err(|e| {
        fail(opath, match e {
            sig::SigError::BadSignature | sig::SigError::TextChanged => {
                format!("the order of {role} in step {} does not match its signature: it was changed after the player signed it", res.step)
            }
            e => format!("the signature of the order of {role} in step {}: {e}", res.step),
        })
    })?;
    let recomputed = hex::encode(commit::order_commitment(&cx.gf.id, res.step, role, text.as_bytes()));
    if recomputed != c {
        return Err(fail(opath, format!("revealed order of {role} does not match its commitment")));
    }
    let f = orderfile::parse(text).map_err(|p| fail(opath, format!("order of {role}: {}", p.message)))?;
    let h = &f.header;
    let header = [
        ("game", h.game.clone(), cx.gf.id.clone()),
        ("step", h.step.to_string(), res.step.to_string()),
        ("role", h.role.clone(), role.to_string()),
        ("host_seed_commitment", h.host_seed_commitment.clone(), opening.host_seed_commitment.clone()),
    ];
    if let Some((field, has, want)) = header.iter().find(|(_, has, want)| has != want) {
        return Err(fail(opath, format!("the order of {role} in step {} has pbem.{field} {has:?}, not {want:?}", res.step)));
    }
    if &f.orders != orders {
        return Err(fail(opath, format!("orders of {role} differ from the signed text")));
    }
    Ok(f)
}

/// What can be checked of the step record `n` resolves without replaying it (a public copy,
/// past orders still withheld): every order's receipt (withheld ones included), every order
/// whose text is public (here or in a later reveal) against its signature and commitment, and,
/// when every nonce is known, the step seed.
fn check_unreplayed(cx: &Replay<'_>, n: u64, opening: &Opening, res: &Resolution, host_seed: &[u8; 32], reveal_map: &BTreeMap<(u64, String), (LateReveal, u64)>, sum: &mut AuditSummary) -> Result<()> {
    let rpath = cx.gd.record(n);
    let receipts = pipeline::latest_receipts(cx.gd, res.step)?;
    let mut nonces: BTreeMap<String, [u8; 32]> = BTreeMap::new();
    let mut all_known = true;
    for o in &res.orders {
        match (&o.seq, &o.commitment) {
            (None, None) => {
                if receipts.contains_key(&o.role) {
                    return Err(fail(&rpath, format!("{} is NMR but has a receipt for step {}", o.role, res.step)));
                }
                nonces.insert(o.role.clone(), NMR_NONCE);
            }
            (Some(seq), Some(c)) => {
                check_order_receipt(cx, n, res, &o.role, *seq, c, &receipts)?;
                let public = if o.withheld {
                    reveal_map.get(&(res.step, o.role.clone())).map(|(r, at)| (r.text.clone(), r.signature.clone(), r.orders.clone(), cx.gd.record(*at)))
                } else {
                    Some((o.text.clone(), o.signature.clone(), o.orders.clone(), rpath.clone()))
                };
                match public {
                    Some((Some(text), Some(signature), orders, opath)) => {
                        let f = check_order_text(cx, opening, res, &o.role, c, &text, &signature, &orders, &opath)?;
                        sum.unreplayed_orders += 1;
                        let nonce = commit::parse_32(&f.header.nonce).unwrap_or(NMR_NONCE);
                        sum.nonce_once(nonce, &o.role, res.step, &opath, f.header.nonce.is_empty())?;
                        nonces.insert(o.role.clone(), nonce);
                    }
                    Some(_) => return Err(fail(&rpath, format!("order of {} is half revealed", o.role))),
                    None => all_known = false,
                }
            }
            _ => return Err(fail(&rpath, format!("order of {} is half revealed", o.role))),
        }
    }
    if all_known {
        let seed = commit::step_seed(&cx.gf.id, res.step, host_seed, nonces.iter().map(|(r, n)| (r.as_str(), n)));
        if hex::encode(seed) != res.seed {
            return Err(fail(&rpath, format!("step seed of step {} is not derived from the host seed and nonces", res.step)));
        }
    }
    Ok(())
}

/// Checks every order of the step record `n` resolves (`full`: withheld ones joined with their
/// reveal, each read from `source[role]`) and replays the step from `state`: signatures, receipts,
/// commitments, legality, the step seed, NMR orders, and the public events. Returns what the game
/// says of publishing the step's orders.
#[allow(clippy::too_many_arguments)]
fn replay_step(
    cx: &Replay<'_>,
    n: u64,
    opening: &Opening,
    res: &Resolution,
    full: &[Revealed],
    source: &BTreeMap<String, PathBuf>,
    host_seed: &[u8; 32],
    state: &mut String,
    misses: &mut BTreeMap<String, u32>,
    events: &mut Vec<crate::dice::Event>,
    sum: &mut AuditSummary,
) -> Result<Publication> {
    let Replay { gd, gf, game, .. } = *cx;
    let rpath = gd.record(n);
    let receipts = pipeline::latest_receipts(gd, res.step)?;
    let mut orders: BTreeMap<String, Orders> = BTreeMap::new();
    let mut nonces: BTreeMap<String, [u8; 32]> = BTreeMap::new();
    for o in full {
        let opath = &source[&o.role];
        let nonce = match (&o.seq, &o.commitment, &o.text, &o.signature) {
            (None, None, None, None) => {
                if receipts.contains_key(&o.role) {
                    return Err(fail(&rpath, format!("{} is NMR but has a receipt for step {}", o.role, res.step)));
                }
                // Checked once the step seed is known (a built-in player's orders come from a seed
                // derived from it).
                sum.nmr += 1;
                NMR_NONCE
            }
            (Some(seq), Some(c), Some(text), Some(signature)) => {
                check_order_receipt(cx, n, res, &o.role, *seq, c, &receipts)?;
                let f = check_order_text(cx, opening, res, &o.role, c, text, signature, &o.orders, opath)?;
                if let Err(p) = game.check_order(state, &o.role, &f.orders)? {
                    return Err(fail(opath, format!("order of {} is illegal: {}: {}", o.role, p[0].field, p[0].message)));
                }
                let sealed = gd.sealed(res.step).join(format!("{}-{seq}.txt", o.role));
                if sealed.exists() {
                    // The host's sealed copy (absent from a public copy of the game).
                    if store::read(&sealed)? != text.as_bytes() {
                        return Err(fail(&sealed, format!("differs from the order of {} revealed in record {n}", o.role)));
                    }
                    let sealed_sig = sig_path(&sealed);
                    if store::read_text(&sealed_sig).ok().as_deref() != Some(signature.as_str()) {
                        return Err(fail(&sealed_sig, format!("differs from the signature of {}'s order revealed in record {n}", o.role)));
                    }
                }
                sum.orders += 1;
                let nonce = commit::parse_32(&f.header.nonce).unwrap_or(NMR_NONCE);
                sum.nonce_once(nonce, &o.role, res.step, opath, f.header.nonce.is_empty())?;
                nonce
            }
            _ => return Err(fail(&rpath, format!("order of {} is half revealed", o.role))),
        };
        orders.insert(o.role.clone(), o.orders.clone());
        nonces.insert(o.role.clone(), nonce);
    }
    let seed = commit::step_seed(&gf.id, res.step, host_seed, nonces.iter().map(|(r, n)| (r.as_str(), n)));
    if hex::encode(seed) != res.seed {
        return Err(fail(&rpath, format!("step seed of step {} is not derived from the host seed and nonces", res.step)));
    }
    for o in full.iter().filter(|o| o.seq.is_none()) {
        let missed = misses.get(&o.role).copied().unwrap_or(0);
        let (want, kind) = pipeline::nmr_orders(game, gf, state, res.step, &seed, &o.role, missed)?;
        if o.nmr.as_deref().unwrap_or("default") != kind || want != o.orders {
            return Err(fail(&rpath, format!(
                "NMR orders of {} in step {} are not what the NMR policy gives ({kind} orders after {missed} missed step(s))",
                o.role, res.step
            )));
        }
    }
    model::count_misses(misses, res);
    let mut ctx = Ctx::new(seed);
    let after = game.resolve(state, &orders, &mut ctx)?;
    *events = ctx.into_events();
    let replayed = pipeline::public_events(events);
    if replayed != res.events {
        return Err(fail(&rpath, different_events(res.step, &res.events, &replayed)));
    }
    let publication = game.publication(state, &after)?;
    *state = after;
    Ok(publication)
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
            return Err(fail(rpath, format!(
                "orders of {} in step {} are {}, but the game's rule says {}",
                o.role, res.step, say(got), say(want)
            )));
        }
    }
    let due: Vec<(u64, String)> = outstanding.iter().filter(|(_, u)| u.due(publication, over)).map(|(k, _)| k.clone()).collect();
    let keys: Vec<(u64, String)> = rec.reveals.iter().map(|r| (r.step, r.role.clone())).collect();
    if keys != due {
        let list = |v: &[(u64, String)]| if v.is_empty() { "none".to_string() } else { v.iter().map(|(s, r)| format!("{r} of step {s}")).collect::<Vec<_>>().join(", ") };
        return Err(fail(rpath, format!("reveals {} but the orders due now are {}", list(&keys), list(&due))));
    }
    for k in &due {
        outstanding.remove(k);
    }
    if let Some(until) = want {
        outstanding.extend(res.orders.iter().map(|o| ((res.step, o.role.clone()), until)));
    }
    Ok(())
}

/// Every receipt of `step`: host-signed, for this game and step, numbered 1, 2, ... per role.
fn check_receipts(gd: &GameDir, game: &str, step: u64, host: &ssh_key::PublicKey) -> Result<()> {
    let mut next: BTreeMap<String, u64> = BTreeMap::new();
    let mut commitments: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (path, r) in pipeline::read_receipts(gd, step).map_err(|e| Error::Audit(e.to_string()))? {
        check_host_sig(&path, &store::read(&path)?, host, NS_RECEIPT)?;
        let want = next.entry(r.role.clone()).or_insert(1);
        let name = format!("{}-{}.toml", r.role, r.seq);
        if r.game != game || r.step != step || r.seq != *want || path.file_name().and_then(|n| n.to_str()) != Some(&name) {
            return Err(fail(&path, format!("receipt out of place: expected {}-{want}.toml of step {step} of game {game}", r.role)));
        }
        // The same order accepted twice would let a host bring back a superseded order as the
        // newest (and choose between their nonces); `submit` refuses such a resend.
        if let Some(first) = commitments.insert((r.role.clone(), r.commitment.clone()), r.seq) {
            return Err(fail(&path, format!("has the commitment of receipt {first}: the same order accepted twice (a superseded order brought back?)")));
        }
        *want += 1;
    }
    Ok(())
}
