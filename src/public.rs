//! The public copy of a game as one tar archive (`pbem public`), and reading such an archive back
//! into a fresh temporary folder for `pbem audit FILE` and `pbem publish`.
//!
//! The archive holds exactly what README "What is public" calls public at any time: `game.toml`,
//! `scenario.toml`, `records/` and `receipts/` (each file with its `.sig`), under one folder named
//! by the game id. Never `host/`, `states/` or `reports/`; a withheld step's orders are in a record
//! only as commitments, so nothing of it leaks. Its bytes depend only on those files (sorted
//! names, no times, owners or modes of the machine), so the same game gives the same archive.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::pipeline;
use crate::store::{self, GameDir};

/// The most an archive given to [`unpack`] may hold once unpacked (a tar bomb is refused).
pub const MAX_UNPACKED_BYTES: u64 = 1 << 30;

/// The most entries an archive given to [`unpack`] may hold.
pub const MAX_ENTRIES: u64 = 1_000_000;

/// The public files of the game in `dir` as (path inside the game folder, bytes), in archive
/// order: game.toml, scenario.toml, every record with its signature, then the receipts of every
/// step a record opened. Read records first, receipts after: a step resolved meanwhile adds
/// nothing the records read do not already open (its receipts were all there before its record).
///
/// Each file is read only if it is a regular file itself, never through a symbolic link
/// ([`store::read_no_link`]), and each receipt only if it reads as the receipt its name and
/// folder say: a link or a copy planted among the receipts (a sealed order of the open step) is
/// refused, naming it, and nothing is handed out (tester20 T20b-1).
pub fn public_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let gd = GameDir::new(dir);
    pipeline::read_game_file(&gd)?;
    let last = gd.last_record()?.ok_or_else(|| Error::input(gd.record(0), "missing: the game has no records"))?;
    let mut out = vec![("game.toml".to_string(), store::read_no_link(&gd.game_file())?), ("scenario.toml".to_string(), store::read_no_link(&gd.scenario_file())?)];
    let mut open_step = last;
    for n in 0..=last {
        let path = gd.record(n);
        let bytes = store::read_no_link(&path)?;
        if n == last && pipeline::read_record(&gd, n)?.opening.is_some() {
            open_step = last + 1;
        }
        let name = format!("records/{:06}.json", n);
        out.push((format!("{name}.sig"), store::read_no_link(&pipeline::sig_path(&path))?));
        out.push((name, bytes));
    }
    for step in 1..=open_step {
        let rdir = gd.receipts(step);
        if std::fs::symlink_metadata(&rdir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::input(&rdir, "a symbolic link, not a folder pbem made: not read (a public copy holds only files; tester22 T22a-3)"));
        }
        for name in store::list(&rdir)?.into_iter().filter(|n| n.ends_with(".toml")) {
            // A receipt's signature is written before the receipt (the commit point), so a
            // receipt without it is damaged or planted: refused, as the audit refuses it, not left
            // out of a copy that would then audit clean (tester t18b-3). A link is refused too.
            let (path, sig) = (rdir.join(&name), rdir.join(format!("{name}.sig")));
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Error::input(&path, "a symbolic link, not a file pbem wrote: not read (remove it; a public copy holds only files)"));
            }
            if std::fs::symlink_metadata(&sig).is_err() {
                return Err(Error::input(&sig, "missing: the receipt beside it is not signed (damaged, or not pbem's); nothing handed out"));
            }
            let bytes = store::read_no_link(&path)?;
            check_receipt(&path, &bytes, step, &name)?;
            let rel = format!("receipts/{:06}/{name}", step);
            out.push((format!("{rel}.sig"), store::read_no_link(&sig)?));
            out.push((rel, bytes));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// That `bytes`, read from `path` (`receipts/STEP/NAME`), are the receipt its place names: a
/// receipt of `step` for the role and number of `name` (`ROLE-SEQ.toml`).
fn check_receipt(path: &Path, bytes: &[u8], step: u64, name: &str) -> Result<()> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::input(path, "not a receipt: not UTF-8 text; not handed out"))?;
    let r = crate::model::parse_receipt(path, text)?;
    if r.step != step || name != format!("{}-{}.toml", r.role, r.seq) {
        return Err(Error::input(path, format!("a receipt of {} in step {} (number {}) under another name: not handed out", r.role, r.step, r.seq)));
    }
    Ok(())
}

