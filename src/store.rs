//! The game directory on disk: paths, atomic writes and the per-game lock.
//!
//! Layout (ARCHITECTURE.md "Game directory"):
//! ```text
//! DIR/game.toml                         game file: id, rules, options, seats, deadlines, host key
//! DIR/scenario.toml                     the scenario the game was created from
//! DIR/records/NNNNNN.json (+ .sig)      hash-chained public records, signed by the host
//! DIR/states/NNNNNN.json                state after record N
//! DIR/receipts/NNNNNN/ROLE-K.toml(+.sig) receipts for step N, signed by the host (public)
//! DIR/reports/NNNNNN/ROLE.txt           each player's report after record N
//! DIR/host/host_key                     host's private key (host only)
//! DIR/host/seeds/NNNNNN.hex             host seed of step N (host only until revealed)
//! DIR/host/sealed/NNNNNN/ROLE-K.txt(+.sig) orders as received (host only until resolved)
//! DIR/host/withheld/NNNNNN-ROLE.json     orders resolved but still secret (host only until revealed)
//! ```
//! Writes go to a temp file in the same folder and are renamed into place, so a crash never
//! leaves a half-written file; the record is written last and is the commit point of a step.
//! `host/` is mode 0700 and everything written in it 0600 (folders 0700).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Paths inside one game directory.
#[derive(Debug, Clone)]
pub struct GameDir {
    /// The game directory itself.
    pub root: PathBuf,
}

fn n6(n: u64) -> String {
    format!("{n:06}")
}

impl GameDir {
    /// Wraps a directory path (nothing is read).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        GameDir { root: root.into() }
    }
    /// `DIR/game.toml`.
    pub fn game_file(&self) -> PathBuf {
        self.root.join("game.toml")
    }
    /// `DIR/scenario.toml`.
    pub fn scenario_file(&self) -> PathBuf {
        self.root.join("scenario.toml")
    }
    /// `DIR/records/`.
    pub fn records(&self) -> PathBuf {
        self.root.join("records")
    }
    /// `DIR/records/NNNNNN.json`.
    pub fn record(&self, n: u64) -> PathBuf {
        self.records().join(format!("{}.json", n6(n)))
    }
    /// `DIR/states/`.
    pub fn states(&self) -> PathBuf {
        self.root.join("states")
    }
    /// `DIR/states/NNNNNN.json`.
    pub fn state(&self, n: u64) -> PathBuf {
        self.states().join(format!("{}.json", n6(n)))
    }
    /// `DIR/receipts/NNNNNN/`.
    pub fn receipts(&self, step: u64) -> PathBuf {
        self.root.join("receipts").join(n6(step))
    }
    /// `DIR/reports/NNNNNN/`: the reports after record N.
    pub fn reports(&self, n: u64) -> PathBuf {
        self.root.join("reports").join(n6(n))
    }
    /// `DIR/reports/NNNNNN/ROLE.txt`.
    pub fn report(&self, n: u64, role: &str) -> PathBuf {
        self.reports(n).join(format!("{role}.txt"))
    }
    /// `DIR/host/host_key`.
    pub fn host_key(&self) -> PathBuf {
        self.root.join("host").join("host_key")
    }
    /// `DIR/host/trail`: what a new step needs of the records before it, as of one record (a
    /// hint `pipeline` keeps: trusted only for the record whose bytes' hash it names, rebuilt from
    /// the records on any doubt).
    pub fn trail(&self) -> PathBuf {
        self.root.join("host").join("trail")
    }
    /// `DIR/host/state_key.hex`: the game's secret state key (SPEC.md "State commitment"), host
    /// only until the last record reveals it.
    pub fn state_key(&self) -> PathBuf {
        self.root.join("host").join("state_key.hex")
    }
    /// `DIR/host/`: the host's secrets (mode 0700).
    pub fn host(&self) -> PathBuf {
        self.root.join("host")
    }
    /// `DIR/host/seeds/`.
    pub fn host_seeds(&self) -> PathBuf {
        self.host().join("seeds")
    }
    /// `DIR/host/seeds/NNNNNN.hex`: the host seed of step N (host only until revealed).
    pub fn host_seed(&self, step: u64) -> PathBuf {
        self.host_seeds().join(format!("{}.hex", n6(step)))
    }
    /// `DIR/host/sealed/NNNNNN/`.
    pub fn sealed(&self, step: u64) -> PathBuf {
        self.root.join("host").join("sealed").join(n6(step))
    }
    /// `DIR/host/withheld/NNNNNN-ROLE.json`: orders withheld from record N's public text until the
    /// game says they may be published.
    pub fn withheld(&self, step: u64, role: &str) -> PathBuf {
        self.withheld_folder().join(format!("{}-{role}.json", n6(step)))
    }
    /// `DIR/host/withheld/`.
    pub fn withheld_folder(&self) -> PathBuf {
        self.host().join("withheld")
    }
    /// `DIR/.lock`.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// The numbers of the record files present in `DIR/records/` (`NNNNNN.json` as [`GameDir::record`]
    /// names them), ascending, from one listing of the folder (temp files and signatures are skipped).
    pub fn record_numbers(&self) -> Result<Vec<u64>> {
        Ok(self.record_listing()?.0)
    }

    /// The numbers of the records in `records/`, sorted, and of their signatures
    /// (`NNNNNN.json.sig`), sorted: one listing of the folder.
    fn record_listing(&self) -> Result<(Vec<u64>, Vec<u64>)> {
        let names = list(&self.records())?;
        let numbers = |suffix: &str| {
            let mut ns: Vec<u64> = names
                .iter()
                .filter_map(|name| name.strip_suffix(suffix))
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                .filter_map(|n| n.parse().ok().filter(|&k: &u64| n6(k) == n))
                .collect();
            ns.sort_unstable();
            ns
        };
        Ok((numbers(".json"), numbers(".json.sig")))
    }

    /// The index of the newest record (records are numbered from 0 with no gaps), or `None` if the
    /// directory holds no game.
    ///
    /// Errors: [`Error::Input`] naming the first missing record when a later one exists (a record
    /// deleted or lost): the game stops there, so that no step is written over the records after
    /// the gap; restoring the record (or the audit, which names it too) is the way on. Likewise
    /// for a record without its host signature `NNNNNN.json.sig` (written before the record,
    /// which is the step's commit point, so never missing but by loss or deletion): a record
    /// signed after it would chain to one no audit can check.
    pub fn last_record(&self) -> Result<Option<u64>> {
        let (ns, signed) = self.record_listing()?;
        if let Some(missing) = first_gap(&ns) {
            return Err(Error::input(
                self.record(missing),
                format!("missing (deleted record?): later records exist up to {}; restore it before the game goes on", n6(ns[ns.len() - 1])),
            ));
        }
        if let Some(&n) = ns.iter().find(|n| signed.binary_search(n).is_err()) {
            let mut sig = self.record(n).into_os_string();
            sig.push(".sig");
            return Err(Error::input(PathBuf::from(sig), "missing (deleted signature?): every record is signed by the host; restore it before the game goes on"));
        }
        Ok(ns.last().copied())
    }

    /// The newest record of the unbroken run from record 0, ignoring records after a gap (the
    /// audit names the gap itself, as its own finding), or `None` if record 0 is missing.
    pub fn last_contiguous_record(&self) -> Result<Option<u64>> {
        let ns = self.record_numbers()?;
        Ok(match first_gap(&ns) {
            Some(0) => None,
            Some(missing) => Some(missing - 1),
            None => ns.last().copied(),
        })
    }

    /// Takes the game's exclusive lock without waiting for another run; [`Error::Locked`] if one
    /// holds it. The lock is released when the returned file is dropped (or the process dies).
    /// A lock found held is tried again a few times over ~50 ms: a child process this process
    /// starts shares its open files from fork to exec, and so keeps a lock this process has just
    /// released for that moment.
    pub fn lock(&self) -> Result<File> {
        let path = self.lock_file();
        for _ in 0..5 {
            let f = self.open_lock_file(&path)?;
            match f.try_lock() {
                Ok(()) => return Ok(f),
                Err(fs::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(10)),
                Err(fs::TryLockError::Error(e)) => return Err(io(&path, e)),
            }
        }
        Err(Error::Locked(self.root.clone()))
    }

    /// The game's lock file `path` ([`open_lock`]), made only in a game's folder: a path that is
    /// no folder, or a folder without `game.toml`, is named as such and gets no stray `.lock`
    /// (tester14 T14b-7). The file is there after a game's first run, so this costs no more then.
    fn open_lock_file(&self, path: &Path) -> Result<File> {
        use std::os::unix::fs::OpenOptionsExt;
        match File::options().write(true).custom_flags(libc::O_NONBLOCK).open(path) {
            Ok(f) => return only_regular(f, path, ": not a lock file"),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {}
            Err(e) => return Err(io(path, e)),
        }
        if !self.root.is_dir() {
            let what = if self.root.exists() { "not a game directory (a file)" } else { "no such game directory" };
            return Err(Error::input(&self.root, what));
        }
        if !self.game_file().exists() {
            return Err(Error::input(&self.root, "not a pbem game directory (no game.toml)"));
        }
        open_lock(path)
    }
}

/// Whether a folder named `name` under a root of games may hold a game: not a hidden one
/// (`.mail`), nor a file system's `lost+found` (root's alone where ROOT is a mount point: an
/// unreadable folder that may be any game made every order for an unknown game wait, and every
/// run fail on its lock: tester t25f D2).
pub fn may_hold_game(name: &str) -> bool {
    !name.starts_with('.') && name != "lost+found"
}

/// The first number missing from ascending record numbers `ns` that has a later one present.
fn first_gap(ns: &[u64]) -> Option<u64> {
    ns.iter().enumerate().find(|&(i, &n)| n != i as u64).map(|(i, _)| i as u64)
}

/// Wraps an I/O error with its path.
pub fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source }
}

/// Reads a whole file as bytes (a regular file only: see [`open_regular`]).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_regular(path).map_err(|e| io(path, e))
}

/// Opens `path` for reading if it is a regular file (a symbolic link to one is followed). A FIFO
/// is opened without waiting for a writer and then refused, as are a device (a link to
/// `/dev/zero`, which would be read without end) and a folder: no file pbem reads can hold a run
/// or fill its memory. Errors: the open's (`NotFound` for a missing file), or `InvalidInput`
/// for a file of another kind.
pub fn open_regular(path: &Path) -> std::io::Result<fs::File> {
    open_regular_sized(path).map(|(f, _)| f)
}

