//! The due index: a game's next due time in `DIR/.due`, so that an idle cron sweep skips a game
//! with a few system calls instead of loading it.
//!
//! `adjudicate` writes the file (in place, no fsync: it is only a hint; its last line a checksum,
//! so that a read during a rewrite or a rewrite a killed run left reads as missing, never
//! misread) each time it leaves a game with nothing due: a replacement by rename would free the
//! old file's block each step, which on a file system mounted with `discard` waits for the disk
//! ([`crate::store::write_hint_in_place`]). The next sweep trusts it only while everything it was computed from
//! is unchanged, each checked with one `stat`: the same `game.toml` (size and change time) and
//! newest record (size and change time), no record after it (by its signature, written first),
//! and the open step's receipts folder (`receipts/N/`) still absent or with the same size and change time, the only ways a step
//! becomes due before its deadline. The change time (ctime), not the modification time: every
//! change that moves the latter moves it too, and unlike the latter no tool can set it back
//! (`touch -d`, `cp -a`, `rsync -a` restore modification times). It comes from the kernel's
//! coarse clock (and some file systems keep whole seconds), so a file added within the same tick
//! as the stamp was taken would leave it unchanged: a folder stamp newer than [`FRESH_NS`] before
//! the index was written is not trusted (the game is loaded, and once it has been quiet that long
//! the index holds). The index itself is only believed where it can be bounded: written no later
//! than now (with [`FRESH_NS`] of slack), an open step with a deadline, and due by time (`until`)
//! at that deadline, or, only when the game file's grace hours or `--nmr wait` say so, later or
//! never (then `game.toml` is read to check). On any doubt (missing, unreadable, another format,
//! anything changed, the clock before the newest record or receipt it saw, the deadline reached)
//! the game is loaded and adjudicated as without the index, which then rewrites it. So the index
//! can make a sweep faster, never a due game wait. It also keeps the game's id and the
//! open step's deadline, so that the cron run finds game ids held by two folders and skips the
//! mail of an idle game (nothing new to mail, no reminder due) without reading `game.toml`
//! ([`peek`]). One file per game: games are written by different processes under their own
//! locks, each its own `DIR/.due`.
//!
//! A sweep reads them through the root index `ROOT/.due-index` ([`RootIndex`]): one file holding,
//! for each game, the `DIR/.due` a sweep last found holding, with the game folder's name and the
//! inodes of `game.toml` and the newest record. It is read once (one `read` for every game); an
//! idle game then costs the four `stat`s above, each an `fstatat` relative to the root folder
//! (a short path, no walk from `/`; a batch of games' on every core, [`RootIndex::peek_many`]),
//! and neither its `DIR/.due` nor anything else is opened. A
//! line is made only from a `DIR/.due` that held in full, and trusted only while all its stamps
//! and inodes hold, so it can say nothing its `DIR/.due` could not; any doubt falls back to
//! `DIR/.due`, and from there to loading the game. The sweep rewrites the root index (temp file
//! and rename, no fsync) only when a line changed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};

use crate::store::GameDir;

const MAGIC: &str = "pbem-due 7";

/// How many hex digits of the SHA-256 of the text before it the index's last line holds (its
/// checksum: the file is rewritten in place, so a read meanwhile can see old and new bytes).
const SUM_HEX: usize = 16;

/// A folder stamp taken less than this before the index was written is not trusted (two
/// seconds: the coarse clock's tick, and file systems that keep whole seconds); nor is an index
/// written more than this after now (this machine's clock).
pub const FRESH_NS: u128 = 2_000_000_000;

/// The largest index (and [`read_small`] file) read: one `read` of a buffer this size.
const SMALL: usize = 4096;

/// What the index says about a game, when it still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idle {
    /// The game's id (from its `game.toml`, unchanged since).
    pub id: String,
    /// Index of the newest record.
    pub record: u64,
    /// The newest record's [`short_sha`]: the cron run's mailed mark must name this very record,
    /// not another with its number (a game restored from a copy, a deleted game's id reused).
    pub sha: u64,
    /// The open step's deadline, Unix seconds (`None` once the game is over).
    pub deadline: Option<i64>,
    /// The game is over (nothing will ever be due).
    pub over: bool,
}

/// The first 16 hex digits of the SHA-256 of `bytes` (a record's, as its mailed mark names it),
/// as a number.
pub fn short_sha(bytes: &[u8]) -> u64 {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    u64::from_be_bytes(d[..8].try_into().expect("a SHA-256 has 32 bytes"))
}

/// [`short_sha`] read back from its 16 lowercase hex digits (`None` for anything else).
pub fn parse_short_sha(hex: &str) -> Option<u64> {
    (hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

/// What one read of the index tells a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peek {
    /// The game's id, when the index holds and `game.toml` is unchanged since it was written.
    pub id: Option<String>,
    /// The game is idle (see [`idle`]).
    pub idle: Option<Idle>,
}

/// `DIR/.due`.
pub fn path(dir: &GameDir) -> std::path::PathBuf {
    dir.root.join(".due")
}

/// Size and change time (ctime, ns since the Unix epoch) of a file or folder, as the index
/// records them.
type Stamp = (u64, u128);

/// The change time of `m` in ns since the Unix epoch (`None` before it).
fn ctime_ns(m: &std::fs::Metadata) -> Option<u128> {
    use std::os::unix::fs::MetadataExt;
    let secs = u128::try_from(m.ctime()).ok()?;
    Some(secs * 1_000_000_000 + u128::try_from(m.ctime_nsec()).ok()?)
}

/// The stamp of `path`: `Ok(None)` if it does not exist, `Err` if it cannot be looked at.
fn probe(path: &Path) -> Result<Option<Stamp>, ()> {
    match std::fs::metadata(path) {
        Ok(m) => ctime_ns(&m).map(|t| Some((m.len(), t))).ok_or(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) => Err(()),
    }
}

/// The stamp of `path`; `None` if absent or unreadable.
fn stamp(path: &Path) -> Option<Stamp> {
    probe(path).ok().flatten()
}

/// The text of a small file (at most 4 KiB) in one `read`, without a `stat`: `None` if it cannot be
/// read, is larger, or is not UTF-8. For the per-game files a sweep reads (the index, the cron
/// run's `mailed/` marks), where a slower fallback is always safe.
pub fn read_small(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    // Never a symbolic link, and a FIFO opened without waiting for a writer (a read then ends
    // at once); no `stat` to tell a regular file, since at most SMALL bytes are read anyway.
    read_small_from(std::fs::OpenOptions::new().read(true).custom_flags(crate::store::HINT_FLAGS).open(path).ok()?)
}

/// [`read_small`] of the file `name` in the folder `dir`, already open: one `openat` with the same
/// flags, without walking the folders above it again (the cron run reads every game's mailed
/// mark so).
pub fn read_small_at(dir: &std::fs::File, name: &str) -> Option<String> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `c` is NUL-terminated; the descriptor openat returns is owned by the File made of it.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC | crate::store::HINT_FLAGS) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened here and nothing else owns it.
    read_small_from(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// The text of the open file `f` in one `read` ([`read_small`]).
fn read_small_from(mut f: std::fs::File) -> Option<String> {
    let mut buf = [0u8; SMALL];
    // One read returns what a regular file holds (a file written in place meanwhile can read as
    // a mix of old and new bytes, which its checksum refuses); a full buffer means a larger file.
    let n = loop {
        match f.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(n) if n < SMALL => break n,
            _ => return None,
        }
    };
    String::from_utf8(buf[..n].to_vec()).ok()
}

