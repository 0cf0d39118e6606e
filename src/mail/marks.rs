//! The cron run's mailed marks (`ROOT/.mail/mailed/ID`: the newest record of game ID whose
//! reports were queued) and their snapshot `ROOT/.mail/mailed-index`, so that an idle run reads one
//! file for every game instead of a mark a game.
//!
//! The marks are the truth; the snapshot is a hint (written by temp file and rename, no fsync;
//! deleting it is always safe). It holds each game id's mark as a run found or wrote it, and the
//! stamp of the `mailed/` folder (inode, size, change time) at that moment. Every mark is written
//! by a rename into that folder and removed by an unlink there, each of which moves the folder's
//! change time (which no tool sets back), so while the folder's stamp is the one in the snapshot,
//! no mark was replaced, added or removed since. The change time has the kernel's coarse clock
//! tick (and a file system's own granularity), so a change within the same tick as the stamp
//! would leave it unchanged: a stamp is trusted only when the clock read just before it was taken
//! was [`slack`] or more past the folder's change time (as `due::FRESH_NS` for the due index), so
//! that any change after it has a later change time; a run that wrote marks waits out that slack
//! (at most 100 ms on a file system that keeps sub-second times) before it takes the stamp. A
//! snapshot stamped later than now, damaged, larger than a root of that many games needs, or not a
//! regular file is not read; an id it does not hold has its mark read as before.
//!
//! The marks are written only by a cron run, which holds the root lock from the first read of the
//! snapshot to the last write of it: the snapshot a run writes is what it looked up (in the
//! snapshot or the marks) with the marks it wrote read back. So a mark replaced or removed by
//! hand while a cron run writes marks goes into that run's stamp unseen; that, and a mark edited
//! in place (its file rewritten, which leaves the folder's stamp as it was), is seen once the
//! snapshot is deleted.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::due::{self, FRESH_NS};

/// The snapshot's file name, in `ROOT/.mail/`.
pub const SNAPSHOT: &str = "mailed-index";

const MAGIC: &str = "pbem-mailed-index 2";

/// A mailed mark as read: the newest record of a game whose reports were queued, and that
/// record's [`due::short_sha`] (`None`: a mark of an older version, `N` alone, or one whose hash
/// does not read). Snapshot lines are `ID N SHA` (or `ID N` for such a mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    pub record: u64,
    pub sha: Option<u64>,
}

impl Mark {
    /// The mark of a mark file's text (see [`parse_mark`]).
    fn of_text(text: &str) -> Option<Mark> {
        parse_mark(text).map(|(record, sha)| Mark { record, sha: sha.and_then(due::parse_short_sha) })
    }
}

/// The folder's stamp: inode, size and change time (ns since the Unix epoch).
type Stamp = (u64, u64, u128);

/// The largest snapshot line (an id is at most 64 bytes, a record number at most 20 digits, a
/// hash 16).
const LINE_MAX: u64 = 113;

/// What a stamp whose change time has a fraction of a second must be older than to be trusted
/// (the coarse clock's tick, at most 10 ms with `HZ` ≥ 100, and a sub-second file system's
/// granularity, at most 10 ms, with room to spare); a whole-second change time (a file system
/// keeping whole seconds) needs [`FRESH_NS`].
const FINE_NS: u128 = 100_000_000;

/// How long after the folder's change time `ctime` its stamp must be taken to be trusted.
fn slack(ctime: u128) -> u128 {
    if ctime.is_multiple_of(1_000_000_000) { FRESH_NS } else { FINE_NS }
}

/// Now, ns since the Unix epoch (this machine's clock).
fn wall_ns() -> Option<u128> {
    SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_nanos())
}

/// The mailed marks of one cron run: the `mailed/` folder open, and the snapshot when it holds.
pub struct Marks {
    folder: PathBuf,
    /// `ROOT/.mail/mailed/`, open (`None` when it does not exist yet).
    dir: Option<std::fs::File>,
    /// The snapshot read, when the folder's stamp is the one it was taken with.
    held: Option<Snapshot>,
}

/// A snapshot as read: its text, each line's id (start and end in `text`, in increasing order)
/// and record number.
struct Snapshot {
    stamp: Stamp,
    text: String,
    lines: Vec<(u32, u32, Mark)>,
}

impl Snapshot {
    fn get(&self, id: &str) -> Option<Mark> {
        let at = self.lines.binary_search_by(|&(a, b, _)| self.text[a as usize..b as usize].cmp(id)).ok()?;
        Some(self.lines[at].2)
    }
}