/// [`open_regular`] and the file's length in bytes, from the one `fstat` that checked its kind.
pub fn open_regular_sized(path: &Path) -> std::io::Result<(fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let m = f.metadata()?;
    if m.file_type().is_file() {
        return Ok((f, m.len()));
    }
    Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file (a FIFO, a device or a folder); not read"))
}

/// The bytes of `path` if it is a regular file itself, not a symbolic link (never followed:
/// `O_NOFOLLOW`) nor a FIFO, device or folder: for files handed out as public, where a link
/// planted in a public folder could name a sealed order (tester20 T20b-1). Errors name the file.
pub fn read_no_link(path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let link = || Error::input(path, "a symbolic link, not a file pbem wrote: not read (remove it; a public copy holds only files)");
    let mut f = match fs::OpenOptions::new().read(true).custom_flags(HINT_FLAGS).open(path) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(link()),
        other => other.map_err(|e| io(path, e))?,
    };
    let m = f.metadata().map_err(|e| io(path, e))?;
    if !m.file_type().is_file() {
        return Err(Error::input(path, "not a regular file (a FIFO, a device or a folder); not read"));
    }
    read_sized(&mut f, m.len()).map_err(|e| io(path, e))
}

/// `f`, opened at `path` to write, if it is a regular file; else an [`Error::Input`] naming the
/// file, saying it is `not` one (`"not written"`, `"not a lock file"`).
fn only_regular(f: File, path: &Path, not: &str) -> Result<File> {
    match f.metadata() {
        Ok(m) if m.file_type().is_file() => Ok(f),
        Ok(_) => Err(Error::input(path, format!("not a regular file (a FIFO, a device or a folder){not}"))),
        Err(e) => Err(io(path, e)),
    }
}

/// Opens (creating it if missing) the lock file `path` to take a lock on, if it is a regular
/// file: a FIFO there is neither waited on (its open would wait for a reader: tester9 D7) nor
/// locked. Errors: the open's, or a file of another kind, naming the file.
pub fn open_lock(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = File::options().create(true).truncate(false).write(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| io(path, e))?;
    only_regular(f, path, ": not a lock file")
}

/// The bytes of the regular file `path` ([`open_regular`]); errors as the standard library's,
/// for callers that tell a missing file from others.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let (mut f, len) = open_regular_sized(path)?;
    read_sized(&mut f, len)
}

/// The rest of `f`, whose length the caller's `fstat` gave as `len`: one `read` of it all and
/// one that finds the end, as `std::fs::read`. Not `File::read_to_end`, which asks the file for
/// its size and position again (a `statx` and an `lseek` a file, 5 of each a due step), nor
/// `Read::read_to_end` without that size (which reads 8 KiB at a time at first).
fn read_sized(f: &mut fs::File, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    // One byte more than the file holds: a read that fills the buffer means it grew meanwhile.
    let size = usize::try_from(len).ok().and_then(|l| l.checked_add(1));
    let mut out = Vec::new();
    size.and_then(|s| out.try_reserve_exact(s).ok()).ok_or(std::io::ErrorKind::OutOfMemory)?;
    out.resize(out.capacity(), 0);
    let mut n = 0;
    loop {
        if n == out.len() {
            out.resize(out.len() * 2, 0);
        }
        match f.read(&mut out[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(n);
    Ok(out)
}

/// The flags every hint file is opened with ([`open_hint`], `due::read_small`): a symbolic link
/// is not followed, and a FIFO is opened without waiting for a writer.
pub const HINT_FLAGS: i32 = libc::O_NONBLOCK | libc::O_NOFOLLOW;

/// Opens a file pbem keeps only as a hint (an index or cache it can do without) for reading, if it
/// is a regular file: never a FIFO (whose open or read would wait for a writer), a device, or a
/// symbolic link (which could name `/dev/zero`). `None` otherwise, or if it cannot be opened; the
/// caller then does without it.
pub fn open_hint(path: &Path) -> Option<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new().read(true).custom_flags(HINT_FLAGS).open(path).ok()?;
    f.metadata().ok()?.file_type().is_file().then_some(f)
}

/// The text of a hint file ([`open_hint`]) of at most `max` bytes; `None` if it is not a regular
/// file, is larger, cannot be read or is not UTF-8.
pub fn read_hint(path: &Path, max: u64) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    open_hint(path)?.take(max + 1).read_to_string(&mut text).ok()?;
    (text.len() as u64 <= max).then_some(text)
}

/// Writes the hint file `path` (an index or cache pbem can do without, whose readers check a
/// checksum it holds) in place, without sync: the new bytes over the old ones from the start,
/// then the file cut to their length. Once the file exists no inode is made and no block freed,
/// which a replacement by rename does each time (the old file's blocks freed: on a file system
/// mounted with `discard`, a wait for the disk each). A reader meanwhile, or a run killed in
/// the middle, sees a mix of old and new bytes, which its checksum refuses (the hint is then
/// rebuilt). A file that is not a plain regular file (a symbolic link, a FIFO, a device, a file
/// with other hard links, which would change too) is replaced by temp file and rename
/// ([`write_unsynced`]); modes as [`write_atomic`]. Errors: the write's, naming the file.
pub fn write_hint_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
    let mode = if host_folder(path).is_some() { 0o600 } else { 0o666 };
    let opened = fs::OpenOptions::new().write(true).create(true).mode(mode).custom_flags(HINT_FLAGS).open(path);
    let Some((f, len)) = opened.ok().and_then(|f| {
        let m = f.metadata().ok()?;
        (m.file_type().is_file() && m.nlink() == 1).then_some((f, m.len()))
    }) else {
        return write_unsynced(path, bytes);
    };
    f.write_all_at(bytes, 0).map_err(|e| io(path, e))?;
    if len > bytes.len() as u64 {
        f.set_len(bytes.len() as u64).map_err(|e| io(path, e))?;
    }
    Ok(())
}

/// Reads a whole file of at most `max` bytes, never holding more than `max` + 1 bytes of it: a
/// larger file (by its length, or by what is read, should it grow meanwhile) is an
/// [`Error::Input`] naming the file, its size and the limit (`what` says which kind of file, e.g.
/// "an order file").
pub fn read_limited(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let too_large = |size: u64| {
        Error::input(path, format!("{size} bytes is larger than {what} may be ({max} bytes); not read"))
    };
    let (f, len) = open_regular_sized(path).map_err(|e| io(path, e))?;
    if len > max {
        return Err(too_large(len));
    }
    let mut out = Vec::with_capacity(len as usize);
    f.take(max + 1).read_to_end(&mut out).map_err(|e| io(path, e))?;
    if out.len() as u64 > max {
        return Err(too_large(out.len() as u64));
    }
    Ok(out)
}