/// The index's fields, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    record: u64,
    /// The newest record's [`short_sha`].
    sha: u64,
    /// The open step (receipts are filed by step, which host control records part from the
    /// record number).
    step: u64,
    record_stamp: Stamp,
    game_stamp: Stamp,
    /// The open step's receipts folder (`None`: it did not exist).
    receipts_stamp: Option<Stamp>,
    /// Unix seconds at which the open step is due by time (`None`: never by time).
    until: Option<i64>,
    /// Unix seconds of the open step's deadline (reminders are due before it).
    deadline: Option<i64>,
    /// Unix seconds of the newest record or receipt: before it, the game must be loaded (its
    /// "clock behind" refusal).
    not_before: i64,
    over: bool,
    /// Roles of the open step with no receipt then (for a host reading the file; the receipts
    /// folder's stamp is what is checked).
    awaited: Vec<String>,
    /// When the index was written (ns since the Unix epoch, this machine's clock).
    written: u128,
}
impl Entry {
    fn text(&self) -> String {
        let never = |t: Option<i64>| t.map_or("never".to_string(), |u| u.to_string());
        let (until, deadline) = (never(self.until), never(self.deadline));
        let receipts = self.receipts_stamp.map_or("none".to_string(), |(l, t)| format!("{l} {t}"));
        let body = format!(
            "{MAGIC}\nid {}\nrecord {} {} {}\nsha {:016x}\nstep {}\ngame {} {}\nreceipts {receipts}\nuntil {until}\ndeadline {deadline}\nnot_before {}\nover {}\nawaited {}\nwritten {}\nend\n",
            self.id,
            self.record,
            self.record_stamp.0,
            self.record_stamp.1,
            self.sha,
            self.step,
            self.game_stamp.0,
            self.game_stamp.1,
            self.not_before,
            u8::from(self.over),
            self.awaited.join(" "),
            self.written
        );
        let sum = crate::commit::sha256_hex(body.as_bytes());
        format!("{body}sum {}\n", &sum[..SUM_HEX])
    }

    fn parse(text: &str) -> Option<Entry> {
        // The checksum line last: the text before it must hash as it says.
        let body = text.strip_suffix('\n')?;
        let (body, sum) = body.split_at(body.rfind('\n')? + 1);
        let sum = sum.strip_prefix("sum ")?;
        if sum.len() != SUM_HEX || crate::commit::sha256_hex(body.as_bytes())[..SUM_HEX] != *sum {
            return None;
        }
        let mut lines = body.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(' ').map(str::to_string);
        let id = field("id")?;
        let record = field("record")?;
        let sha = parse_short_sha(&field("sha")?)?;
        let step = field("step")?.parse().ok()?;
        let game = field("game")?;
        let receipts = field("receipts")?;
        let until = field("until")?;
        let deadline = field("deadline")?;
        let not_before = field("not_before")?.parse().ok()?;
        let over = match field("over")?.as_str() {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        let awaited = field("awaited")?.split(' ').filter(|s| !s.is_empty()).map(str::to_string).collect();
        let written = field("written")?.parse().ok()?;
        if lines.next()? != "end" || lines.next().is_some() {
            return None;
        }
        let (n, record_stamp) = record.split_once(' ')?;
        let time = |t: String| if t == "never" { Some(None) } else { t.parse().ok().map(Some) };
        Some(Entry {
            id,
            record: n.parse().ok()?,
            sha,
            step,
            record_stamp: parse_stamp(record_stamp)?,
            game_stamp: parse_stamp(&game)?,
            receipts_stamp: if receipts == "none" { None } else { Some(parse_stamp(&receipts)?) },
            until: time(until)?,
            deadline: time(deadline)?,
            not_before,
            over,
            awaited,
            written,
        })
    }
}

/// `SIZE CTIME_NS`.
fn parse_stamp(text: &str) -> Option<Stamp> {
    let (l, t) = text.split_once(' ')?;
    Some((l.parse().ok()?, t.parse().ok()?))
}

/// The open step and its roles with no receipt, as the index `DIR/.due` of the game in `dir`
/// gives them for record `record` (`None` if it is missing, in any doubt, for another record or
/// for a game over). The roles are those of the moment the index was written: a receipt since
/// can only have made the list shorter, so it is never missing a role still awaited.
pub fn awaited(dir: &GameDir, record: u64) -> Option<(u64, Vec<String>)> {
    let e = read_small(&path(dir)).and_then(|t| Entry::parse(&t))?;
    (e.record == record && !e.over).then_some((e.step, e.awaited))
}

/// The game in `dir` is idle at `now` by its index: nothing can be due, so it need not be
/// loaded. `None` whenever the index is missing or in any doubt (then load the game).
pub fn idle(dir: &GameDir, now: DateTime<Utc>) -> Option<Idle> {
    peek(dir, now).idle
}

/// One read of the index: the game's id (what a cron run needs to find a game held by two
/// folders) and whether it is idle at `now` ([`idle`]).
pub fn peek(dir: &GameDir, now: DateTime<Utc>) -> Peek {
    peek_entry(dir, now).0
}

/// [`peek`], and the index itself when it shows the game idle.
fn peek_entry(dir: &GameDir, now: DateTime<Utc>) -> (Peek, Option<Entry>) {
    let Some(e) = read_small(&path(dir)).and_then(|t| Entry::parse(&t)) else { return (Peek::default(), None) };
    if stamp(&dir.game_file()) != Some(e.game_stamp) {
        return (Peek::default(), None);
    }
    let (id, kept) = (Some(e.id.clone()), e.clone());
    let idle = still_idle(dir, e, now);
    let entry = idle.is_some().then_some(kept);
    (Peek { id, idle }, entry)
}

/// A stamp of what the public copy of the game in `dir` is made from, for the cron run's
/// `[publish]`: a site published when the stamp was taken needs no new look while the stamp is
/// the same. It holds the newest record and open step by the game's `DIR/.due` (trusted only
/// when that record is still the newest), and the inode, size and change time of `game.toml`,
/// `scenario.toml`, the `records/` and `receipts/` folders and the open step's receipts folder:
/// a record or step added, a receipt filed or a file of these replaced changes one of them
/// (pbem writes by rename; change times no tool sets back). `None` when in doubt: no `.due`, a
/// newer record, a file that cannot be looked at (then the site is checked in full).
///
/// Take it before reading the public copy, so that a change made meanwhile makes it differ.
/// Returns the game's id (by the same `.due`), the stamp, and whether the game is over (by that
/// newest record).
pub fn public_stamp(dir: &GameDir) -> Option<(String, String, bool)> {
    let e = Entry::parse(&read_small(&path(dir))?)?;
    if ident(&dir.record(e.record)).ok()?.is_none() || ident(&dir.record(e.record + 1)) != Ok(None) {
        return None;
    }
    let mut text = format!("record {} step {}", e.record, e.step);
    let open = dir.receipts(e.step);
    let receipts = open.parent()?;
    for p in [&dir.game_file(), &dir.scenario_file(), &dir.records(), receipts, &open] {
        match ident(p).ok()? {
            Some((ino, len, t)) => text.push_str(&format!(" {ino}:{len}:{t}")),
            None => text.push_str(" -"),
        }
    }
    Some((e.id, text, e.over))
}

/// The [`Ident`] of `path`: `Ok(None)` if it does not exist, `Err` if it cannot be looked at.
fn ident(path: &Path) -> Result<Option<Ident>, ()> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) => ctime_ns(&m).map(|t| Some((m.ino(), m.len(), t))).ok_or(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) => Err(()),
    }
}