impl Marks {
    /// Opens the marks' folder of the games under `root` and reads the snapshot (of at most
    /// `games` lines: a larger file is not read); it is kept only while the folder's stamp holds.
    pub fn open(root: &Path, games: usize) -> Marks {
        let state = super::intake::state_dir(root);
        let folder = state.join("mailed");
        let dir = open_folder(&folder);
        // Line offsets are kept in 32 bits.
        let max = (games as u64 + 2).saturating_mul(LINE_MAX).min(u64::from(u32::MAX));
        let held = dir.as_ref().and_then(fstat).and_then(|now| read(&state.join(SNAPSHOT), max).filter(|s| s.stamp == now));
        Marks { folder, dir, held }
    }

    /// True when the snapshot holds (for tests and benchmarks).
    pub fn snapshot_held(&self) -> bool {
        self.held.is_some()
    }

    /// The record of game `id` whose reports were queued last: from the snapshot when it holds
    /// and has the id, else from its mark (one `openat` relative to the folder, a small regular
    /// file only). `None` without a mark, or one that is not a record number.
    pub fn get(&self, id: &str) -> Option<Mark> {
        match self.held.as_ref().and_then(|s| s.get(id)) {
            Some(n) => Some(n),
            None => self.read_mark(id),
        }
    }

    /// The mark of game `id` as it is on disk.
    pub fn read_mark(&self, id: &str) -> Option<Mark> {
        due::read_small_at(self.dir.as_ref()?, id).and_then(|t| Mark::of_text(&t))
    }

    /// The snapshot's record of `id` (`None` when it does not hold or has no line for it).
    pub fn held(&self, id: &str) -> Option<Mark> {
        self.held.as_ref().and_then(|s| s.get(id))
    }

    /// Writes the snapshot of `marks` (each game id and its mark, as this run read or wrote them;
    /// in any order, an id given twice kept once) with the folder's stamp, unless the snapshot
    /// read already says the same. Call it with the root lock held, after the run's last mark
    /// was written; `wrote`: this run wrote a mark (the folder changed just now: the stamp is
    /// taken once the slack after it has passed, so that the next run trusts it). Best effort:
    /// a snapshot that cannot be written is a slower next run.
    pub fn save(self, mut marks: Vec<(&str, Mark)>, wrote: bool) {
        let Some(dir) = open_folder(&self.folder) else { return };
        marks.sort_unstable();
        marks.dedup_by(|a, b| a.0 == b.0);
        let Some((stamp, stamped)) = settled(&dir, wrote) else { return };
        if let Some(old) = &self.held
            && old.stamp == stamp
            && old.lines.len() == marks.len()
            && old.lines.iter().zip(&marks).all(|(&(a, b, n), &(id, m))| &old.text[a as usize..b as usize] == id && n == m)
        {
            return;
        }
        let mut text = format!("{MAGIC}\nfolder {} {} {} {stamped}\n", stamp.0, stamp.1, stamp.2);
        for (id, m) in marks.iter().filter(|(id, _)| plain(id)) {
            match m.sha {
                Some(sha) => text.push_str(&format!("{id} {} {sha:016x}\n", m.record)),
                None => text.push_str(&format!("{id} {}\n", m.record)),
            }
        }
        text.push_str("end\n");
        let path = self.folder.with_file_name(SNAPSHOT);
        // A run killed while writing it left its temp file beside it (`store::write_unsynced`).
        if let Some(state) = path.parent() {
            let _ = crate::store::remove_stale_temps(state);
        }
        let _ = crate::store::write_unsynced(&path, text.as_bytes());
    }
}

/// The folder's stamp once it is [`slack`] old, and the time read just before it was taken (what
/// the snapshot says it was taken at: a change after the stamp then has a later change time): at
/// once when it is, after a wait of at most [`FINE_NS`] when the run wrote a mark just now on a
/// file system with sub-second times (taken again after the wait: it must not have changed);
/// else `None` (the snapshot is not written).
fn settled(dir: &std::fs::File, wrote: bool) -> Option<(Stamp, u128)> {
    let (at, stamp) = (wall_ns()?, fstat(dir)?);
    if stamp.2.saturating_add(slack(stamp.2)) <= at {
        return Some((stamp, at));
    }
    if !wrote || slack(stamp.2) != FINE_NS {
        return None;
    }
    let wait = (stamp.2 + FINE_NS).saturating_sub(at);
    std::thread::sleep(Duration::from_nanos(u64::try_from(wait).ok()?.min(FINE_NS as u64)));
    let (at, again) = (wall_ns()?, fstat(dir)?);
    (again == stamp && stamp.2.saturating_add(FINE_NS) <= at).then_some((stamp, at))
}