/// [`read_limited`], as UTF-8 text.
pub fn read_text_limited(path: &Path, max: u64, what: &str) -> Result<String> {
    let b = read_limited(path, max, what)?;
    String::from_utf8(b).map_err(|e| Error::input(path, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

/// [`read_no_link`] as UTF-8 text: a public file of a game (a receipt) that pbem reads only as it
/// wrote it, never through a symbolic link planted in its place (tester21 T21a-5: a link to a
/// sealed order among the receipts was read through by status, submit, audit and adjudicate).
pub fn read_text_no_link(path: &Path) -> Result<String> {
    let b = read_no_link(path)?;
    String::from_utf8(b).map_err(|e| Error::input(path, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

/// Reads a whole file as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    let b = read(path)?;
    String::from_utf8(b).map_err(|e| Error::input(path, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

/// Writes `bytes` to `path` atomically (temp file in the same folder, fsync, rename), creating
/// parent folders as needed. A file in a game's `host/` folder (see [`host_folder`]) is the
/// host's alone: written with mode 0600, and the folders made for it 0700.
///
/// While a [`Batch`] is open in this process, the file is written the same way but without its
/// fsyncs, and the batch's sync ([`sync_batch`]) makes it durable.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_as(path, bytes, None, None)
}

/// [`write_atomic`] for a file meant for everyone (a page of `pbem publish`'s web site): mode
/// 0644 whatever the umask (a host's `umask 077` would leave a site no web server can read), set
/// on the temp file before its rename, and the folders made for it 0755.
pub fn write_atomic_public(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        make_public_dirs(parent)?;
    }
    write_atomic_as(path, bytes, Some(0o644), None)
}

/// Gives a file [`write_atomic_public`] wrote mode 0644 if it lacks it (one written by a
/// version that left the mode to the umask).
pub fn make_public(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::metadata(path).map_err(|e| io(path, e))?;
    if meta.permissions().mode() & 0o777 == 0o644 {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).map_err(|e| io(path, e))
}

/// Makes `dir` and its missing parents, each folder it makes mode 0755 whatever the umask.
fn make_public_dirs(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        make_public_dirs(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).map_err(|e| io(dir, e)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(dir, e)),
    }
}

/// Writes a file the user named (`pbem form -o`, `pbem sign`'s order file and signature, `pbem
/// public --out`, `pbem report --picture`) as a shell's `>` would, but whole or not at all: a symbolic link is followed
/// and its target written atomically, keeping the target's mode (replacing the link by a file
/// took the link's mode 0777: tester T24b-1); a device or FIFO that exists (`/dev/stdout`,
/// `/dev/null`) is written through, never replaced; a regular file or a new name is written with
/// [`write_atomic`]; `-` is standard output. Never used inside a game's folder, where a link is
/// replaced, not followed. Returns whether a file was written (not a stream: the caller then
/// prints no "wrote" line, which would land in the stream). Errors: a folder at `path`, a link
/// to a link to nothing, or the write's, naming the file.
pub fn write_user_file(path: &Path, bytes: &[u8]) -> Result<bool> {
    if path == Path::new("-") {
        crate::console::out_now(bytes)?;
        return Ok(false);
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return write_atomic(path, bytes).map(|()| true),
        Err(e) => return Err(io(path, e)),
    };
    let kind = meta.file_type();
    // A link to a pipe or a device (`/dev/stdout` → `/proc/self/fd/1` → `pipe:[…]`, which has
    // no path to resolve to): opened through the link, as `>` does.
    if kind.is_symlink() && fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        File::options().write(true).open(path).and_then(|mut f| f.write_all(bytes)).map_err(|e| io(path, e))?;
        return Ok(false);
    }
    if kind.is_symlink() {
        let target = match fs::canonicalize(path) {
            Ok(t) => t,
            // A link to a name not made yet: made there, as `>` does.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let to = fs::read_link(path).map_err(|e| io(path, e))?;
                path.parent().unwrap_or(Path::new("")).join(to)
            }
            Err(e) => return Err(io(path, e)),
        };
        if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io(path, std::io::Error::other("a link to a link to nothing: not written")));
        }
        return write_user_file(&target, bytes);
    }
    if kind.is_dir() {
        return Err(io(path, std::io::Error::other("is a folder, not a file")));
    }
    if !kind.is_file() {
        File::options().write(true).open(path).and_then(|mut f| f.write_all(bytes)).map_err(|e| io(path, e))?;
        return Ok(false);
    }
    write_atomic(path, bytes).map(|()| true)
}

/// [`write_atomic`], the file given `mode` (when `Some`) before it is renamed into place.
fn write_atomic_as(path: &Path, bytes: &[u8], mode: Option<u32>, within: Option<&Path>) -> Result<()> {
    if batch::defer(path) {
        return write_unsynced_as(path, bytes, mode, within);
    }
    let private = host_folder(path).is_some();
    if let Some(parent) = path.parent() {
        match within {
            Some(top) if !parent.is_dir() => make_dirs_below(top, parent, private)?,
            Some(_) => {}
            None => make_dirs(parent, private)?,
        }
    }
    let mut options = atomic_write_file::AtomicWriteFile::options();
    #[cfg(unix)]
    if private {
        use atomic_write_file::unix::OpenOptionsExt as _;
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.preserve_mode(false);
    }
    let mut f = options.open(path).map_err(|e| io(path, e))?;
    if let Some(m) = mode {
        use std::os::unix::fs::PermissionsExt;
        f.as_file().set_permissions(fs::Permissions::from_mode(m)).map_err(|e| io(path, e))?;
    }
    f.write_all(bytes).map_err(|e| io(path, e))?;
    f.commit().map_err(|e| io(path, e))?;
    Ok(())
}

/// Writes several files as one durable commit: each goes to a temp file in its folder and is
/// renamed into place, in order (a killed run leaves each one whole or absent, never a later one
/// without the earlier ones), then all of them are made durable together by one sync
/// ([`sync_together`]) instead of two fsyncs each. A power loss before that sync may damage any
/// of them, which is harmless: nothing names them until the commit point, and a step or order
/// without its commit point is redone or was never accepted. Modes as [`write_atomic`]. The caller then
/// writes its commit point (a record, a receipt) with [`write_atomic`]: anything the commit point
/// names is on disk before it.
pub fn write_all_durable(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    for (path, bytes) in files {
        write_unsynced(path, bytes)?;
    }
    make_durable(&files.iter().map(|(p, _)| p.as_path()).collect::<Vec<_>>())
}

/// Makes files already written by [`write_unsynced`] durable: with a batch open, together with
/// the batch's pending files (a barrier), else by [`sync_together`].
fn make_durable(paths: &[&Path]) -> Result<()> {
    if batch::is_open() {
        return batch::sync_pending(paths);
    }
    sync_together(paths.iter().copied())
}

/// A commit point (a record, a receipt) that names files written before it: written with
/// [`write_atomic`] once they are durable ([`Staged::commit`], [`Group::flush`]).
pub struct CommitPoint {
    /// Where the commit point goes.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Held until the point is written, then dropped (the game's lock: no other run may see the
    /// game between its files and its commit point).
    pub hold: Option<File>,
    /// Run once the point is written (e.g. the due index, which stamps the new record).
    pub then: Option<Box<dyn FnOnce() + Send>>,
    /// The game folder the commit belongs to (`None`: the point alone): once one of its commits
    /// is left out of a group's flush, so is every later one of that game in the run
    /// ([`Group::left_out`]).
    pub game: Option<PathBuf>,
}

impl CommitPoint {
    /// A commit point with nothing held and nothing to run after it.
    pub fn new(path: PathBuf, bytes: Vec<u8>) -> CommitPoint {
        CommitPoint { path, bytes, hold: None, then: None, game: None }
    }

    /// The same, belonging to the game in folder `dir` ([`CommitPoint::game`]).
    pub fn of_game(mut self, dir: &Path) -> CommitPoint {
        self.game = Some(dir.to_path_buf());
        self
    }

    /// What a failure of this commit leaves out: its game, or itself.
    fn scope(&self) -> &Path {
        self.game.as_deref().unwrap_or(&self.path)
    }

    fn write(self) -> Result<()> {
        match &self.game {
            Some(game) => write_atomic_in_game(&self.path, &self.bytes, game)?,
            None => write_atomic(&self.path, &self.bytes)?,
        }
        if let Some(then) = self.then {
            then();
        }
        Ok(())
    }
}

/// Files written (renamed into place whole, not yet synced) and the commit point that waits for
/// them ([`stage`]); or, staged with [`stage_later`], the files to write, written only when the
/// commit is flushed (on a [`Group::behind`]'s thread), right before its sync.
pub struct Staged {
    paths: Vec<PathBuf>,
    /// What is left to write before the sync, in order.
    later: Vec<Later>,
    /// The commit point.
    pub point: CommitPoint,
}

/// A write a [`Staged`] commit leaves to its flush.
enum Later {
    /// A folder to make, with whether it is private (as [`make_dirs_in_order`]).
    Dir(PathBuf, bool),
    /// A file to write whole ([`write_unsynced`]).
    Write(PathBuf, Vec<u8>),
    /// Bytes to append to a file ([`append_unsynced`]).
    Append(PathBuf, Vec<u8>),
}

/// Writes `files` as [`write_all_durable`] does but without its sync (in a game's folder, never
/// making that folder again: [`write_atomic_in_game`]), and returns them with the commit point
/// that must wait until they are durable. Dropping the result leaves the files
/// without a commit point, like a run killed before it (the step or order is redone or was never
/// accepted). Errors: a write's, naming its file.
pub fn stage(files: &[(PathBuf, Vec<u8>)], point: CommitPoint) -> Result<Staged> {
    for (path, bytes) in files {
        write_unsynced_as(path, bytes, None, point.game.as_deref())?;
    }
    Ok(Staged { paths: files.iter().map(|(p, _)| p.clone()).collect(), later: Vec::new(), point })
}

/// [`stage`], but nothing is written yet: the folders `dirs` (each with whether it is private)
/// are made and the `files` written, in that order, when the commit is flushed, right before its
/// sync ([`Staged::commit`], [`Group::flush`]; on the thread of a [`Group::behind`]). Whoever
/// stages must hold the lock that keeps every other reader out of those files until the commit
/// point is written (a game's, in [`CommitPoint::hold`]). An error of those writes fails the
/// flush, as a sync's does.
pub fn stage_later(dirs: &[(&Path, bool)], files: Vec<(PathBuf, Vec<u8>)>, point: CommitPoint) -> Staged {
    let later = dirs.iter().map(|(d, private)| Later::Dir(d.to_path_buf(), *private)).chain(files.into_iter().map(|(p, b)| Later::Write(p, b)));
    Staged { paths: Vec::new(), later: later.collect(), point }
}

impl Staged {
    /// Adds a file to write whole at the flush ([`stage_later`]), made durable with the others.
    pub fn also_write(&mut self, path: PathBuf, bytes: Vec<u8>) {
        self.later.push(Later::Write(path, bytes));
    }

    /// Adds bytes to append to a file at the flush ([`stage_later`], [`append_unsynced`]).
    pub fn also_append(&mut self, path: PathBuf, bytes: Vec<u8>) {
        self.later.push(Later::Append(path, bytes));
    }

    /// Does the writes left to the flush, in order. Errors: a write's, naming its file.
    fn write_later(&mut self) -> Result<()> {
        for w in std::mem::take(&mut self.later) {
            match w {
                // Never the game folder itself: a game deleted or renamed since is not made again
                // as a skeleton holding an order nobody will see (tester t25a-4).
                Later::Dir(d, private) => match &self.point.game {
                    Some(game) => make_dirs_below(game, &d, private)?,
                    None => make_dirs(&d, private)?,
                },
                Later::Write(p, b) => {
                    write_unsynced_as(&p, &b, None, self.point.game.as_deref())?;
                    self.paths.push(p);
                }
                Later::Append(p, b) => {
                    append_unsynced(&p, &b)?;
                    self.paths.push(p);
                }
            }
        }
        Ok(())
    }

    /// Writes what was left to now, makes the files durable (one sync), then writes the commit
    /// point.
    pub fn commit(mut self) -> Result<()> {
        self.write_later()?;
        make_durable(&self.paths.iter().map(PathBuf::as_path).collect::<Vec<_>>())?;
        self.point.write()
    }
}

/// Commit points sharing one sync (a sweep's steps): each step's files are written at once and
/// its record waits here, holding the game's lock, until [`Group::flush`] makes every waiting
/// step's files durable with one sync and then writes their records in the order they came.
/// A run killed or a sync failed before that leaves those steps without records, to be redone
/// by the next run (their files are overwritten then); nothing else sees them meanwhile, since
/// each game stays locked. At most [`Group::MAX`] wait (each holds a lock file open): the one
/// that fills the group flushes it, as does one added once the oldest has waited
/// [`Group::MAX_WAIT`] (so a sweep's slow steps do not keep early games locked long). In a
/// group made by [`Group::behind`] (a sweep's), that flush is handed to a thread of the group's
/// own, which syncs and writes the records while the steps after them go on (a sync waits for
/// the disk, and for everything else dirty on the file system); those flushes, and the work
/// handed over to follow them ([`Group::then`]), run one after the other, in the order they
/// were handed over, and [`Group::flush`] waits for them first.
#[derive(Default)]
pub struct Group {
    waiting: std::sync::Arc<Shared>,
    /// The thread flushes are handed to (made at the first), for a group made by [`Group::behind`].
    behind: Option<std::sync::Mutex<Option<Behind>>>,
}

/// What a group and its flushing thread share: the state, a signal when a flush handed over is
/// done, and the veto asked before each commit point ([`Group::set_veto`]).
#[derive(Default)]
struct Shared {
    state: std::sync::Mutex<GroupState>,
    done: std::sync::Condvar,
    veto: std::sync::Mutex<Option<Veto>>,
}

/// Asked right before a group writes a commit point, with the point's path, after the sync that
/// made its files durable: `false` leaves that commit out, as a run killed right before it would
/// (its files wait for the next run to clear them, its game's lock is released). The cron run's:
/// a mail with orders for the game arrived meanwhile (tester t25a-1).
pub type Veto = std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// [`Group::left_out`], asked from anywhere (work handed to the group's own thread).
#[derive(Clone)]
pub struct LeftOutView(std::sync::Arc<Shared>);

impl LeftOutView {
    /// Why the commits of the game in folder `dir` were left out, if they were.
    pub fn get(&self, dir: &Path) -> Option<String> {
        self.0.state().left_out.get(dir).cloned()
    }
}

/// The thread a [`Group::behind`] hands its flushes to, and the way to it (one flush waits there
/// at most, besides the one it runs: each holds its games' locks).
struct Behind {
    to: std::sync::mpsc::SyncSender<Job>,
    thread: std::thread::JoinHandle<()>,
}

/// What a [`Group::behind`]'s thread is handed, run in the order handed: a flush of commits, or
/// work that must follow the flushes handed before it ([`Group::then`]).
enum Job {
    Flush(Vec<Staged>),
    Then(Box<dyn FnOnce() -> Result<()> + Send>),
}

impl Job {
    /// The commit points a flush writes (none for other work).
    fn points(&self) -> Vec<PathBuf> {
        match self {
            Job::Flush(staged) => staged.iter().map(|s| s.point.path.clone()).collect(),
            Job::Then(_) => Vec::new(),
        }
    }
}

#[derive(Default)]
struct GroupState {
    staged: Vec<Staged>,
    /// When the oldest waiting commit came.
    since: Option<std::time::Instant>,
    /// The first flush that failed (a file it named, and why): its commits were not written, so
    /// every later flush fails too and the run stops before it reports them done.
    failed: Option<(PathBuf, String)>,
    /// The games (or commit points, [`CommitPoint::scope`]) whose commits a write failed for,
    /// with why: left out of this run (see [`Group::left_out`]).
    left_out: BTreeMap<PathBuf, String>,
    /// The commit points of the flushes handed to the group's thread and not done yet.
    handed: Vec<PathBuf>,
    /// How many flushes and jobs were handed over, and how many of them are done.
    sent: u64,
    finished: u64,
}

impl GroupState {
    /// The error every flush returns once one failed.
    fn broken(&self) -> Option<Error> {
        let (path, why) = self.failed.clone()?;
        Some(io(&path, std::io::Error::other(format!("{why} (an earlier write of this run; what came after it was not written)"))))
    }

    /// Remembers the first failed flush.
    fn fail(&mut self, e: &Error) {
        // The path once: `broken`'s error names it.
        let failed = match e {
            Error::Io { path, source } => (path.clone(), source.to_string()),
            _ => (PathBuf::new(), e.to_string()),
        };
        self.failed.get_or_insert(failed);
    }
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [`flush_staged`] unless a flush failed before (then the commits are dropped, their games'
    /// locks released), remembering a failure.
    fn flush(&self, staged: Vec<Staged>) -> Result<()> {
        if let Some(e) = self.state().broken() {
            return Err(e);
        }
        let veto = self.veto.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // A copy: the state stays free for the thread adding commits while this one syncs.
        let mut left = self.state().left_out.clone();
        let result = flush_staged(staged, veto.as_deref(), Some(&mut left));
        let mut s = self.state();
        s.left_out = left;
        if let Err(e) = &result {
            s.fail(e);
        }
        result
    }

    /// The loop of a [`Group::behind`]'s thread: each job handed over, in order.
    fn run(&self, from: &std::sync::mpsc::Receiver<Job>) {
        for job in from {
            // Counted done even if it panicked (then as failed), so that no flush waits forever.
            let mut finish = Finish { shared: self, points: job.points(), ok: false };
            let _ = self.run_job(job);
            finish.ok = true;
        }
    }

    /// Runs one job: [`Shared::flush`] or [`Shared::then`].
    fn run_job(&self, job: Job) -> Result<()> {
        match job {
            Job::Flush(staged) => self.flush(staged),
            Job::Then(work) => self.then(work),
        }
    }

    /// Runs `work` unless a flush or a job failed before (then it is dropped undone), remembering
    /// its failure as a flush's.
    fn then(&self, work: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        if let Some(e) = self.state().broken() {
            return Err(e);
        }
        let result = work();
        if let Err(e) = &result {
            self.state().fail(e);
        }
        result
    }
}

/// Marks a flush handed over as done when dropped (as failed if it did not end).
struct Finish<'a> {
    shared: &'a Shared,
    points: Vec<PathBuf>,
    ok: bool,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let mut s = self.shared.state();
        if !self.ok {
            s.fail(&io(self.points.first().map_or(Path::new(""), PathBuf::as_path), std::io::Error::other("the group's flushing thread stopped")));
        }
        s.handed.retain(|p| !self.points.contains(p));
        s.finished += 1;
        self.shared.done.notify_all();
    }
}