/// The checks of [`idle`] after `game.toml`'s: the clock, then one `stat` each of the newest
/// record, the next one (absent) and the open step's receipts folder.
fn still_idle(dir: &GameDir, e: Entry, now: DateTime<Utc>) -> Option<Idle> {
    if !bounded(&e, now) {
        return None;
    }
    if stamp(&dir.record(e.record))? != e.record_stamp || probe(&next_signature(dir, e.record)) != Ok(None) {
        return None;
    }
    if !e.over && probe(&dir.receipts(e.step)) != Ok(e.receipts_stamp) {
        return None;
    }
    grace_holds(dir, &e)?;
    Some(Idle { id: e.id, record: e.record, sha: e.sha, deadline: e.deadline, over: e.over })
}

/// The signature of the record after record `n`: written before anything else of that record
/// (the record, its commit point, last), so a run killed on its way to it leaves the game loaded
/// by the next sweep, which clears what it wrote.
fn next_signature(dir: &GameDir, n: u64) -> PathBuf {
    let mut p = dir.record(n + 1).into_os_string();
    p.push(".sig");
    PathBuf::from(p)
}

/// The checks of an index that need no file: the clock not behind the game, not yet due by
/// time, [`plausible`], and a receipts folder stamp older than [`FRESH_NS`] before the index.
fn bounded(e: &Entry, now: DateTime<Utc>) -> bool {
    let secs = now.timestamp();
    if secs < e.not_before || e.until.is_some_and(|u| secs >= u) || !plausible(e) {
        return false;
    }
    // A folder stamp from the same clock tick as the index could miss a receipt filed after it.
    e.over || e.receipts_stamp.is_none_or(|(_, t)| t.saturating_add(FRESH_NS) <= e.written)
}

/// An index due by time later than its deadline (or never) holds only if the game file's grace
/// hours or `--nmr wait` say so (then `game.toml` is read).
fn grace_holds(dir: &GameDir, e: &Entry) -> Option<()> {
    if !e.over && e.until != e.deadline && e.until != until_by_game_file(dir, e.deadline?)? {
        return None;
    }
    Some(())
}

/// What a stale or hand-made index may say wrongly, checked without a system call beyond the
/// clock: written after now, an open step without a deadline, due by time before it, or a game
/// over that still waits for a step.
fn plausible(e: &Entry) -> bool {
    let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) else { return false };
    if e.written > now.as_nanos().saturating_add(FRESH_NS) {
        return false;
    }
    match (e.over, e.deadline) {
        (true, d) => d.is_none() && e.until.is_none() && e.receipts_stamp.is_none(),
        (false, None) => false,
        (false, Some(d)) => e.until.is_none_or(|u| u >= d),
    }
}

/// When a step with `deadline` (Unix seconds) is due by time by the game file's NMR policy and
/// grace hours, as `adjudicate` reckons it (`Some(None)`: never, `--nmr wait`); `None` if the
/// game file cannot be read. Read only for an index whose `until` is not its deadline.
fn until_by_game_file(dir: &GameDir, deadline: i64) -> Option<Option<i64>> {
    let text = crate::store::read_text(&dir.game_file()).ok()?;
    let gf: crate::model::GameFile = toml::from_str(&text).ok()?;
    let grace = i64::from(gf.deadlines.grace_hours) * 3600;
    Some((gf.nmr.policy != crate::model::NmrMode::Wait).then(|| deadline.saturating_add(grace)))
}

/// The root index's file name: `ROOT/.due-index`.
pub const ROOT_INDEX: &str = ".due-index";

const ROOT_MAGIC: &str = "pbem-due-index 2";

/// Inode, size and change time (ns) of a file: a [`Stamp`] that also tells one file from
/// another (a root index line names its folder, and folders can be renamed or swapped).
type Ident = (u64, u64, u128);

/// The root folder, open: what [`At`] looks at files relative to (shared by the threads of a sweep).
struct RootFolder(std::fs::File);

impl RootFolder {
    fn open(root: &Path) -> Option<RootFolder> {
        Some(RootFolder(std::fs::File::open(root).ok()?))
    }

    /// A looker with a path buffer of its own (one a game, on any thread).
    fn at(&self) -> At<'_> {
        At { root: &self.0, path: Vec::with_capacity(64) }
    }
}

/// Files of the games under one root, looked at relative to the root folder: one `fstatat` each,
/// with a short path (`g1/game.toml`) instead of a walk from `/`.
struct At<'a> {
    root: &'a std::fs::File,
    path: Vec<u8>,
}

impl At<'_> {

    /// The identity of `NAME/REL`: `Ok(None)` if it does not exist, `Err` if it cannot be
    /// looked at (as [`probe`]).
    fn probe(&mut self, name: &str, rel: &str) -> Result<Option<Ident>, ()> {
        self.path.clear();
        self.path.extend_from_slice(name.as_bytes());
        self.path.push(b'/');
        self.path.extend_from_slice(rel.as_bytes());
        self.stat()
    }

    /// [`At::probe`] of `NAME/records/NNNNNN.json` (`ext` `.json`) or `NAME/receipts/NNNNNN`
    /// (`ext` empty), as [`GameDir`] names them: the path written in place (no text formatted).
    fn probe_numbered(&mut self, name: &str, folder: &str, n: u64, ext: &str) -> Result<Option<Ident>, ()> {
        self.path.clear();
        self.path.extend_from_slice(name.as_bytes());
        self.path.push(b'/');
        self.path.extend_from_slice(folder.as_bytes());
        self.path.push(b'/');
        push_six_digits(&mut self.path, n);
        self.path.extend_from_slice(ext.as_bytes());
        self.stat()
    }

    /// One `fstatat` of the path in `self.path` (relative to the root folder).
    fn stat(&mut self) -> Result<Option<Ident>, ()> {
        use std::os::fd::AsRawFd;
        self.path.push(0);
        let c = std::ffi::CStr::from_bytes_with_nul(&self.path).map_err(|_| ())?;
        // SAFETY: `st` is a plain C struct fstatat fills in; `c` is a NUL-terminated path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatat(self.root.as_raw_fd(), c.as_ptr(), &mut st, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::NotFound { Ok(None) } else { Err(()) };
        }
        #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
        let (secs, nsec) = (st.st_ctime as i64, st.st_ctime_nsec as i64);
        let ctime = u128::try_from(secs).ok().zip(u128::try_from(nsec).ok()).ok_or(())?;
        #[allow(clippy::unnecessary_cast)]
        Ok(Some((st.st_ino as u64, st.st_size as u64, ctime.0 * 1_000_000_000 + ctime.1)))
    }
}