/// The public copy of the game in `dir` as a tar archive (its bytes): [`public_files`] under a
/// folder named by the game id, each a plain file of mode 0644, owner 0, time 0. What a player's
/// `public` mail command and `pbem publish` hand out.
///
/// Errors: the game's files cannot be read (naming the file).
pub fn public_archive(dir: &Path) -> Result<Vec<u8>> {
    let id = pipeline::read_game_file(&GameDir::new(dir))?.id;
    let mut b = tar::Builder::new(Vec::new());
    for (rel, bytes) in public_files(dir)? {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        let path = format!("{id}/{rel}");
        b.append_data(&mut h, &path, bytes.as_slice()).map_err(|e| Error::input(dir, format!("cannot archive {path}: {e}")))?;
    }
    b.into_inner().map_err(|e| Error::input(dir, format!("cannot finish the archive: {e}")))
}

/// A public copy unpacked into a temporary folder, removed when this is dropped. While it
/// lives, the folder's `.lock` is held: a run killed before the drop leaves a folder whose lock
/// nobody holds, and the next unpack removes it ([`sweep_stale`]).
pub struct Unpacked {
    tmp: tempfile::TempDir,
    /// The game folder inside it.
    pub game: PathBuf,
    archive: PathBuf,
    _lock: std::fs::File,
}

impl Unpacked {
    /// `message` with the temporary folder's path replaced by the archive's name
    /// (`game.tar:ID/records/000003.json: ...`), so that a failure names the file in the archive.
    pub fn rename(&self, message: &str) -> String {
        let tmp = format!("{}/", self.tmp.path().display());
        message.replace(&tmp, &format!("{}:", self.archive.display()))
    }
}

/// The name every unpacked public copy's temporary folder starts with.
const TEMP_PREFIX: &str = "pbem-public-";