impl Group {
    /// How many commit points wait at most (each holds its game's lock file open).
    pub const MAX: usize = 128;

    /// How long the oldest commit point waits at most (its game stays locked meanwhile, and an
    /// order for it waits up to a few seconds for the lock): one second.
    pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

    /// An empty group.
    pub fn new() -> Group {
        Group::default()
    }

    /// An empty group whose flushes when full run on a thread of its own (a sweep's): see
    /// [`Group`].
    pub fn behind() -> Group {
        Group { waiting: Default::default(), behind: Some(std::sync::Mutex::new(None)) }
    }

    /// From now on, each commit point of this group is put to `veto` right before it is written
    /// (see [`Veto`]).
    pub fn set_veto(&self, veto: Veto) {
        *self.waiting.veto.lock().unwrap_or_else(|p| p.into_inner()) = Some(veto);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        self.waiting.state()
    }

    /// Every waiting commit, leaving the group empty.
    fn take(&self) -> Vec<Staged> {
        let mut s = self.state();
        s.since = None;
        std::mem::take(&mut s.staged)
    }

    /// Adds a staged commit; flushes the group when it is full or its oldest commit has waited
    /// [`Group::MAX_WAIT`] (an error of that flush is returned by every later [`Group::flush`]).
    pub fn add(&self, staged: Staged) {
        let full = {
            let mut s = self.state();
            s.staged.push(staged);
            let since = *s.since.get_or_insert_with(std::time::Instant::now);
            s.staged.len() >= Group::MAX || since.elapsed() >= Group::MAX_WAIT
        };
        if full {
            match &self.behind {
                Some(behind) => self.hand_over(behind),
                None => {
                    let _ = self.flush();
                }
            }
        }
    }

    /// Hands every waiting commit to the group's thread (made now if there is none), which
    /// flushes them after the jobs handed over before; waits while one already waits there.
    /// Flushed here instead if no thread can be made.
    fn hand_over(&self, behind: &std::sync::Mutex<Option<Behind>>) {
        let Some(to) = Group::thread(&self.waiting, behind) else {
            let _ = self.waiting.flush(self.take());
            return;
        };
        let staged = {
            let mut s = self.state();
            s.since = None;
            let staged = std::mem::take(&mut s.staged);
            s.handed.extend(staged.iter().map(|st| st.point.path.clone()));
            s.sent += 1;
            staged
        };
        self.send(&to, Job::Flush(staged));
    }

    /// The way to the group's thread, made now if there is none (`None` if it cannot be made).
    fn thread(shared: &std::sync::Arc<Shared>, behind: &std::sync::Mutex<Option<Behind>>) -> Option<std::sync::mpsc::SyncSender<Job>> {
        let mut behind = behind.lock().unwrap_or_else(|p| p.into_inner());
        if behind.is_none() {
            let (to, from) = std::sync::mpsc::sync_channel(1);
            let shared = shared.clone();
            *behind = std::thread::Builder::new().name("group flush".into()).spawn(move || shared.run(&from)).ok().map(|thread| Behind { to, thread });
        }
        behind.as_ref().map(|b| b.to.clone())
    }

    /// Sends a job counted in `sent` to the thread; run here instead (and counted done) if the
    /// thread is gone (only by a panic).
    fn send(&self, to: &std::sync::mpsc::SyncSender<Job>, job: Job) {
        if let Err(std::sync::mpsc::SendError(job)) = to.send(job) {
            let _finish = Finish { shared: &self.waiting, points: job.points(), ok: true };
            let _ = self.waiting.run_job(job);
        }
    }

    /// Runs `work` once every commit waiting now is flushed (they are handed over first) and
    /// every job handed over before is done: on the group's thread for a group made by
    /// [`Group::behind`], so that the caller goes on meanwhile (intake files a batch of messages
    /// away there, [`crate::mail`]), else here, after a [`Group::flush`]. A failure of `work`
    /// counts as a failed flush: every later flush and job fails ([`Group::check`]); `work` is
    /// dropped undone when one failed before.
    pub fn then(&self, work: impl FnOnce() -> Result<()> + Send + 'static) -> Result<()> {
        let Some(to) = self.behind.as_ref().and_then(|b| Group::thread(&self.waiting, b)) else {
            self.flush()?;
            return self.waiting.then(Box::new(work));
        };
        if !self.state().staged.is_empty() {
            self.hand_over(self.behind.as_ref().expect("a group with a thread was made by Group::behind"));
        }
        self.state().sent += 1;
        self.send(&to, Job::Then(Box::new(work)));
        Ok(())
    }

    /// The error of the first flush or job that failed, if one did (what is handed over later is
    /// dropped undone, as by a killed run): a caller stops before it reports anything done.
    pub fn check(&self) -> Result<()> {
        self.state().broken().map_or(Ok(()), Err)
    }

    /// Why the commits of the game in folder `dir` were left out of this group's flushes, if they
    /// were: a write of one of them failed with an error of that game alone ([`stops_everything`]
    /// tells), so it and every later commit of the game were dropped as a killed run's are, while
    /// the other games' went on (tester t25a-2: one unwritable game folder stopped every game's
    /// intake and steps, run after run). Known once the flush that left it out is done.
    pub fn left_out(&self, dir: &Path) -> Option<String> {
        self.left_out_view().get(dir)
    }

    /// A way to ask [`Group::left_out`] from work handed to the group's thread ([`Group::then`]).
    pub fn left_out_view(&self) -> LeftOutView {
        LeftOutView(self.waiting.clone())
    }

    /// Every game (or lone commit point) left out so far, with why ([`Group::left_out`]).
    pub fn all_left_out(&self) -> BTreeMap<PathBuf, String> {
        self.state().left_out.clone()
    }