/// Appends `n` in decimal, zero-padded to six digits (as `format!("{n:06}")`). By hand: through
/// `write!` the idle sweep took a quarter more instructions (97.4 → 122.9 million at 10,000 games).
fn push_six_digits(buf: &mut Vec<u8>, n: u64) {
    let mut digits = [b'0'; 20];
    let (mut i, mut rest) = (digits.len(), n);
    while rest > 0 || i > digits.len() - 6 {
        i -= 1;
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    buf.extend_from_slice(&digits[i..]);
}

/// The due index of every game under a root in one file, `ROOT/.due-index`, so that a sweep
/// reads one file for all its games and looks at each idle game with four `fstatat`s relative to
/// the root folder (`game.toml`, the newest record, the next record's signature (written first, so
/// a run killed before its record is seen), the open step's receipts folder), no `open` or `read` of its `DIR/.due`.
///
/// Each line is a game's `DIR/.due` as a sweep found it holding (the same fields, stamps and
/// checks, [`bounded`]), with the folder's name and the inode of its `game.toml` and newest
/// record (a folder renamed or swapped with another has other files). A line is only ever taken
/// from a `DIR/.due` that held in full at the time ([`peek`]), and is trusted only while every
/// stamp is unchanged, so it says no more than that file did: on any doubt (a line missing,
/// unreadable, a stamp changed) the game falls back to its own `DIR/.due` (and, failing that, is
/// loaded). The file is a hint: written by temp file and rename without fsync, after a sweep
/// whose lines differ from it; a damaged or unknown file is ignored as a whole and rewritten.
///
/// The file is never held in memory whole (at 100,000 games it is ~14 MB): it is checked whole
/// in one streamed pass, then read line by line in step with the games, which come in the
/// order of their names as the lines do; the file to write is the runs of lines kept (byte
/// ranges of the file read, copied from it) and the lines made new.
pub struct RootIndex {
    root: PathBuf,
    folder: Option<RootFolder>,
    /// The file read, when it was whole ([`OldIndex::open`]).
    old: Option<OldIndex>,
    /// The lines of the file to write, in the order peeked.
    new: Vec<Piece>,
    /// The lines made new, one after another, each with its newline (a sweep that remakes every
    /// line holds one text, not a string a game).
    made: String,
    /// Some line of the file read was not kept as it is, or a line was made new.
    changed: bool,
    /// The name of the game peeked last (`None` before the first).
    last: Option<String>,
}

/// Buffer of the streamed reads and the copy of kept lines.
const CHUNK: usize = 64 * 1024;

/// The longest root index line read (a game's `DIR/.due`, at most [`SMALL`], with its folder's
/// name and inodes): a longer one ends the index there, which is then rebuilt.
const LINE_MAX: u64 = SMALL as u64 + 1024;

/// `ROOT/.due-index` as read: line by line, the current line held.
struct OldIndex {
    lines: std::io::BufReader<std::fs::File>,
    /// The current line, without its newline (`end` at the end of the file).
    line: String,
    /// Where the current line begins and where the next one does.
    at: u64,
    next: u64,
}

impl OldIndex {
    /// The file at `path` when it is a whole root index ([`whole`]), at its first line.
    fn open(path: &Path) -> Option<OldIndex> {
        use std::io::{Seek, SeekFrom};
        let mut lines = std::io::BufReader::with_capacity(CHUNK, crate::store::open_hint(path)?);
        if !whole(&mut lines) {
            return None;
        }
        lines.seek(SeekFrom::Start(0)).ok()?;
        let mut old = OldIndex { lines, line: String::new(), at: 0, next: 0 };
        old.advance();
        old.advance();
        Some(old)
    }

    /// Moves to the next line (a read that fails ends the file there: the index is rewritten).
    fn advance(&mut self) {
        use std::io::BufRead;
        self.line.clear();
        self.at = self.next;
        match (&mut self.lines).take(LINE_MAX).read_line(&mut self.line) {
            Ok(n) if n > 0 && self.line.ends_with('\n') => {
                self.next += n as u64;
                self.line.pop();
            }
            _ => self.line.replace_range(.., "end"),
        }
    }

    /// The current line's folder name (`None` at the end).
    fn name(&self) -> Option<&str> {
        (self.line != "end").then(|| self.line.split(' ').next().unwrap_or_default())
    }

    /// Appends bytes `a..b` of the file to `w`.
    fn copy(&self, a: u64, b: u64, w: &mut impl std::io::Write, buf: &mut [u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut at = a;
        while at < b {
            let n = usize::try_from(b - at).unwrap_or(usize::MAX).min(buf.len());
            self.lines.get_ref().read_exact_at(&mut buf[..n], at)?;
            w.write_all(&buf[..n])?;
            at += n as u64;
        }
        Ok(())
    }
}

/// True when `r` reads as a whole root index: the header, lines each naming a folder in
/// increasing order, `end` and nothing after it (one pass, one line held at a time).
fn whole(r: &mut impl std::io::BufRead) -> bool {
    use std::io::{BufRead, Read};
    let mut line = String::new();
    // The name of the line before (one buffer for the file: `None` before the first line).
    let mut prev: Option<String> = None;
    let mut next = |line: &mut String| {
        line.clear();
        matches!((&mut *r).take(LINE_MAX).read_line(line), Ok(n) if n > 0 && line.ends_with('\n')).then(|| line.pop())
    };
    if next(&mut line).is_none() || line != ROOT_MAGIC {
        return false;
    }
    loop {
        if next(&mut line).is_none() {
            return false;
        }
        if line == "end" {
            return next(&mut line).is_none() && line.is_empty();
        }
        let Some((name, _)) = line.split_once(' ') else { return false };
        if prev.as_deref().is_some_and(|p| p >= name) {
            return false;
        }
        let p = prev.get_or_insert_with(String::new);
        p.clear();
        p.push_str(name);
    }
}

impl RootIndex {
    /// Opens `ROOT/.due-index` (checked whole in one streamed pass, [`whole`]) and the root
    /// folder.
    pub fn read(root: &Path) -> RootIndex {
        RootIndex { root: root.to_path_buf(), folder: RootFolder::open(root), old: OldIndex::open(&root.join(ROOT_INDEX)), new: Vec::new(), made: String::new(), changed: false, last: None }
    }

    /// [`peek`] for the game folder `name` directly under the root: from its line when every
    /// stamp holds, else from `DIR/.due` (and its line is made anew when that holds). Names
    /// come in increasing order (as the cron run's `game_folders` lists them); a name
    /// out of order is peeked from its `DIR/.due` and left out of the file.
    pub fn peek(&mut self, name: &str, now: DateTime<Utc>) -> Peek {
        self.peek_many(&[name], now).pop().unwrap_or_default()
    }

    /// [`RootIndex::peek`] of each of `names` in turn, the lines' stamps looked at on every core
    /// (`par`: the four `fstatat`s of an idle game are most of a sweep's time). The lines are
    /// taken from the file in order first and the results settled in order after, so the file
    /// written is the same as by one `peek` a name. `names`: a few thousand at a time (each
    /// one's line is held until the end).
    pub fn peek_many(&mut self, names: &[&str], now: DateTime<Utc>) -> Vec<Peek> {
        let mut lines = String::new();
        let routes: Vec<Route> = names.iter().map(|name| self.route(name, &mut lines)).collect();
        let (root, folder) = (&self.root, self.folder.as_ref());
        let jobs: Vec<(&str, &Route)> = names.iter().copied().zip(&routes).collect();
        let held = crate::par::map(&jobs, |&(name, r)| match (r, folder) {
            (Route::Line { text, .. }, Some(f)) => from_line(&mut f.at(), root, name, &lines[text.0..text.1], now),
            _ => None,
        });
        drop((jobs, lines));
        names.iter().zip(routes).zip(held).map(|((name, r), e)| self.settle(name, r, e, now)).collect()
    }

    /// Where `name`'s line is: the file read is advanced to it (a line of a folder not peeked,
    /// gone or no game now, is left out), and the line copied to `lines`.
    fn route(&mut self, name: &str, lines: &mut String) -> Route {
        let plain = plain_name(name) && !name.contains('/');
        let in_order = self.last.as_deref().is_none_or(|l| l < name);
        if !(plain && in_order && self.folder.is_some()) {
            self.changed |= plain;
            return Route::Direct;
        }
        self.last.get_or_insert_with(String::new).replace_range(.., name);
        while let Some(old) = self.old.as_mut() {
            match old.name().map(|n| n.cmp(name)) {
                Some(std::cmp::Ordering::Less) => {
                    self.changed = true;
                    old.advance();
                }
                Some(std::cmp::Ordering::Equal) => {
                    let start = lines.len();
                    lines.push_str(&old.line);
                    let route = Route::Line { text: (start, lines.len()), bytes: (old.at, old.next) };
                    old.advance();
                    return route;
                }
                _ => break,
            }
        }
        Route::New
    }

    /// The peek of one name after its line was looked at (`held`: the line's entry, when every
    /// stamp held): the line kept, or the game's `DIR/.due` read and its line made anew.
    fn settle(&mut self, name: &str, route: Route, held: Option<Entry>, now: DateTime<Utc>) -> Peek {
        let Some(folder) = self.folder.as_ref().filter(|_| !matches!(route, Route::Direct)) else {
            return peek(&GameDir::new(self.root.join(name)), now);
        };
        if let (Route::Line { bytes: (a, b), .. }, Some(e)) = (&route, held) {
            match self.new.last_mut() {
                Some(Piece::Kept(_, end)) if *end == *a => *end = *b,
                _ => self.new.push(Piece::Kept(*a, *b)),
            }
            let idle = Idle { id: e.id.clone(), record: e.record, sha: e.sha, deadline: e.deadline, over: e.over };
            return Peek { id: Some(e.id), idle: Some(idle) };
        }
        self.changed = true;
        let mut at = folder.at();
        let game = at.probe(name, "game.toml");
        let (p, e) = peek_entry(&GameDir::new(self.root.join(name)), now);
        if let (Some(e), Ok(Some(g))) = (e, game)
            && (g.1, g.2) == e.game_stamp
            && let Ok(Some(r)) = at.probe_numbered(name, "records", e.record, ".json")
            && (r.1, r.2) == e.record_stamp
        {
            let start = self.made.len();
            self.made.push_str(&root_line(name, g.0, r.0, &e));
            self.made.push('\n');
            self.new.push(Piece::Made(start, self.made.len()));
        }
        p
    }

    /// Writes `ROOT/.due-index` with the lines of the games peeked, if they differ from the file
    /// read (best effort, like [`write`]: a file that cannot be written is a slower next sweep).
    pub fn save(self) {
        let RootIndex { root, old, new, made, changed, .. } = self;
        // Every line of the file kept as it was, and no other: nothing to write.
        let left = old.as_ref().is_some_and(|o| o.name().is_some());
        if !changed && !left || new.is_empty() && old.is_none() {
            return;
        }
        let tmp = root.join(format!("{ROOT_INDEX}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut w = std::io::BufWriter::with_capacity(CHUNK, std::fs::File::create(&tmp)?);
            let mut buf = vec![0u8; CHUNK];
            writeln!(w, "{ROOT_MAGIC}")?;
            for p in &new {
                match (p, &old) {
                    (Piece::Kept(a, b), Some(old)) => old.copy(*a, *b, &mut w, &mut buf)?,
                    (Piece::Kept(..), None) => return Err(std::io::ErrorKind::NotFound.into()),
                    (Piece::Made(a, b), _) => w.write_all(&made.as_bytes()[*a..*b])?,
                }
            }
            w.write_all(b"end\n")?;
            w.flush()
        };
        if write().is_err() || std::fs::rename(&tmp, root.join(ROOT_INDEX)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Where a name peeked by [`RootIndex::peek_many`] is looked up.
enum Route {
    /// In its own `DIR/.due` only (a name the file cannot hold, or out of order; or no root folder).
    Direct,
    /// By its line of the file read: its start and end in the batch's text, and its bytes in the file.
    Line { text: (usize, usize), bytes: (u64, u64) },
    /// The file read has no line for it: its `DIR/.due`, and its line made anew when that holds.
    New,
}

/// A line (or a run of lines) of the root index to write.
enum Piece {
    /// Kept from the file read: the bytes from one offset to another there (whole lines, their
    /// newlines included).
    Kept(u64, u64),
    /// Made new: its start and end in [`RootIndex`]'s `made` (its newline included).
    Made(usize, usize),
}

/// A folder name a root index line can hold: not empty, no whitespace or control characters.
fn plain_name(name: &str) -> bool {
    // Printable ASCII without a space, the usual name, is checked a byte at a time.
    let ascii = |b: u8| b > b' ' && b < 0x7f;
    !name.is_empty() && (name.bytes().all(ascii) || !name.chars().any(|c| c.is_whitespace() || c.is_control()))
}

/// A root index line: `NAME GAME_INO RECORD_INO` and the fields of the game's `DIR/.due`.
fn root_line(name: &str, game_ino: u64, record_ino: u64, e: &Entry) -> String {
    let never = |t: Option<i64>| t.map_or("-".to_string(), |u| u.to_string());
    let receipts = e.receipts_stamp.map_or("-".to_string(), |(l, t)| format!("{l}:{t}"));
    format!(
        "{name} {game_ino} {record_ino} {} {} {:016x} {} {} {} {} {} {receipts} {} {} {} {} {}",
        e.id,
        e.record,
        e.sha,
        e.step,
        e.record_stamp.0,
        e.record_stamp.1,
        e.game_stamp.0,
        e.game_stamp.1,
        never(e.until),
        never(e.deadline),
        e.not_before,
        u8::from(e.over),
        e.written
    )
}

/// Reads a [`root_line`] back: its inodes and the entry (`None` if it is not one).
fn parse_root_line(line: &str) -> Option<(&str, u64, u64, Entry)> {
    // The 17 fields split in place (no list of them made: this runs once a game a sweep).
    // By byte: `str::split` took 15% more of the idle sweep's instructions.
    let mut f = [""; 17];
    let mut rest = line;
    for slot in &mut f[..16] {
        let at = rest.bytes().position(|b| b == b' ')?;
        (*slot, rest) = (&rest[..at], &rest[at + 1..]);
    }
    if rest.bytes().any(|b| b == b' ') {
        return None;
    }
    f[16] = rest;
    let [name, game_ino, record_ino, id, record, sha, step, rl, rt, gl, gt, receipts, until, deadline, not_before, over, written] = f;
    let num = |t: &str| t.parse::<u64>().ok();
    // A change time in ns fits 64 bits until 2554: parsed as such first (a quarter of the cost).
    let ns = |t: &str| t.parse::<u64>().map(u128::from).or_else(|_| t.parse::<u128>()).ok();
    let time = |t: &str| if t == "-" { Some(None) } else { t.parse().ok().map(Some) };
    let receipts_stamp = match receipts {
        "-" => None,
        r => r.split_once(':').and_then(|(l, t)| Some((num(l)?, ns(t)?))).map(Some)?,
    };
    let over = match over {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    let e = Entry {
        id: id.to_string(),
        record: num(record)?,
        sha: parse_short_sha(sha)?,
        step: num(step)?,
        record_stamp: (num(rl)?, ns(rt)?),
        game_stamp: (num(gl)?, ns(gt)?),
        receipts_stamp,
        until: time(until)?,
        deadline: time(deadline)?,
        not_before: not_before.parse().ok()?,
        over,
        awaited: Vec::new(),
        written: ns(written)?,
    };
    (plain_name(name) && plain_name(id)).then_some((name, num(game_ino)?, num(record_ino)?, e))
}

/// The entry of a root index line when it still holds for the game folder `name` under `root`
/// at `now`: the checks of [`still_idle`] and `game.toml`'s, each file by its identity.
fn from_line(at: &mut At<'_>, root: &Path, name: &str, line: &str, now: DateTime<Utc>) -> Option<Entry> {
    let (n, game_ino, record_ino, e) = parse_root_line(line)?;
    if n != name || !bounded(&e, now) {
        return None;
    }
    let same = |got: Result<Option<Ident>, ()>, ino: u64, s: Stamp| got == Ok(Some((ino, s.0, s.1)));
    if !same(at.probe(name, "game.toml"), game_ino, e.game_stamp) || !same(at.probe_numbered(name, "records", e.record, ".json"), record_ino, e.record_stamp) {
        return None;
    }
    if at.probe_numbered(name, "records", e.record + 1, ".json.sig") != Ok(None) {
        return None;
    }
    if !e.over && at.probe_numbered(name, "receipts", e.step, "").map(|o| o.map(|(_, l, t)| (l, t))) != Ok(e.receipts_stamp) {
        return None;
    }
    if !e.over && e.until != e.deadline {
        grace_holds(&GameDir::new(root.join(name)), &e)?;
    }
    Some(e)
}

/// What the game is waiting for, for [`write`].
pub struct Waiting<'a> {
    /// The game's id.
    pub id: &'a str,
    /// Index of the newest record.
    pub record: u64,
    /// The newest record's [`short_sha`].
    pub sha: u64,
    /// The open step (0 when the game is over).
    pub step: u64,
    /// When the open step becomes due by time (`None`: never by time, or the game is over).
    pub until: Option<DateTime<Utc>>,
    /// The open step's deadline (`None` once the game is over).
    pub deadline: Option<DateTime<Utc>>,
    /// The newest record's or receipt's time.
    pub newest: Option<DateTime<Utc>>,
    /// The game is over.
    pub over: bool,
    /// Roles of the open step with no receipt yet.
    pub awaited: Vec<&'a str>,
}

/// Writes the index of the game in `dir` (called with the game's lock held, after loading it).
/// Best effort: an index that cannot be written is only a slower next sweep, so errors are
/// ignored; a role name that could not be written on one line leaves the index out.
pub fn write(dir: &GameDir, w: &Waiting<'_>) {
    if std::iter::once(&w.id).chain(&w.awaited).any(|r| r.is_empty() || r.contains(char::is_whitespace)) {
        return forget(dir);
    }
    let (Some(game_stamp), Some(record_stamp)) = (stamp(&dir.game_file()), stamp(&dir.record(w.record))) else { return forget(dir) };
    let Ok(receipts_stamp) = (if w.over { Ok(None) } else { probe(&dir.receipts(w.step)) }) else { return forget(dir) };
    // Read after the stamps, so that a stamp is fresh when its tick may not be over ([`FRESH_NS`]).
    let Ok(written) = SystemTime::now().duration_since(UNIX_EPOCH) else { return forget(dir) };
    let e = Entry {
        id: w.id.to_string(),
        record: w.record,
        sha: w.sha,
        step: w.step,
        record_stamp,
        game_stamp,
        receipts_stamp,
        until: if w.over { None } else { w.until.map(|t| t.timestamp()) },
        deadline: if w.over { None } else { w.deadline.map(|t| t.timestamp()) },
        not_before: w.newest.map_or(0, |t| t.timestamp() + 1),
        over: w.over,
        awaited: w.awaited.iter().map(|r| r.to_string()).collect(),
        written: written.as_nanos(),
    };
    let text = e.text();
    if text.len() >= SMALL {
        return forget(dir);
    }
    // In place: a replacement by rename would free the old file's block every step.
    let _ = crate::store::write_hint_in_place(&path(dir), text.as_bytes());
}

/// Removes the index (a change it cannot see coming, e.g. a rewritten game file, is safe
/// anyway; this is for callers that know the game changed).
pub fn forget(dir: &GameDir) {
    let _ = std::fs::remove_file(path(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            id: "g1".into(),
            record: 3,
            sha: 0x0123_4567_89ab_cdef,
            step: 2,
            record_stamp: (10, 20),
            game_stamp: (30, 40),
            receipts_stamp: Some((50, 60)),
            until: Some(99),
            deadline: Some(90),
            not_before: 5,
            over: false,
            awaited: vec!["union".into(), "confederate".into()],
            written: 70,
        }
    }

    #[test]
    fn entry_round_trips_and_rejects_damage() {
        let e = entry();
        assert_eq!(Entry::parse(&e.text()), Some(e.clone()));
        let never = Entry { until: None, deadline: None, awaited: vec![], over: true, receipts_stamp: None, ..e.clone() };
        assert_eq!(Entry::parse(&never.text()), Some(never));
        let text = e.text();
        for cut in 0..text.len() - 1 {
            assert_eq!(Entry::parse(&text[..cut]), None, "cut at {cut}");
        }
        // A field changed with its checksum made again: refused by the parser.
        let resum = |from: &str, to: &str| {
            let body = text.split_at(text.rfind("sum ").unwrap()).0.replace(from, to);
            format!("{body}sum {}\n", &crate::commit::sha256_hex(body.as_bytes())[..SUM_HEX])
        };
        assert_eq!(Entry::parse(&resum("", "")), Some(e.clone()), "the control");
        assert_eq!(Entry::parse(&resum("until 99", "until x")), None);
        assert_eq!(Entry::parse(&resum("deadline 90", "deadline")), None);
        assert_eq!(Entry::parse(&resum("receipts 50 60", "receipts 50")), None);
        assert_eq!(Entry::parse(&resum("written 70", "written")), None);
        assert_eq!(Entry::parse(&resum("pbem-due 7", "pbem-due 6")), None);
        assert_eq!(Entry::parse(&resum("sha 0123456789abcdef", "sha 0123456789ABCDEF")), None);
        assert_eq!(Entry::parse(&resum("sha 0123456789abcdef", "sha 123456789abcdef")), None);
        // The same change with the checksum left as it was.
        assert_eq!(Entry::parse(&text.replace("until 99", "until 98")), None);
        assert_eq!(Entry::parse(&format!("{text}x\n")), None, "a line after the checksum");
    }

    /// The file is written in place: an index read in the middle of a rewrite (the new text's
    /// first bytes over the old one) or left so by a killed run reads as the old or the new
    /// one or is refused, never misread.
    #[test]
    fn an_index_rewritten_in_place_reads_whole_or_not_at_all() {
        let old = entry();
        let new = Entry { record: 4, record_stamp: (11, 21), until: Some(199), deadline: Some(190), awaited: vec!["union".into()], ..entry() };
        let (a, b) = (old.text(), new.text());
        for at in 1..b.len() {
            // The first `at` bytes of the new text over the old one (the file as long as the longer).
            let mut torn = b.as_bytes()[..at].to_vec();
            torn.extend_from_slice(a.as_bytes().get(at..).unwrap_or_default());
            let got = std::str::from_utf8(&torn).ok().and_then(Entry::parse);
            assert!(got.is_none() || got == Some(new.clone()) || got == Some(old.clone()), "torn at {at}: {got:?}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = GameDir::new(tmp.path());
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        crate::store::write_hint_in_place(&path(&dir), a.as_bytes()).unwrap();
        let first = ino(&path(&dir));
        crate::store::write_hint_in_place(&path(&dir), b.as_bytes()).unwrap();
        assert_eq!(Entry::parse(&read_small(&path(&dir)).unwrap()), Some(new.clone()));
        crate::store::write_hint_in_place(&path(&dir), a.as_bytes()).unwrap();
        assert_eq!(Entry::parse(&read_small(&path(&dir)).unwrap()), Some(old), "a shorter text cuts the file");
        assert_eq!(ino(&path(&dir)), first, "the same file, written over");
    }

    /// The deadline of the index [`game_with_receipts`] makes (after the tests' `now`).
    const LATER: i64 = 1_900_000_000;

    /// A game folder with record 0 and `receipts/000001/`, and an index of it written `age_ns`
    /// after the receipts folder's modification time.
    fn game_with_receipts(age_ns: u128) -> (tempfile::TempDir, GameDir, Entry) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = GameDir::new(tmp.path());
        std::fs::create_dir_all(dir.receipts(1)).unwrap();
        std::fs::create_dir_all(dir.record(0).parent().unwrap()).unwrap();
        std::fs::write(dir.game_file(), "id = \"g1\"\n").unwrap();
        std::fs::write(dir.record(0), "{}").unwrap();
        let receipts_stamp = stamp(&dir.receipts(1));
        let written = receipts_stamp.unwrap().1 + age_ns;
        let e = Entry {
            record: 0,
            step: 1,
            record_stamp: stamp(&dir.record(0)).unwrap(),
            game_stamp: stamp(&dir.game_file()).unwrap(),
            receipts_stamp,
            until: Some(LATER),
            deadline: Some(LATER),
            not_before: 0,
            written,
            ..entry()
        };
        (tmp, dir, e)
    }

    #[test]
    fn a_receipts_folder_stamp_from_the_index_tick_is_not_trusted() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        // The control: a folder quiet for longer than FRESH_NS before the index was written.
        let (_tmp, dir, old) = game_with_receipts(FRESH_NS);
        assert!(still_idle(&dir, old.clone(), now).is_some());
        // Written within FRESH_NS of the folder's last change: a receipt filed in the same clock
        // tick would not change the stamp, so the game is loaded.
        let (_tmp2, dir2, fresh) = game_with_receipts(FRESH_NS - 1);
        assert_eq!(still_idle(&dir2, fresh, now), None);
        // The folder removed, or a receipt filed (a new stamp), or a record after the newest (by
        // its signature, written first).
        std::fs::write(dir.receipts(1).join("union-1.toml"), "").unwrap();
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(7);
        std::fs::File::open(dir.receipts(1)).unwrap().set_modified(t).unwrap();
        assert_eq!(still_idle(&dir, old.clone(), now), None);
        let none = Entry { receipts_stamp: None, ..old.clone() };
        assert_eq!(still_idle(&dir, none, now), None, "a folder the index saw absent is there");
        let (_tmp3, dir3, e3) = game_with_receipts(FRESH_NS);
        std::fs::write(next_signature(&dir3, 0), "").unwrap();
        assert_eq!(still_idle(&dir3, e3, now), None);
    }

    #[test]
    fn an_index_that_cannot_be_bounded_is_not_trusted() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let (_tmp, dir, e) = game_with_receipts(FRESH_NS);
        assert!(still_idle(&dir, e.clone(), now).is_some(), "the control");
        let far = Entry { written: e.written + 3_600_000_000_000, ..e.clone() };
        assert_eq!(still_idle(&dir, far, now), None, "written an hour from now");
        let never = Entry { until: None, deadline: None, ..e.clone() };
        assert_eq!(still_idle(&dir, never, now), None, "an open step without a deadline");
        let early = Entry { until: Some(LATER - 1), ..e.clone() };
        assert_eq!(still_idle(&dir, early, now), None, "due by time before the deadline");
        // Later than the deadline, or never: only the game file's grace or `--nmr wait` says so.
        std::fs::write(dir.game_file(), "").unwrap();
        let later = |until| Entry { until, game_stamp: stamp(&dir.game_file()).unwrap(), ..e.clone() };
        // (Here the game file does not say so: it cannot be read as one.)
        assert_eq!(still_idle(&dir, later(Some(LATER + 3600)), now), None, "no grace hours in the game file");
        assert_eq!(still_idle(&dir, later(None), now), None, "no `--nmr wait` in the game file");
        let over = Entry { over: true, ..e.clone() };
        assert_eq!(still_idle(&dir, over, now), None, "over, yet with a deadline and receipts");
    }

    #[test]
    fn root_lines_round_trip_and_a_damaged_file_is_not_whole() {
        let e = Entry { awaited: vec![], ..entry() };
        let line = root_line("g1", 7, 8, &e);
        assert_eq!(parse_root_line(&line), Some(("g1", 7, 8, e.clone())));
        let over = Entry { over: true, until: None, deadline: None, receipts_stamp: None, ..e.clone() };
        assert_eq!(parse_root_line(&root_line("g1", 7, 8, &over)).map(|l| l.3), Some(over));
        assert_eq!(parse_root_line(&line.replace(" 3 0123456789abcdef 2 ", " x 0123456789abcdef 2 ")), None, "not a number");
        assert_eq!(parse_root_line(&line.replace(" 0123456789abcdef ", " 0123456789abcdeg ")), None, "not a hash");
        assert_eq!(parse_root_line(&format!("{line} 9")), None, "a field too many");
        let two = format!("{ROOT_MAGIC}\n{line}\n{}\nend\n", root_line("g2", 1, 2, &e));
        let whole = |t: &str| whole(&mut t.as_bytes());
        assert!(whole(&two), "{two}");
        let swapped = format!("{ROOT_MAGIC}\n{}\n{line}\nend\n", root_line("g2", 1, 2, &e));
        assert!(!whole(&swapped), "out of order");
        assert!(!whole(&format!("{ROOT_MAGIC}\n{line}\n{line}\nend\n")), "twice");
        assert!(!whole(&two[..two.len() - 4]), "truncated");
        assert!(!whole(&two[..two.len() - 1]), "no newline after end");
        assert!(!whole(&format!("{two}x")), "something after end");
        assert!(!whole(&format!("{ROOT_MAGIC}\n{line}\ng3\nend\n")), "a line without fields");
        assert!(!whole(&two.replace("pbem-due-index 2", "pbem-due-index 1")), "an older format");
        assert!(whole(&format!("{ROOT_MAGIC}\nend\n")), "no games");
    }

    /// A root with game folders `names` (each with `game.toml` and record 0) and the root index
    /// line of each, idle until [`LATER`].
    fn root_of(names: &[&str]) -> (tempfile::TempDir, Vec<String>) {
        let tmp = tempfile::tempdir().unwrap();
        let folder = RootFolder::open(tmp.path()).unwrap();
        let mut at = folder.at();
        let lines = names
            .iter()
            .map(|name| {
                let dir = GameDir::new(tmp.path().join(name));
                std::fs::create_dir_all(dir.record(0).parent().unwrap()).unwrap();
                std::fs::write(dir.game_file(), format!("id = \"{name}\"\n")).unwrap();
                std::fs::write(dir.record(0), "{}").unwrap();
                let (g, r) = (at.probe(name, "game.toml").unwrap().unwrap(), at.probe_numbered(name, "records", 0, ".json").unwrap().unwrap());
                let e = Entry { id: name.to_string(), record: 0, record_stamp: (r.1, r.2), game_stamp: (g.1, g.2), receipts_stamp: None, until: Some(LATER), deadline: Some(LATER), not_before: 0, awaited: vec![], written: 1, ..entry() };
                root_line(name, g.0, r.0, &e)
            })
            .collect();
        (tmp, lines)
    }

    #[test]
    fn a_batch_of_names_peeks_and_writes_as_one_name_at_a_time() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let (tmp, lines) = root_of(&["a", "b", "c", "d", "e", "f"]);
        let file = tmp.path().join(ROOT_INDEX);
        let text = |lines: &[&String]| format!("{ROOT_MAGIC}\n{}end\n", lines.iter().map(|l| format!("{l}\n")).collect::<String>());
        // A line of a folder that is gone ("cc", between two games), none for "d", and "b"'s
        // game file changed since its line.
        let gone = lines[2].replacen("c ", "cc ", 1);
        let original = text(&[&lines[0], &lines[1], &lines[2], &gone, &lines[4], &lines[5]]);
        std::fs::write(tmp.path().join("b/game.toml"), "id = \"b\"\n# edited\n").unwrap();
        let run = |batches: &[&[&str]]| {
            std::fs::write(&file, &original).unwrap();
            let mut index = RootIndex::read(tmp.path());
            let peeks: Vec<bool> = batches.iter().flat_map(|b| index.peek_many(b, now)).map(|p| p.idle.is_some()).collect();
            index.save();
            (peeks, std::fs::read_to_string(&file).unwrap())
        };
        // "a" once more out of order: peeked from its own `DIR/.due` (none) in both.
        let one = run(&[&["a"], &["b"], &["c"], &["a"], &["d"], &["e"], &["f"]]);
        assert_eq!(one, (vec![true, false, true, false, false, true, true], text(&[&lines[0], &lines[2], &lines[4], &lines[5]])));
        assert_eq!(run(&[&["a", "b", "c", "a"], &["d", "e", "f"]]), one);
        assert_eq!(run(&[&["a", "b", "c", "a", "d", "e", "f"]]), one);
    }

    #[test]
    fn the_root_index_is_read_in_step_with_the_games_and_rewritten_from_its_kept_lines() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let (tmp, lines) = root_of(&["a", "b", "c", "d"]);
        let file = tmp.path().join(ROOT_INDEX);
        let text = |lines: &[&String]| format!("{ROOT_MAGIC}\n{}end\n", lines.iter().map(|l| format!("{l}\n")).collect::<String>());
        // A line of a folder that is gone ("0gone", before every game), and none for "c".
        let gone = lines[0].replacen("a ", "0gone ", 1);
        std::fs::write(&file, text(&[&gone, &lines[0], &lines[1], &lines[3]])).unwrap();
        let mut index = RootIndex::read(tmp.path());
        for name in ["a", "b", "c", "d"] {
            let p = index.peek(name, now);
            assert_eq!(p.idle.is_some(), name != "c", "{name}: only the games with a line are idle by it");
        }
        index.save();
        // The gone folder's line is left out, the kept lines are copied byte for byte ("c" has no
        // `DIR/.due` to make its line from).
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text(&[&lines[0], &lines[1], &lines[3]]));
        // Read again for the games with a line, every line holds: nothing is written (the same file).
        let ino = |f: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(f).unwrap());
        let before = ino(&file);
        let mut index = RootIndex::read(tmp.path());
        for name in ["a", "b", "d"] {
            index.peek(name, now);
        }
        index.save();
        assert_eq!(ino(&file), before, "rewritten though nothing changed");
        // A name out of order is peeked from its own index only, and left out of the file.
        let mut index = RootIndex::read(tmp.path());
        for name in ["b", "a", "d"] {
            let p = index.peek(name, now);
            assert_eq!(p.idle.is_some(), name != "a", "{name}");
        }
        index.save();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text(&[&lines[1], &lines[3]]));
    }

    #[test]
    fn numbered_paths_are_written_as_game_dir_names_them() {
        for n in [0, 7, 42, 999_999, 1_000_000, 123_456_789, u64::MAX] {
            let mut buf = b"x/".to_vec();
            push_six_digits(&mut buf, n);
            assert_eq!(buf, format!("x/{n:06}").into_bytes());
        }
        let e = Entry { awaited: vec![], ..entry() };
        let line = root_line("g1", 7, 8, &e);
        assert_eq!(parse_root_line(&format!("{line} ")), None, "a trailing space: an empty field too many");
        assert_eq!(parse_root_line(&line.replacen(' ', "  ", 1)), None, "an empty field");
        assert_eq!(parse_root_line(&line[..line.rfind(' ').unwrap()]), None, "a field too few");
        let big = Entry { written: u128::from(u64::MAX) + 1, ..e.clone() };
        assert_eq!(parse_root_line(&root_line("g1", 7, 8, &big)).map(|l| l.3), Some(big), "a time past 64 bits");
    }

    #[test]
    fn read_small_reads_whole_small_files_only() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        std::fs::write(&f, "12\n").unwrap();
        assert_eq!(read_small(&f).as_deref(), Some("12\n"));
        std::fs::write(&f, "x".repeat(SMALL)).unwrap();
        assert_eq!(read_small(&f), None);
        std::fs::write(&f, "x".repeat(SMALL - 1)).unwrap();
        assert_eq!(read_small(&f).map(|t| t.len()), Some(SMALL - 1));
        assert_eq!(read_small(&tmp.path().join("missing")), None);
        assert_eq!(read_small(tmp.path()), None, "a folder");
    }
}