/// The folder at `path`, open for its stamp and to read marks relative to it; `None` if it is not
/// a folder (a FIFO there is not waited on).
fn open_folder(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK).open(path).ok()
}

/// The stamp of an open folder (one `fstat`, through the standard library).
fn fstat(f: &std::fs::File) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata().ok()?;
    let (secs, nsec) = (u128::try_from(m.ctime()).ok()?, u128::try_from(m.ctime_nsec()).ok()?);
    Some((m.ino(), m.size(), secs * 1_000_000_000 + nsec))
}

/// A game id a snapshot line can hold: not empty, no whitespace or control characters.
fn plain(id: &str) -> bool {
    !id.is_empty() && id.len() as u64 + 22 <= LINE_MAX && id.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// The snapshot at `path` when it is a regular file of at most `max` bytes, whole (header, ids in
/// increasing order, `end` and nothing after it) and stamped no later than now (with
/// [`FRESH_NS`] of slack) and at least [`slack`] after the folder's change time it names.
fn read(path: &Path, max: u64) -> Option<Snapshot> {
    let text = crate::store::read_hint(path, max)?;
    let rest = text.strip_prefix(MAGIC)?.strip_prefix("\nfolder ")?;
    let (head, body) = rest.split_once('\n')?;
    let mut f = head.split(' ');
    let mut num = || f.next()?.parse::<u128>().ok();
    let (ino, size, ctime, stamped) = (num()?, num()?, num()?, num()?);
    if f.next().is_some() || stamped > wall_ns()?.saturating_add(FRESH_NS) || ctime.saturating_add(slack(ctime)) > stamped {
        return None;
    }
    let stamp = (u64::try_from(ino).ok()?, u64::try_from(size).ok()?, ctime);
    let base = (text.len() - body.len()) as u32;
    let body = body.strip_suffix("end\n")?;
    let mut lines: Vec<(u32, u32, Mark)> = Vec::new();
    let mut at = base;
    for line in body.split_terminator('\n') {
        let (id, mark) = line.split_once(' ')?;
        let (n, sha) = match mark.split_once(' ') {
            Some((n, sha)) => (n, Some(due::parse_short_sha(sha)?)),
            None => (mark, None),
        };
        let n = (!n.starts_with('+')).then(|| n.parse::<u64>().ok()).flatten()?;
        if !plain(id) || lines.last().is_some_and(|&(a, b, _)| text[a as usize..b as usize] >= *id) {
            return None;
        }
        lines.push((at, at + id.len() as u32, Mark { record: n, sha }));
        at += line.len() as u32 + 1;
    }
    (body.is_empty() || body.ends_with('\n')).then_some(Snapshot { stamp, text, lines })
}

/// A mailed mark's text `N SHA` (the record whose reports were queued last, and the start of its
/// SHA-256; a mark of an older version holds `N` alone): `None` unless `N` is a number.
pub(super) fn parse_mark(text: &str) -> Option<(u64, Option<&str>)> {
    let mut words = text.split_ascii_whitespace();
    let n = words.next()?.parse().ok()?;
    Some((n, words.next()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mark of the older form (no hash).
    fn m(record: u64) -> Mark {
        Mark { record, sha: None }
    }

    /// `g2`'s mark: record 5 and a hash.
    fn g2() -> Mark {
        Mark { record: 5, sha: Some(0xab) }
    }

    /// A root with a `mailed/` folder holding marks `g1` = 3 (the older form, no hash) and `g2` =
    /// 5 with its hash.
    fn root() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let mailed = tmp.path().join(".mail").join("mailed");
        std::fs::create_dir_all(&mailed).unwrap();
        std::fs::write(mailed.join("g1"), "3\n").unwrap();
        std::fs::write(mailed.join("g2"), "5 00000000000000ab\n").unwrap();
        let root = tmp.path().to_path_buf();
        (tmp, root)
    }

    #[test]
    fn a_snapshot_holds_until_a_mark_is_replaced_added_or_removed() {
        let (_tmp, root) = root();
        let marks = Marks::open(&root, 10);
        assert!(!marks.snapshot_held());
        assert_eq!((marks.get("g1"), marks.get("g2"), marks.get("g3")), (Some(m(3)), Some(g2()), None));
        marks.save(vec![("g2", g2()), ("g1", m(3)), ("g1", m(3))], true);
        let snapshot = root.join(".mail").join(SNAPSHOT);
        let text = std::fs::read_to_string(&snapshot).unwrap();
        assert!(text.starts_with("pbem-mailed-index 2\nfolder ") && text.ends_with("\ng1 3\ng2 5 00000000000000ab\nend\n"), "{text}");
        // Held: the snapshot answers (a mark edited in place is not seen, as documented).
        std::fs::write(root.join(".mail/mailed/g1"), "0\n").unwrap();
        let marks = Marks::open(&root, 10);
        assert!(marks.snapshot_held());
        assert_eq!(marks.get("g1"), Some(m(3)));
        // Saved again with the same marks: not rewritten.
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = ino(&snapshot);
        marks.save(vec![("g1", m(3)), ("g2", g2())], false);
        assert_eq!(ino(&snapshot), before);
        // A mark removed: the folder changed, the marks are read.
        std::fs::remove_file(root.join(".mail/mailed/g1")).unwrap();
        let marks = Marks::open(&root, 10);
        assert!(!marks.snapshot_held());
        assert_eq!(marks.get("g1"), None);
        // More than a root of that many games needs: not read.
        let ids: Vec<String> = (0..20).map(|i| format!("a-game-with-a-long-id-{i:02}")).collect();
        marks.save(ids.iter().map(|id| (id.as_str(), m(1))).collect(), true);
        assert!(Marks::open(&root, 20).snapshot_held());
        assert!(!Marks::open(&root, 2).snapshot_held());
        // The temp file of a run killed while writing it is removed by the next write.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = root.join(".mail").join(format!(".{SNAPSHOT}.{dead}.0.tmp"));
        std::fs::write(&left, "pbem-mailed-index 1\n").unwrap();
        Marks::open(&root, 20).save(vec![("g1", m(3))], false);
        assert!(!left.exists());
    }

    #[test]
    fn a_fifo_in_place_of_the_marks_folder_is_not_waited_on() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".mail")).unwrap();
        let folder = tmp.path().join(".mail").join("mailed");
        assert!(std::process::Command::new("mkfifo").arg(&folder).status().unwrap().success());
        let marks = Marks::open(tmp.path(), 10);
        assert_eq!(marks.get("g1"), None);
        marks.save(vec![("g1", m(1))], true);
        assert!(!tmp.path().join(".mail").join(SNAPSHOT).exists());
    }

    #[test]
    fn a_damaged_or_unbounded_snapshot_is_not_read() {
        let (_tmp, root) = root();
        Marks::open(&root, 10).save(vec![("g1", m(3)), ("g2", g2())], true);
        let path = root.join(".mail").join(SNAPSHOT);
        let good = std::fs::read_to_string(&path).unwrap();
        assert!(read(&path, 1000).is_some());
        let head = good.lines().nth(1).unwrap().to_string();
        let f: Vec<&str> = head.split(' ').collect();
        let future = format!("{} {} {} {}", f[0], f[1], f[2], f[3]) + &format!(" {}", wall_ns().unwrap() + 3_600_000_000_000);
        let fresh = format!("{} {} {} {} {}", f[0], f[1], f[2], f[3], f[3].parse::<u128>().unwrap() + FINE_NS - 1);
        for bad in [
            good.replace("g1 3\ng2 5 00000000000000ab\n", "g2 5 00000000000000ab\ng1 3\n"),
            good.replace("g1 3\n", "g1 x\n"),
            good.replace("g1 3\n", "g1 +3\n"),
            good.replace("g1 3\n", "g1  3\n"),
            good.replace("g2 5 00000000000000ab\n", "g1 5 00000000000000ab\n"),
            good.replace("00000000000000ab", "00000000000000AB"),
            good.replace("00000000000000ab", "000000000000000ab"),
            good.replace("5 00000000000000ab", "5 00000000000000ab x"),
            good.replace(&head, &future),
            good.replace(&head, &fresh),
            good.replace("pbem-mailed-index 2", "pbem-mailed-index 1"),
            good[..good.len() - 1].to_string(),
            format!("{good}x"),
        ] {
            std::fs::write(&path, &bad).unwrap();
            assert!(read(&path, 1000).is_none(), "{bad}");
        }
        std::fs::write(&path, &good).unwrap();
        assert!(read(&path, good.len() as u64 - 1).is_none(), "over the size");
        for cut in 0..good.len() - 1 {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(read(&path, 1000).is_none(), "cut at {cut}");
        }
    }
}