    /// Waits until every flush and job handed to the group's thread is done.
    fn wait_behind(&self) {
        let mut s = self.state();
        while s.finished < s.sent {
            s = self.waiting.done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Adds the staged commits of one game in order, the last holding `lock` (the game's), which is
    /// released at once when there are none.
    pub fn add_all(&self, mut staged: Vec<Staged>, lock: File) {
        if let Some(last) = staged.last_mut() {
            last.point.hold = Some(lock);
        }
        for s in staged {
            self.add(s);
        }
    }

    /// Whether a commit point waits under the folder `dir` (a game's: its lock is then held here,
    /// and its files are not all written), or is being flushed by the group's thread.
    pub fn holds_under(&self, dir: &Path) -> bool {
        let s = self.state();
        s.staged.iter().any(|st| st.point.path.starts_with(dir)) || s.handed.iter().any(|p| p.starts_with(dir))
    }

    /// One sync for the files of every waiting commit, then their commit points, in order (with
    /// a batch open, those are made durable by the batch's next sync), after every flush and job
    /// handed to the group's thread is done. Errors: the sync's or a write's, naming a file; once one
    /// flush failed, every later one fails (its commits are dropped, as a killed run's: the
    /// caller must not report them done). Dropping a group with commits waiting discards them the
    /// same way (and waits for the flushes handed over).
    pub fn flush(&self) -> Result<()> {
        self.wait_behind();
        let staged = self.take();
        self.waiting.flush(staged)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let behind = self.behind.take().and_then(|b| b.into_inner().unwrap_or_else(|p| p.into_inner()));
        if let Some(Behind { to, thread }) = behind {
            drop(to);
            let _ = thread.join();
        }
    }
}

/// Commits staged writes together: one sync for all their files, then each commit point in
/// order. Errors: the sync's or a write's, naming a file (the points after a failed sync are not
/// written).
pub fn commit_all(staged: Vec<Staged>) -> Result<()> {
    flush_staged(staged, None, None)
}

/// [`commit_all`], each commit point first put to `veto` (see [`Veto`]). With `left`, a commit
/// whose writes fail with an error of its game alone ([`stops_everything`] tells) is dropped with
/// every later one of its game, which `left` gets with why (and the commits of games already in
/// `left` are dropped); any other error stops the flush (the points after a failed sync are not
/// written).
fn flush_staged(staged: Vec<Staged>, veto: Option<&(dyn Fn(&Path) -> bool + Send + Sync)>, left: Option<&mut BTreeMap<PathBuf, String>>) -> Result<()> {
    if staged.is_empty() {
        return Ok(());
    }
    let mut left = LeftOut(left);
    let mut written = Vec::with_capacity(staged.len());
    for mut s in staged {
        if left.has(s.point.scope()) {
            continue;
        }
        match s.write_later() {
            Ok(()) => written.push(s),
            Err(e) => left.add(s.point.scope(), e)?,
        }
    }
    let paths: Vec<&Path> = written.iter().flat_map(|s| s.paths.iter().map(PathBuf::as_path)).collect();
    make_durable(&paths)?;
    let mut first_error = None;
    for s in written {
        if left.has(s.point.scope()) || veto.is_some_and(|v| !v(&s.point.path)) {
            continue;
        }
        let scope = s.point.scope().to_path_buf();
        if let Err(e) = s.point.write().or_else(|e| left.add(&scope, e)) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The games a flush leaves out (`None`: none may be, every error is the flush's).
struct LeftOut<'a>(Option<&'a mut BTreeMap<PathBuf, String>>);

impl LeftOut<'_> {
    /// Whether the commits of `scope` are left out.
    fn has(&self, scope: &Path) -> bool {
        self.0.as_ref().is_some_and(|l| l.contains_key(scope))
    }

    /// Leaves `scope` out for `e`, unless `e` stops everything (or nothing may be left out):
    /// then `e` is returned.
    fn add(&mut self, scope: &Path, e: Error) -> Result<()> {
        match self.0.as_deref_mut() {
            Some(left) if !stops_everything(&e) => {
                left.insert(scope.to_path_buf(), e.to_string());
                Ok(())
            }
            _ => Err(e),
        }
    }
}

/// Whether the error of a commit's write is the file system's as a whole (full, over quota,
/// read-only, failing, out of memory), which stops a group's flush and the run; any other (a
/// folder made read-only or replaced by a file, a name taken by a folder, a game folder gone) is
/// the game's alone: the commit is left out and the other games go on ([`Group::left_out`]).
pub fn stops_everything(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EROFS | libc::ENOMEM)),
        _ => false,
    }
}

/// Appends `bytes` to the file at `path` (created if missing, mode as [`write_atomic`]) with one
/// `write` in append mode and no fsync: made durable by the sync before a commit point
/// ([`Staged::also_append`]). A power loss may leave the last line torn: its readers must ignore one.
pub fn append_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    open_append(path)?.write_all(bytes).map_err(|e| io(path, e))
}

/// Opens the file at `path` to append to (created if missing, mode as [`write_atomic`]), if it
/// is a regular file: a FIFO is neither waited on nor written to. A file with other hard links
/// (a backup made with `cp -al` or `rsync --link-dest` shares it) is first copied to a file of
/// its own at `path` ([`write_unsynced`]), so that what is appended never changes the backup.
/// Errors: the open's or the copy's, or a file of another kind, naming the file.
pub fn open_append(path: &Path) -> Result<File> {
    use std::os::unix::fs::MetadataExt;
    let f = open_append_shared(path)?;
    if f.metadata().map_err(|e| io(path, e))?.nlink() <= 1 {
        return Ok(f);
    }
    drop(f);
    write_unsynced(path, &read(path)?)?;
    open_append_shared(path)
}

/// [`open_append`], a hard-linked file appended to as it is.
fn open_append_shared(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = File::options();
    options.create(true).append(true).custom_flags(libc::O_NONBLOCK);
    if host_folder(path).is_some() {
        options.mode(0o600);
    }
    let f = options.open(path).map_err(|e| io(path, e))?;
    only_regular(f, path, "; not written")
}

/// Temp file + rename with no fsync (made durable by [`sync_together`], e.g. through
/// [`Staged::also_write`]).
pub fn write_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_unsynced_as(path, bytes, None, None)
}

/// [`write_atomic`] of a file in the game folder `game`: the folders missing between them are
/// made, but never `game` itself (a game folder renamed or deleted during the run is not made
/// again as a skeleton holding a stray file: tester t25d D3; the write fails instead). The files
/// a commit of a game writes ([`CommitPoint::game`]) are written so too.
pub fn write_atomic_in_game(path: &Path, bytes: &[u8], game: &Path) -> Result<()> {
    write_atomic_as(path, bytes, None, Some(game))
}

/// Makes folder `dir` and those missing above it up to `top` (not `top` itself: a folder gone
/// fails the `mkdir` below it), one `mkdir` each, modes as [`make_dirs`]. A `dir` outside `top`
/// is made as [`make_dirs`] makes it. Errors: a `mkdir`'s, naming the folder.
fn make_dirs_below(top: &Path, dir: &Path, private: bool) -> Result<()> {
    let Ok(below) = dir.strip_prefix(top) else { return make_dirs(dir, private) };
    let b = dir_builder(private);
    // Most often only `dir` itself is missing: one `mkdir`.
    match b.create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(dir, e)),
        _ => return Ok(()),
    }
    let mut at = top.to_path_buf();
    for part in below.components() {
        at.push(part);
        match b.create(&at) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(&at, e)),
            _ => {}
        }
    }
    Ok(())
}

/// [`write_unsynced`], the temp file given `mode` (when `Some`) before its rename.
fn write_unsynced_as(path: &Path, bytes: &[u8], mode: Option<u32>, within: Option<&Path>) -> Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let private = host_folder(path).is_some();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = parent.join(format!(".{name}.{}.{}.tmp", PID.get_or_init(std::process::id), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let mut options = File::options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    // The folders are made only when missing (most writes go into folders that exist).
    let opened = match options.open(&tmp) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let made = match within {
                Some(top) => make_dirs_below(top, parent, private),
                None => make_dirs(parent, private),
            };
            made.and_then(|()| options.open(&tmp).map_err(|e| io(path, e)))
        }
        other => other.map_err(|e| io(path, e)),
    };
    let chmod = |f: &File| match mode {
        Some(m) => f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(m)),
        None => Ok(()),
    };
    let written = opened.and_then(|mut f| chmod(&f).and_then(|()| f.write_all(bytes)).and_then(|()| fs::rename(&tmp, path)).map_err(|e| io(path, e)));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// How old a temp file of `atomic-write-file` (`.NAME.XXXXXX`, no process id in it) must be to
/// be taken for a leftover of a killed run: a write in progress lasts milliseconds.
const STALE_TEMP_SECS: u64 = 600;

/// Removes from `folder` the temp files a killed run left: ours (`.NAME.PID.N.tmp`, see
/// `write_unsynced`) whose process is not alive, and `atomic-write-file`'s (`.NAME.XXXXXX`, six
/// letters or digits) older than ten minutes. Other files are left alone, and so is the temp file
/// of a live process. Returns how many were removed; nothing when the folder does not exist.
/// Cheap (one listing): call it where the folder's writer holds its lock.
pub fn remove_stale_temps(folder: &Path) -> Result<usize> {
    remove_temps(folder, stale_temp)
}

/// [`remove_stale_temps`] of the temp files of `folder/target` only (by the same rule), e.g.
/// those a killed `pbem public --out FILE` left beside `FILE`.
pub fn remove_stale_temps_of(folder: &Path, target: &str) -> Result<usize> {
    remove_temps(folder, |name, p| temp_target(name) == Some(target) && stale_temp(name, p))
}

/// Removes the temp files of `folder/target` whatever their age or process: for a caller holding
/// the lock that every writer of that file takes (none of them is being written). Returns how
/// many were removed; nothing when the folder does not exist.
pub fn remove_temps_of(folder: &Path, target: &str) -> Result<usize> {
    remove_temps(folder, |name, _| temp_target(name) == Some(target))
}

/// Removes every temp file of ours or `atomic-write-file`'s from `folder`, whatever its age or
/// process: for a caller holding the lock that every writer of the folder takes (a game's, for
/// its orders' folders), so none of them is being written (tester T24b-2: a library's temp file
/// a killed `pbem submit` left in `receipts/N/` stayed for good once step N resolved within ten
/// minutes). Returns how many were removed; nothing when the folder does not exist.
pub fn remove_temps_locked(folder: &Path) -> Result<usize> {
    remove_temps(folder, |name, _| temp_target(name).is_some())
}

/// Whether the temp file `p` (named `name`) is a killed run's, by [`remove_stale_temps`]'s rule.
fn stale_temp(name: &str, p: &Path) -> bool {
    match our_temp_pid(name) {
        Some(pid) => pid != std::process::id() && !process_alive(pid),
        None => library_temp(name) && fs::symlink_metadata(p).ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|age| age.as_secs() >= STALE_TEMP_SECS),
    }
}