/// How long a temporary folder without a `.lock` is left alone before [`sweep_stale`] takes it
/// for abandoned (a day: far longer than making one takes).
const ABANDONED: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Removes the temporary folders of public copies whose unpacking run has ended without removing
/// them (killed, or interrupted by a signal): a folder whose `.lock` nobody holds. A folder
/// still being made has no `.lock` yet (it is put in place already locked) and is left alone
/// until it has been unchanged for [`ABANDONED`] (a run killed while making it, or a folder of an
/// older pbem): then it goes too if it belongs to `owner` (the user id of this run's files).
/// Anything that cannot be read or removed (another user's) is left alone.
pub fn sweep_stale(temp: &Path, owner: u32) {
    let Ok(list) = std::fs::read_dir(temp) else { return };
    for e in list.flatten() {
        let dir = e.path();
        if !e.file_name().to_string_lossy().starts_with(TEMP_PREFIX) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let stale = match std::fs::File::open(dir.join(".lock")) {
            Ok(lock) => lock.try_lock().is_ok(),
            Err(_) => abandoned(&dir, owner),
        };
        if stale {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// `dir` belongs to `owner` and has not changed for [`ABANDONED`].
fn abandoned(dir: &Path, owner: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(dir) else { return false };
    let age = m.modified().ok().and_then(|t| t.elapsed().ok());
    m.uid() == owner && age.is_some_and(|a| a > ABANDONED)
}

/// A fresh temporary folder for an unpacked copy, its `.lock` held (made under another name,
/// locked, then renamed into place, so a sweep never sees it unlocked); stale ones of the same
/// owner as it are swept then.
fn locked_tempdir() -> Result<(tempfile::TempDir, std::fs::File)> {
    use std::os::unix::fs::MetadataExt;
    let temp = std::env::temp_dir();
    let tmp = tempfile::Builder::new().prefix(TEMP_PREFIX).tempdir_in(&temp).map_err(|e| store::io(&temp, e))?;
    let (making, lock) = (tmp.path().join(".lock.new"), tmp.path().join(".lock"));
    let f = std::fs::File::create(&making).map_err(|e| store::io(&making, e))?;
    f.lock().map_err(|e| store::io(&making, e))?;
    std::fs::rename(&making, &lock).map_err(|e| store::io(&lock, e))?;
    if let Ok(m) = std::fs::metadata(tmp.path()) {
        sweep_stale(&temp, m.uid());
    }
    Ok((tmp, f))
}

/// True for a path a public copy may hold, inside its game folder: `game.toml`, `scenario.toml`,
/// `records/NNNNNN.json(.sig)`, `receipts/NNNNNN/ROLE-K.toml(.sig)`.
fn public_shape(parts: &[&str]) -> bool {
    let six = |s: &str| s.len() == 6 && s.bytes().all(|b| b.is_ascii_digit());
    let receipt = |name: &str| {
        let stem = name.strip_suffix(".toml.sig").or_else(|| name.strip_suffix(".toml"));
        stem.and_then(|s| s.rsplit_once('-')).is_some_and(|(role, k)| !role.is_empty() && !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
    };
    match parts {
        ["game.toml"] | ["scenario.toml"] => true,
        ["records", name] => name.strip_suffix(".json.sig").or_else(|| name.strip_suffix(".json")).is_some_and(six),
        ["receipts", step, name] => six(step) && receipt(name),
        _ => false,
    }
}

/// Unpacks the public copy in the tar archive `archive` into a fresh temporary folder (the
/// content is public, so the system's temporary folder is fine). The archive is listed first and
/// nothing is written unless the listing passes ([`list`]); only plain files under one game
/// folder, in the shapes of a public copy, are accepted: anything else (`host/`, links, `..`, a
/// second folder) is refused, as is an archive larger than [`MAX_UNPACKED_BYTES`] unpacked.
///
/// Errors: [`Error::Input`] naming the archive and the entry.
pub fn unpack(archive: &Path) -> Result<Unpacked> {
    // Opened once and rewound between the passes, so the list checked is the archive unpacked
    // even if the path is replaced meanwhile.
    let mut file = std::fs::File::open(archive).map_err(|e| store::io(archive, e))?;
    let rewind = |file: &mut std::fs::File| file.seek(SeekFrom::Start(0)).map_err(|e| store::io(archive, e));
    let mut head = [0u8; 6];
    let n = file.read(&mut head).map_err(|e| store::io(archive, e))?;
    refuse_compressed(&head[..n], archive)?;
    rewind(&mut file)?;
    list(&mut file, archive)?;
    rewind(&mut file)?;
    unpack_reader(file, archive)
}

/// [`unpack`] of an archive held in memory; `name` stands for it in messages.
pub fn unpack_bytes(bytes: &[u8], name: &Path) -> Result<Unpacked> {
    refuse_compressed(&bytes[..bytes.len().min(6)], name)?;
    list(bytes, name)?;
    unpack_reader(bytes, name)
}

/// A compressed archive (`GAME.tar.gz` and the like, by its first bytes) is refused by name: a
/// public copy is a plain tar, and the tar reader would only say that a header is damaged.
fn refuse_compressed(head: &[u8], archive: &Path) -> Result<()> {
    let kind = [(&b"\x1f\x8b"[..], "gzip", "gunzip"), (b"BZh", "bzip2", "bunzip2"), (b"\xfd7zXZ", "xz", "unxz"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd")];
    match kind.iter().find(|(magic, _, _)| head.starts_with(magic)) {
        Some((_, name, tool)) => Err(Error::input(archive, format!("a {name}-compressed archive: pbem reads a plain tar (the public copy as `pbem public` writes it); uncompress it first (`{tool}`)"))),
        None => Ok(()),
    }
}

/// One entry of an archive that may be unpacked: its path inside the game folder's parent split
/// in parts, or `None` for a folder (skipped). Refuses what a public copy never holds.
fn entry_parts<R: Read>(entry: &tar::Entry<'_, R>, n: u64, bad: &dyn Fn(String) -> Error) -> Result<Option<Vec<String>>> {
    let path = entry.path().map_err(|e| bad(format!("entry {n}: {e}")))?;
    let shown = path.display().to_string();
    let kind = entry.header().entry_type();
    if kind.is_dir() {
        return Ok(None);
    }
    if !kind.is_file() {
        return Err(bad(format!("{shown}: not a plain file (a public copy holds only files)")));
    }
    let parts: Option<Vec<&str>> = path.components().map(|c| match c {
        Component::Normal(s) => s.to_str(),
        _ => None,
    }).collect();
    match parts.filter(|p| p.len() >= 2 && !p[0].starts_with('.') && public_shape(&p[1..])) {
        Some(p) => Ok(Some(p.iter().map(|s| s.to_string()).collect())),
        None => Err(bad(format!("{shown}: not a file of a public copy (GAME/game.toml, GAME/scenario.toml, GAME/records/NNNNNN.json, GAME/receipts/NNNNNN/ROLE-K.toml, each with its .sig)"))),
    }
}

/// Lists the archive without writing anything: every entry a file of a public copy, of one game
/// folder, none twice, within [`MAX_ENTRIES`] and [`MAX_UNPACKED_BYTES`]; `game.toml`,
/// `scenario.toml` and record 0 there, records numbered without gaps, and receipts only for
/// steps a record there can open. Returns the game folder's name.
pub fn list(file: impl Read, archive: &Path) -> Result<String> {
    let bad = |what: String| Error::input(archive, what);
    let mut ar = tar::Archive::new(file);
    let mut names = std::collections::BTreeSet::new();
    let mut game: Option<String> = None;
    let (mut total, mut count) = (0u64, 0u64);
    for entry in ar.entries().map_err(|e| bad(format!("not a tar archive: {e}")))? {
        let entry = entry.map_err(|e| bad(format!("not a tar archive: {e}")))?;
        count += 1;
        let Some(parts) = entry_parts(&entry, count, &bad)? else { continue };
        match &game {
            None => game = Some(parts[0].clone()),
            Some(g) if *g != parts[0] => return Err(bad(format!("{}: a second game folder (the archive holds {g})", parts.join("/")))),
            Some(_) => {}
        }
        total = total.saturating_add(entry.header().size().unwrap_or(u64::MAX));
        if total > MAX_UNPACKED_BYTES || count > MAX_ENTRIES {
            return Err(bad(format!("larger than a public copy may be ({MAX_UNPACKED_BYTES} bytes, {MAX_ENTRIES} files)")));
        }
        if !names.insert(parts[1..].join("/")) {
            return Err(bad(format!("{}: twice in the archive", parts.join("/"))));
        }
    }
    let game = game.ok_or_else(|| bad("holds no game (no GAME/game.toml)".into()))?;
    check_listed(&names, &game, &bad)?;
    Ok(game)
}

/// The listing's names (inside the game folder) hold what every public copy holds, and no
/// receipts of a step past the records.
fn check_listed(names: &std::collections::BTreeSet<String>, game: &str, bad: &dyn Fn(String) -> Error) -> Result<()> {
    for must in ["game.toml", "scenario.toml", "records/000000.json"] {
        if !names.contains(must) {
            return Err(bad(format!("{game}/{must}: missing")));
        }
    }
    let records = names.iter().filter(|n| n.starts_with("records/") && n.ends_with(".json")).count() as u64;
    if let Some(gap) = (0..records).find(|n| !names.contains(&format!("records/{n:06}.json"))) {
        return Err(bad(format!("{game}/records/{gap:06}.json: missing (records are numbered without gaps)")));
    }
    let step = |n: &str| n.strip_prefix("receipts/").and_then(|r| r.get(..6)).and_then(|s| s.parse::<u64>().ok());
    if let Some(past) = names.iter().filter_map(|n| step(n)).find(|&s| s == 0 || s > records) {
        return Err(bad(format!("{game}/receipts/{past:06}: receipts for a step no record in the archive opens (it holds {records} records)")));
    }
    Ok(())
}

/// Writes the entries of an archive [`list`] passed into a fresh locked temporary folder.
fn unpack_reader(file: impl Read, archive: &Path) -> Result<Unpacked> {
    let (tmp, lock) = locked_tempdir()?;
    let bad = |what: String| Error::input(archive, what);
    let mut ar = tar::Archive::new(file);
    let mut game: Option<String> = None;
    let mut count = 0u64;
    for entry in ar.entries().map_err(|e| bad(format!("not a tar archive: {e}")))? {
        let mut entry = entry.map_err(|e| bad(format!("not a tar archive: {e}")))?;
        count += 1;
        let Some(parts) = entry_parts(&entry, count, &bad)? else { continue };
        game.get_or_insert_with(|| parts[0].clone());
        let shown = parts.join("/");
        let mut bytes = Vec::new();
        (&mut entry).take(MAX_UNPACKED_BYTES + 1).read_to_end(&mut bytes).map_err(|e| bad(format!("{shown}: {e}")))?;
        let dest = parts.iter().fold(tmp.path().to_path_buf(), |p, s| p.join(s));
        store::make_dirs(dest.parent().unwrap_or(tmp.path()), false)?;
        std::fs::write(&dest, &bytes).map_err(|e| store::io(&dest, e))?;
    }
    let game = tmp.path().join(game.ok_or_else(|| bad("holds no game (no GAME/game.toml)".into()))?);
    if !game.join("game.toml").is_file() {
        return Err(bad(format!("{}: missing", Path::new(game.file_name().unwrap_or_default()).join("game.toml").display())));
    }
    Ok(Unpacked { tmp, game, archive: archive.to_path_buf(), _lock: lock })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, bytes) in entries {
            // The name written as it is (the builder itself refuses `..`).
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.as_gnu_mut().unwrap().name[..p.len()].copy_from_slice(p.as_bytes());
            h.set_cksum();
            b.append(&h, *bytes).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn unpack_bytes(bytes: &[u8]) -> std::result::Result<Unpacked, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.tar");
        std::fs::write(&p, bytes).unwrap();
        unpack(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn a_compressed_archive_is_refused_by_name() {
        // `pbem audit GAME.tar.gz` said only "numeric field did not have utf-8 text".
        let gz = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0];
        let e = unpack_bytes(&gz).err().unwrap();
        assert!(e.contains("a gzip-compressed archive") && e.contains("`gunzip`"), "{e}");
        let e = super::unpack_bytes(b"BZh91AY&SY", Path::new("g.tar.bz2")).err().unwrap().to_string();
        assert!(e.contains("g.tar.bz2") && e.contains("bzip2-compressed"), "{e}");
    }

    #[test]
    fn only_the_files_of_a_public_copy_unpack() {
        let base: [(&str, &[u8]); 3] = [("g/game.toml", b"x"), ("g/scenario.toml", b"x"), ("g/records/000000.json", b"{}")];
        let ok = unpack_bytes(&tar_of(&base)).unwrap();
        assert!(ok.game.join("records/000000.json").is_file());
        assert!(ok.tmp.path().join(".lock").is_file());
        for (path, why) in [
            ("g/host/host_key", "not a file of a public copy"),
            ("g/states/000001.json", "not a file of a public copy"),
            ("g/records/../../evil", "not a file of a public copy"),
            ("g/records/notes.txt", "not a file of a public copy"),
            ("g/receipts/000001/union.toml", "not a file of a public copy"),
            ("g/receipts/1/union-1.toml", "not a file of a public copy"),
            ("g/receipts/000002/union-1.toml", "g/receipts/000002: receipts for a step no record in the archive opens"),
            ("g/records/000002.json", "g/records/000001.json: missing"),
            ("g/game.toml", "g/game.toml: twice in the archive"),
            (".g/game.toml", "not a file of a public copy"),
            ("h/game.toml", "a second game folder"),
        ] {
            let mut entries = base.to_vec();
            entries.push((path, b"secret"));
            let e = unpack_bytes(&tar_of(&entries)).err().unwrap();
            assert!(e.contains(why), "{path}: {e}");
        }
        let e = unpack_bytes(&tar_of(&base[1..])).err().unwrap();
        assert!(e.contains("g/game.toml: missing"), "{e}");
        assert!(unpack_bytes(b"not a tar at all, just some text that is not 512 bytes").is_err());
        assert!(unpack_bytes(&tar_of(&[])).err().unwrap().contains("holds no game"));
    }
}