/// The file a temp name of ours (`.NAME.PID.N.tmp`) or of `atomic-write-file` (`.NAME.XXXXXX`)
/// is for (`NAME`); `None` for any other name.
fn temp_target(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?;
    if our_temp_pid(name).is_some() {
        return rest.strip_suffix(".tmp")?.rsplitn(3, '.').nth(2);
    }
    if !library_temp(name) {
        return None;
    }
    rest.rsplit_once('.').map(|(target, _)| target)
}

/// Removes the regular files of `folder` with a hidden name that `remove` picks.
fn remove_temps(folder: &Path, remove: impl Fn(&str, &Path) -> bool) -> Result<usize> {
    let mut removed = 0;
    for name in list(folder)?.into_iter().filter(|n| n.starts_with('.')) {
        let p = folder.join(&name);
        if remove(&name, &p) && fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            match fs::remove_file(&p) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&p, e)),
            }
        }
    }
    Ok(removed)
}

/// How old a folder a killed `pbem new` left must be for a `new` of another game to remove it.
const STALE_NEW_SECS: u64 = 3600;

/// Makes the hidden folder `parent/.NAME.PID.N.tmp` (a temp name of ours) that a new game named
/// `name` is built in before it is renamed into place, after removing those that `new`s killed
/// before their rename left ([`remove_stale_new`]). Errors: the folder's, naming it.
pub fn make_new_folder(parent: &Path, name: &str) -> Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    remove_stale_new(parent, name);
    let short: String = name.chars().take(100).collect();
    let tmp = parent.join(format!(".{short}.{}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    fs::create_dir(&tmp).map_err(|e| io(&tmp, e))?;
    Ok(tmp)
}

/// Removes the folders of [`make_new_folder`] in `parent` whose process is not alive: those of a
/// game named `name`, and others once over an hour old. Best effort (the sweep ignores them).
fn remove_stale_new(parent: &Path, name: &str) {
    let short: String = name.chars().take(100).collect();
    for n in list(parent).unwrap_or_default().into_iter().filter(|n| n.starts_with('.')) {
        let Some(pid) = our_temp_pid(&n) else { continue };
        let p = parent.join(&n);
        let Ok(meta) = fs::symlink_metadata(&p) else { continue };
        let old = meta.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age.as_secs() >= STALE_NEW_SECS);
        if meta.is_dir() && pid != std::process::id() && !process_alive(pid) && (old || temp_target(&n) == Some(short.as_str())) {
            let _ = fs::remove_dir_all(&p);
        }
    }
}

/// The process id in a temp name of ours, `.NAME.PID.N.tmp`.
fn our_temp_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = rest.rsplitn(3, '.');
    let (n, pid, target) = (parts.next()?, parts.next()?, parts.next()?);
    (!target.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
    pid.parse().ok()
}

/// Whether `name` is shaped as `atomic-write-file`'s temp name, `.NAME.XXXXXX`.
fn library_temp(name: &str) -> bool {
    name.strip_prefix('.').and_then(|r| r.rsplit_once('.')).is_some_and(|(target, x)| !target.is_empty() && x.len() == 6 && x.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Whether a process with id `pid` is alive (off Unix: assumed so, nothing is removed).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Makes a file changed in place (appended to, e.g. the mail log) durable: with a [`Batch`] open,
/// by the batch's next sync; else now (with its folder, as [`sync_together`]).
pub fn written_in_place(path: &Path) -> Result<()> {
    if batch::defer(path) {
        return Ok(());
    }
    sync_together(std::iter::once(path))
}

pub use batch::{Batch, sync_batch};

/// Group commit: many writes made durable by one sync (intake's mails, a sweep's steps).
mod batch {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use crate::error::Result;

    /// The files written since the open batch last synced (`None`: no batch).
    static WRITTEN: Mutex<Option<Vec<PathBuf>>> = Mutex::new(None);

    fn written() -> std::sync::MutexGuard<'static, Option<Vec<PathBuf>>> {
        WRITTEN.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `path` as written in the open batch; `false` when no batch is open.
    pub(super) fn defer(path: &Path) -> bool {
        written().as_mut().map(|v| v.push(path.to_path_buf())).is_some()
    }

    /// A group commit in this process: while it is open, [`super::write_atomic`] (on any thread)
    /// renames each file into place without its two fsyncs, and [`Batch::sync`] makes every file
    /// written since durable with one `syncfs`. [`super::write_all_durable`], the barrier before
    /// a commit point, still syncs at once, and its sync makes the batch's earlier files durable
    /// too: so what is on disk after a power loss is always everything written before some
    /// barrier, in order (a record is never durable without the files it names, nor without the
    /// records before it).
    ///
    /// What a commit point written in a batch protects must wait for the batch's sync: intake
    /// files a mail away (and marks it seen) only after the sync that made its receipt and reply
    /// durable, and a cron run sends no mail before its sweep's sync. A killed run loses nothing
    /// a run without a batch would keep (every file is renamed into place whole, in the same
    /// order); a power loss before the sync may lose the batch's newest files, and then the mails
    /// they answer are still waiting and the steps they resolved are still open: they are done
    /// again. Linux only (it rests on `syncfs` flushing the whole file system); elsewhere
    /// [`Batch::open`] opens none and every file keeps its own fsyncs. Dropping the batch ends it
    /// without a sync. Batches do not nest: opening one inside another returns `None`.
    pub struct Batch(());

    impl Batch {
        /// Opens a batch, or `None` if one is open already (or off Linux).
        pub fn open() -> Option<Batch> {
            if !cfg!(target_os = "linux") {
                return None;
            }
            let mut w = written();
            if w.is_some() {
                return None;
            }
            *w = Some(Vec::new());
            Some(Batch(()))
        }

        /// Makes every file written in the batch since its last sync durable (one `syncfs`).
        /// Errors: the sync's, naming a file.
        pub fn sync(&mut self) -> Result<()> {
            sync_pending(&[])
        }
    }

    /// Makes the files written in the open batch durable, whoever opened it (nothing when none
    /// is open: every file then had its own fsyncs). Errors: the sync's, naming a file.
    pub fn sync_batch() -> Result<()> {
        sync_pending(&[])
    }

    /// Makes `also` and the open batch's files durable together.
    pub(super) fn sync_pending(also: &[&Path]) -> Result<()> {
        let pending = written().as_mut().map(std::mem::take).unwrap_or_default();
        // A file renamed or removed since (a sent mail) needs no sync of its own (looked for
        // lazily: on Linux the first one present is all `sync_together` needs).
        let present = pending.iter().map(PathBuf::as_path).filter(|p| p.exists());
        super::sync_together(also.iter().copied().chain(present))
    }

    /// Whether a batch is open.
    pub(super) fn is_open() -> bool {
        written().is_some()
    }

    impl Drop for Batch {
        fn drop(&mut self) {
            *written() = None;
        }
    }
}

/// Makes the given files (and their folder entries) durable: on Linux one `syncfs` of their file
/// system (one journal commit instead of an fsync per file and folder); elsewhere an fsync of
/// each file and each folder they are in.
/// On Linux only the first path is looked at (the iterator is not run further).
pub fn sync_together<'a>(mut paths: impl Iterator<Item = &'a Path>) -> Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(first) = paths.next() {
        use std::os::fd::AsRawFd;
        let f = File::open(first).map_err(|e| io(first, e))?;
        // SAFETY: syncfs only reads the descriptor, which `f` keeps open for the call.
        if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
            return Err(io(first, std::io::Error::last_os_error()));
        }
        return Ok(());
    }
    let mut dirs: Vec<&Path> = Vec::new();
    for p in paths {
        File::open(p).and_then(|f| f.sync_all()).map_err(|e| io(p, e))?;
        if let Some(d) = p.parent().filter(|d| !dirs.contains(d)) {
            dirs.push(d);
        }
    }
    #[cfg(unix)]
    for d in dirs {
        File::open(d).and_then(|f| f.sync_all()).map_err(|e| io(d, e))?;
    }
    Ok(())
}

/// Creates `dir` and its missing parents; with `private`, the folders made are mode 0700 (the
/// host's alone). Folders that exist keep their mode.
pub fn make_dirs(dir: &Path, private: bool) -> Result<()> {
    dir_builder(private).recursive(true).create(dir).map_err(|e| io(dir, e))
}

/// Makes the folders `dirs` in their order, each in one there by then (a step's first order:
/// `host/sealed/`, then `host/sealed/NNNNNN/`): one `mkdir` each, where a write into a missing
/// folder costs a failed open and a failed `mkdir` more before [`make_dirs`]. A folder already
/// there is fine (a file in its place fails the write into it, naming the file); one whose
/// parent is missing is made with its parents. Modes as [`make_dirs`].
pub fn make_dirs_in_order(dirs: &[&Path], private: bool) -> Result<()> {
    let b = dir_builder(private);
    for dir in dirs {
        match b.create(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => make_dirs(dir, private)?,
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(dir, e)),
            _ => {}
        }
    }
    Ok(())
}

/// A `mkdir` of one folder, mode 0700 when `private` (else the umask's).
fn dir_builder(private: bool) -> fs::DirBuilder {
    let mut b = fs::DirBuilder::new();
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b
}

/// The game's `host/` folder that `path` lies in: its nearest ancestor named `host` that holds
/// the host key (`GAME/host/host_key`, the first file a new game writes there).
pub fn host_folder(path: &Path) -> Option<&Path> {
    path.ancestors().skip(1).find(|a| a.file_name() == Some("host".as_ref()) && holds_host_key(a))
}

/// Whether the folder `dir` holds the host key. The last folder found to is remembered: a run
/// writes several files into one game's `host/` in a row (an order's sealed copy, its signature,
/// the nonce index), and a host key, once made, stays; a wrong memory could only make a file
/// more private (0600), never less.
fn holds_host_key(dir: &Path) -> bool {
    static LAST: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if last.as_deref() == Some(dir) {
        return true;
    }
    let holds = dir.join("host_key").is_file();
    if holds {
        *last = Some(dir.to_path_buf());
    }
    holds
}

/// `host/` and the files and folders in it that users other than the owner may read, write or
/// enter (mode bits for group or others), `host/` first; nothing when there is no `host/`.
pub fn exposed_host_files(game: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut todo = vec![game.join("host")];
        while let Some(p) = todo.pop() {
            let meta = match fs::symlink_metadata(&p) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(&p, e)),
            };
            if !meta.file_type().is_symlink() && meta.permissions().mode() & 0o077 != 0 {
                out.push(p.clone());
            }
            if meta.is_dir() {
                for name in list(&p)?.into_iter().rev() {
                    todo.push(p.join(name));
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = game;
    Ok(out)
}

/// Makes an existing file or folder the owner's alone (mode 0600 for a file, 0700 for a folder).
pub fn make_private(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if path.is_dir() { 0o700 } else { 0o600 };
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| io(path, e))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Lists the file names in `dir` (sorted), or nothing if it does not exist.
pub fn list(dir: &Path) -> Result<Vec<String>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir, e)),
    };
    let mut names = Vec::new();
    for e in rd {
        let e = e.map_err(|e| io(dir, e))?;
        if let Some(n) = e.file_name().to_str() {
            names.push(n.to_string());
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_regular_reads_whole_files_of_any_size() {
        let tmp = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 31, 4096, 8193, 100_000] {
            let path = tmp.path().join(format!("f{len}"));
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(read_regular(&path).unwrap(), bytes, "{len} bytes");
        }
    }

    #[test]
    fn a_temp_name_names_the_file_it_was_for() {
        assert_eq!(temp_target(".000001.json.A8Fro6"), Some("000001.json"));
        assert_eq!(temp_target(".000001.json.sig.77.0.tmp"), Some("000001.json.sig"));
        assert_eq!(temp_target(".g.tar.A8Fro6"), Some("g.tar"));
        for other in [".due", ".000001.json", "000001.json.A8Fro6", ".x.tmp", ".A8Fro6"] {
            assert_eq!(temp_target(other), None, "{other}");
        }
    }

    #[test]
    fn record_numbers_skip_other_names_and_a_gap_stops_the_game() {
        let tmp = tempfile::tempdir().unwrap();
        let game = GameDir::new(tmp.path());
        assert_eq!(game.last_record().unwrap(), None);
        fs::create_dir(tmp.path().join("records")).unwrap();
        for name in ["000000.json", "000000.json.sig", "000001.json", ".000002.json.77.0.tmp", "0000002.json", "x.json", "000003.json.sig"] {
            fs::write(tmp.path().join("records").join(name), "").unwrap();
        }
        assert_eq!(game.record_numbers().unwrap(), vec![0, 1]);
        // A record without its signature stops the game too.
        let e = game.last_record().unwrap_err().to_string();
        assert!(e.contains("000001.json.sig") && e.contains("missing (deleted signature?)"), "{e}");
        fs::write(tmp.path().join("records/000001.json.sig"), "").unwrap();
        assert_eq!(game.last_record().unwrap(), Some(1));
        fs::write(game.record(3), "").unwrap();
        let e = game.last_record().unwrap_err().to_string();
        assert!(e.contains("000002.json") && e.contains("later records exist up to 000003"), "{e}");
        assert_eq!(game.last_contiguous_record().unwrap(), Some(1));
        fs::remove_file(game.record(0)).unwrap();
        assert_eq!(game.last_contiguous_record().unwrap(), None);
    }

    #[test]
    fn a_lock_is_taken_only_in_a_games_folder_and_leaves_nothing_elsewhere() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = GameDir::new(tmp.path().join("nosuchgame"));
        assert_eq!(missing.lock().unwrap_err().to_string(), format!("{}: no such game directory", missing.root.display()));
        let bare = GameDir::new(tmp.path());
        assert_eq!(bare.lock().unwrap_err().to_string(), format!("{}: not a pbem game directory (no game.toml)", bare.root.display()));
        assert!(!bare.lock_file().exists(), "no stray .lock");
        let file = GameDir::new(tmp.path().join("orders.toml"));
        fs::write(&file.root, "").unwrap();
        assert_eq!(file.lock().unwrap_err().to_string(), format!("{}: not a game directory (a file)", file.root.display()));
        fs::write(bare.game_file(), "").unwrap();
        drop(bare.lock().unwrap());
        assert!(bare.lock_file().is_file());
    }

    #[test]
    fn a_group_writes_each_commit_point_after_its_files_and_holds_until_then() {
        let tmp = tempfile::tempdir().unwrap();
        let game = GameDir::new(tmp.path());
        fs::write(game.game_file(), "").unwrap();
        let group = Group::new();
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let staged = |n: u32| {
            let files = vec![(tmp.path().join(format!("state{n}")), b"s".to_vec())];
            stage(&files, CommitPoint::new(tmp.path().join(format!("record{n}")), b"r".to_vec())).unwrap()
        };
        let mut first = staged(1);
        first.point.hold = Some(game.lock().unwrap());
        let flag = ran.clone();
        first.point.then = Some(Box::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst)));
        group.add(first);
        // The files are in place, the commit point waits, and the game stays locked meanwhile.
        assert!(tmp.path().join("state1").is_file() && !tmp.path().join("record1").exists());
        assert!(matches!(game.lock(), Err(Error::Locked(_))));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        group.flush().unwrap();
        assert_eq!(fs::read(tmp.path().join("record1")).unwrap(), b"r");
        assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
        drop(game.lock().expect("released after its record"));
        // A full group flushes itself; a staged commit dropped leaves no commit point.
        for n in 0..Group::MAX as u32 {
            group.add(staged(100 + n));
        }
        assert!(tmp.path().join("record100").is_file() && tmp.path().join(format!("record{}", 99 + Group::MAX)).is_file());
        drop(staged(2));
        assert!(tmp.path().join("state2").is_file() && !tmp.path().join("record2").exists());
        group.flush().unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn a_hint_is_written_in_place_unless_it_is_not_a_plain_file() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let (p, other) = (tmp.path().join("hint"), tmp.path().join("other"));
        let ino = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        write_hint_in_place(&p, b"first, longer\n").unwrap();
        let first = ino(&p);
        write_hint_in_place(&p, b"second\n").unwrap();
        assert_eq!((fs::read(&p).unwrap(), ino(&p)), (b"second\n".to_vec(), first));
        // A hard link (another file would change too), a symbolic link and a FIFO are replaced.
        fs::hard_link(&p, &other).unwrap();
        write_hint_in_place(&p, b"third\n").unwrap();
        assert_eq!((fs::read(&p).unwrap(), fs::read(&other).unwrap()), (b"third\n".to_vec(), b"second\n".to_vec()));
        assert_ne!(ino(&p), first);
        fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&other, &p).unwrap();
        write_hint_in_place(&p, b"fourth\n").unwrap();
        assert!(fs::symlink_metadata(&p).unwrap().is_file());
        assert_eq!((fs::read(&p).unwrap(), fs::read(&other).unwrap()), (b"fourth\n".to_vec(), b"second\n".to_vec()));
        fs::remove_file(&p).unwrap();
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        write_hint_in_place(&p, b"fifth\n").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"fifth\n".to_vec());
    }

    #[test]
    fn a_group_behind_flushes_on_its_thread_in_order_and_flush_waits_for_it() {
        let tmp = tempfile::tempdir().unwrap();
        let group = Group::behind();
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let games: Vec<GameDir> = (0..3).map(|g| GameDir::new(tmp.path().join(format!("g{g}")))).collect();
        let total = 2 * Group::MAX + 5;
        for n in 0..total {
            let files = vec![(tmp.path().join(format!("state{n}")), b"s".to_vec())];
            let mut staged = stage(&files, CommitPoint::new(tmp.path().join(format!("record{n}")), b"r".to_vec())).unwrap();
            if n < games.len() {
                fs::create_dir_all(&games[n].root).unwrap();
                fs::write(games[n].game_file(), "").unwrap();
                staged.point.hold = Some(games[n].lock().unwrap());
            }
            let seen = order.clone();
            staged.point.then = Some(Box::new(move || seen.lock().unwrap().push(n)));
            group.add(staged);
        }
        group.flush().unwrap();
        // Every record written, each after its files, in the order they came; every lock released.
        assert_eq!(*order.lock().unwrap(), (0..total).collect::<Vec<_>>());
        assert!((0..total).all(|n| tmp.path().join(format!("record{n}")).is_file()));
        assert!(games.iter().all(|g| g.lock().is_ok()));
        assert!(!group.holds_under(tmp.path()));
    }

    #[test]
    fn once_a_flush_behind_failed_every_later_one_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let group = Group::behind();
        let dir = tmp.path().join("gone");
        let files = vec![(dir.join("state"), b"s".to_vec())];
        group.add(stage(&files, CommitPoint::new(dir.join("record"), b"r".to_vec())).unwrap());
        // Its first file gone, the sync of the flush handed over cannot open it.
        fs::remove_dir_all(&dir).unwrap();
        for n in 1..Group::MAX {
            let ok = vec![(tmp.path().join(format!("state{n}")), b"s".to_vec())];
            group.add(stage(&ok, CommitPoint::new(tmp.path().join(format!("record{n}")), b"r".to_vec())).unwrap());
        }
        let later = vec![(tmp.path().join("late"), b"s".to_vec())];
        group.add(stage(&later, CommitPoint::new(tmp.path().join("late-record"), b"r".to_vec())).unwrap());
        assert!(group.flush().is_err());
        assert!(!dir.join("record").exists() && !tmp.path().join("record1").exists(), "no commit point after a failed sync");
        assert!(!tmp.path().join("late-record").exists(), "nor after a later flush");
        assert!(group.flush().is_err());
    }

    #[test]
    fn once_a_group_flush_failed_every_later_one_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let group = Group::new();
        let dir = tmp.path().join("gone");
        let files = vec![(dir.join("state"), b"s".to_vec())];
        group.add(stage(&files, CommitPoint::new(dir.join("record"), b"r".to_vec())).unwrap());
        // The files it was to make durable are gone: the sync cannot open them.
        fs::remove_dir_all(&dir).unwrap();
        assert!(group.flush().is_err());
        assert!(!dir.join("record").exists(), "no commit point after a failed sync");
        // Later commits are dropped too, and the error stays: the run must stop, not go on.
        let ok = vec![(tmp.path().join("state2"), b"s".to_vec())];
        group.add(stage(&ok, CommitPoint::new(tmp.path().join("record2"), b"r".to_vec())).unwrap());
        assert!(group.flush().is_err());
        assert!(!tmp.path().join("record2").exists());
    }

    #[test]
    fn a_commit_staged_later_writes_its_folders_and_files_at_the_flush_then_its_point() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, index) = (tmp.path().join("receipts").join("000001"), tmp.path().join("index"));
        fs::write(&index, b"a\n").unwrap();
        let mut staged = stage_later(&[(&dir, false)], vec![(dir.join("o.sig"), b"sig".to_vec())], CommitPoint::new(dir.join("o.toml"), b"r".to_vec()));
        staged.also_append(index.clone(), b"b\n".to_vec());
        let group = Group::behind();
        group.add(staged);
        assert!(!dir.exists() && fs::read(&index).unwrap() == b"a\n", "nothing is written before the flush");
        assert!(group.holds_under(tmp.path()));
        group.flush().unwrap();
        assert_eq!(fs::read(dir.join("o.sig")).unwrap(), b"sig");
        assert_eq!(fs::read(dir.join("o.toml")).unwrap(), b"r");
        assert_eq!(fs::read(&index).unwrap(), b"a\nb\n");
    }

    /// A write of one game's commit that fails with an error of that game alone (a file where
    /// its folder is to be made) leaves that game out, with every later commit of it in the run,
    /// and the other games' commits go on (tester t25a-2); one that stops everything (a full
    /// disk) stops the run.
    #[test]
    fn a_write_of_one_game_that_fails_leaves_that_game_out_and_the_others_go_on() {
        let tmp = tempfile::tempdir().unwrap();
        let (bad, good) = (tmp.path().join("bad"), tmp.path().join("good"));
        fs::create_dir(&bad).unwrap();
        fs::create_dir(&good).unwrap();
        fs::write(bad.join("receipts"), b"x").unwrap();
        let commit = |game: &Path, n: u32| {
            let dir = game.join("receipts").join(format!("{n:06}"));
            stage_later(&[(&dir, false)], vec![(dir.join("o.sig"), b"s".to_vec())], CommitPoint::new(dir.join("o.toml"), b"r".to_vec()).of_game(game))
        };
        let group = Group::behind();
        group.add(commit(&bad, 1));
        group.add(commit(&good, 1));
        group.flush().unwrap();
        group.check().unwrap();
        assert!(group.left_out(&bad).is_some_and(|why| why.contains("receipts")), "{:?}", group.left_out(&bad));
        assert!(good.join("receipts/000001/o.toml").is_file() && group.left_out(&good).is_none());
        // Once it is writable again, the game's later commits in this run are still left out
        // (they may rest on the one left out); the next run does them.
        fs::remove_file(bad.join("receipts")).unwrap();
        group.add(commit(&bad, 2));
        group.add(commit(&good, 2));
        group.flush().unwrap();
        assert!(!bad.join("receipts/000002").exists() && good.join("receipts/000002/o.toml").is_file());
        assert_eq!(group.all_left_out().len(), 1);
        group.check().unwrap();
        // A commit point that cannot be written (a folder in its place) leaves its game out too.
        let other = tmp.path().join("other");
        fs::create_dir_all(other.join("receipts/000003/o.toml")).unwrap();
        group.add(commit(&other, 3));
        group.add(commit(&good, 3));
        group.flush().unwrap();
        assert!(group.left_out(&other).is_some() && good.join("receipts/000003/o.toml").is_file());
        // Alone (no group), the failed write is the caller's error.
        fs::write(bad.join("receipts"), b"x").unwrap();
        assert!(commit_all(vec![commit(&bad, 3)]).is_err());
    }

    /// A file hard-linked into a backup (`cp -al`) is appended to as a copy of its own: the
    /// backup keeps what it had.
    #[test]
    fn an_append_never_changes_a_hard_linked_backup() {
        let tmp = tempfile::tempdir().unwrap();
        let (live, backup) = (tmp.path().join("nonces"), tmp.path().join("backup-nonces"));
        fs::write(&live, b"a\n").unwrap();
        fs::hard_link(&live, &backup).unwrap();
        append_unsynced(&live, b"b\n").unwrap();
        append_unsynced(&live, b"c\n").unwrap();
        assert_eq!((fs::read(&live).unwrap(), fs::read(&backup).unwrap()), (b"a\nb\nc\n".to_vec(), b"a\n".to_vec()));
    }

    #[test]
    fn only_a_full_failing_or_read_only_file_system_stops_every_game() {
        let os = |n: i32| io(Path::new("f"), std::io::Error::from_raw_os_error(n));
        for n in [libc::ENOSPC, libc::EDQUOT, libc::EIO, libc::EROFS] {
            assert!(stops_everything(&os(n)), "{n}");
        }
        for n in [libc::EACCES, libc::EPERM, libc::ENOTDIR, libc::EISDIR, libc::ENOENT, libc::EEXIST] {
            assert!(!stops_everything(&os(n)), "{n}");
        }
        assert!(!stops_everything(&Error::input(Path::new("f"), "not a regular file")));
    }

    /// A folder staged for the flush is made with its parent if that is missing, but the game
    /// folder above is not made again once it is gone (deleted or renamed during the run, tester
    /// t25a-4): its commit is left out ([`Group::left_out`]) and writes no commit point.
    #[test]
    fn a_staged_folder_is_not_made_in_a_game_folder_gone_since() {
        let tmp = tempfile::tempdir().unwrap();
        let game = tmp.path().join("g1");
        fs::create_dir(&game).unwrap();
        let dir = game.join("receipts").join("000001");
        let group = Group::behind();
        group.add(stage_later(&[(&dir, false)], vec![(dir.join("o.sig"), b"s".to_vec())], CommitPoint::new(dir.join("o.toml"), b"r".to_vec())));
        group.flush().unwrap();
        assert!(dir.join("o.toml").exists(), "its parent made with it");
        fs::remove_dir_all(&game).unwrap();
        let group = Group::behind();
        group.add(stage_later(&[(&dir, false)], vec![(dir.join("o.sig"), b"s".to_vec())], CommitPoint::new(dir.join("o.toml"), b"r".to_vec()).of_game(&game)));
        group.flush().unwrap();
        assert!(group.left_out(&game).is_some(), "the game is left out of the run");
        assert!(!game.exists(), "the game folder is not made again");
    }

    /// A game folder renamed while its commit waits (here right before its commit point) is not
    /// made again at its old place: the point's write fails, and the game is left out of the run
    /// (tester t25d D3: the receipt was written into a skeleton of the old folder, and answered).
    #[test]
    fn a_commit_point_is_not_written_into_a_game_folder_renamed_since() {
        let tmp = tempfile::tempdir().unwrap();
        let (game, moved) = (tmp.path().join("g2"), tmp.path().join("g2.away"));
        let dir = game.join("receipts").join("000002");
        fs::create_dir_all(&dir).unwrap();
        let group = Group::behind();
        let (from, to) = (game.clone(), moved.clone());
        group.set_veto(std::sync::Arc::new(move |_: &Path| fs::rename(&from, &to).is_ok()));
        group.add(stage_later(&[(&dir, false)], vec![(dir.join("o.sig"), b"s".to_vec())], CommitPoint::new(dir.join("o.toml"), b"r".to_vec()).of_game(&game)));
        group.flush().unwrap();
        assert!(group.left_out(&game).is_some_and(|why| why.contains("g2")), "{:?}", group.all_left_out());
        assert!(!game.exists(), "the old folder is not made again");
        assert!(moved.join("receipts/000002/o.sig").is_file() && !moved.join("receipts/000002/o.toml").exists());
        // Files of a game are written into folders missing below it, never into a new game folder.
        fs::create_dir(&game).unwrap();
        write_atomic_in_game(&game.join("reports/000003/union.txt"), b"r", &game).unwrap();
        fs::remove_dir_all(&game).unwrap();
        assert!(write_atomic_in_game(&game.join("reports/000003/union.txt"), b"r", &game).is_err());
        assert!(!game.exists());
    }

    #[test]
    fn work_handed_over_runs_after_the_flushes_before_it_and_a_failure_stops_what_follows() {
        let tmp = tempfile::tempdir().unwrap();
        let group = Group::behind();
        let point = tmp.path().join("point");
        group.add(stage_later(&[], vec![(tmp.path().join("file"), b"f".to_vec())], CommitPoint::new(point.clone(), b"r".to_vec())));
        let (seen, ran) = (point.clone(), tmp.path().join("ran"));
        // The work sees the commit point of the commit added before it, already written.
        group.then(move || write_atomic(&ran, if seen.exists() { b"after" } else { b"before" })).unwrap();
        group.flush().unwrap();
        assert_eq!(fs::read(tmp.path().join("ran")).unwrap(), b"after");
        group.check().unwrap();
        group.then(|| Err(io(Path::new("x"), std::io::Error::other("refused")))).unwrap();
        let late = tmp.path().join("late");
        let l = late.clone();
        group.then(move || write_atomic(&l, b"l")).unwrap();
        assert!(group.flush().is_err(), "a failed job fails every later flush");
        assert!(!late.exists(), "and the work after it is dropped undone");
        assert!(group.check().is_err());
    }

    #[test]
    #[cfg(unix)]
    fn stale_temps_of_dead_processes_go_and_others_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for (name, aged) in [
            (format!(".state.json.{dead}.3.tmp"), false),
            (format!(".state.json.{me}.4.tmp"), false),
            (".game.toml.Ab3xYz".to_string(), true),
            (".game.toml.Qr5tUv".to_string(), false),
            (".due".to_string(), true),
            (".lock".to_string(), true),
            ("notes.1.2.tmp".to_string(), true),
        ] {
            let f = File::create(d.join(&name)).unwrap();
            if aged {
                f.set_modified(old).unwrap();
            }
        }
        assert_eq!(remove_stale_temps(d).unwrap(), 2);
        let left = list(d).unwrap();
        assert!(!left.contains(&format!(".state.json.{dead}.3.tmp")) && !left.contains(&".game.toml.Ab3xYz".to_string()), "{left:?}");
        assert_eq!(left.len(), 5, "{left:?}");
        assert_eq!(remove_stale_temps(&d.join("absent")).unwrap(), 0);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_batch_writes_whole_files_and_does_not_nest() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a").join("x.txt");
        // The batch is the process's: a test taking mail in on another thread may hold it.
        let batch = Batch::open();
        if batch.is_some() {
            assert!(Batch::open().is_none(), "batches do not nest");
        }
        write_atomic(&a, b"one").unwrap();
        write_atomic(&a, b"two").unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"two");
        // A file removed before the sync is skipped, not an error.
        let gone = tmp.path().join("gone.txt");
        write_atomic(&gone, b"x").unwrap();
        fs::remove_file(&gone).unwrap();
        sync_batch().unwrap();
        drop(batch);
        let names: Vec<String> = list(&tmp.path().join("a")).unwrap();
        assert_eq!(names, vec!["x.txt".to_string()], "no temp file left");
    }
}
