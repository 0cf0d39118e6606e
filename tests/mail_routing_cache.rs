//! The routing cache `ROOT/.mail/games` (`mail::games`): a run reads only the game files its mail
//! needs, yet every change to a game folder is seen by the very next message, and a damaged cache
//! is rebuilt. Run as the real binary.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

struct Host {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    maildir: PathBuf,
    cfg: PathBuf,
    n: u32,
}

impl Host {
    /// Games g1 and g2, quiet long enough that the first run caches them.
    fn new() -> Host {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        new_game(&root, "g1", 72);
        new_game(&root, "g2", 72);
        let cfg = tmp.path().join("pbem-mail.toml");
        std::fs::write(&cfg, "from = \"Judge <judge@example.net>\"\n").unwrap();
        let maildir = tmp.path().join("Maildir");
        for d in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(maildir.join(d)).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_nanos(pbem::due::FRESH_NS as u64 + 200_000_000));
        let mut h = Host { _tmp: tmp, root, maildir, cfg, n: 0 };
        let out = h.intake(&order_mail(&h.root.join("g1"), "union", 1));
        assert!(out.contains("accepted"), "{out}");
        assert!(h.cache().contains("\"g2\""), "the first run caches every game: {}", h.cache());
        h
    }

    fn cache_path(&self) -> PathBuf {
        self.root.join(".mail").join("games")
    }

    fn cache(&self) -> String {
        std::fs::read_to_string(self.cache_path()).unwrap_or_default()
    }

    /// Delivers `mail` and runs intake on it; returns what intake printed.
    fn intake(&mut self, mail: &[u8]) -> String {
        self.n += 1;
        let name = format!("{}.m{}.host", 1_700_000_000 + self.n, self.n);
        std::fs::write(self.maildir.join("tmp").join(&name), mail).unwrap();
        std::fs::rename(self.maildir.join("tmp").join(&name), self.maildir.join("new").join(&name)).unwrap();
        let now = format!("2026-07-01T13:{:02}:00Z", self.n);
        let out = cargo_bin_cmd!("pbem").args(["intake", "--now", &now, "--root"]).arg(&self.root).arg("--maildir").arg(&self.maildir).arg("--config").arg(&self.cfg).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        // Exit 1 only for a message that waits for the host to mend its game's folders.
        let waits = stdout.contains("left for the next run: game");
        assert!(out.status.success() || (out.status.code() == Some(1) && waits), "{:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        stdout
    }

    /// A message with no orders from `from`: answered only when `from` is a seat's address.
    fn hello(&mut self, from: &str) -> String {
        let n = self.n;
        self.intake(format!("From: {from}\nTo: judge@example.net\nSubject: hi\nMessage-ID: <hi-{n}@example.org>\n\nhello\n").as_bytes())
    }
}

fn answered(out: &str) -> bool {
    !out.contains("is not a registered player")
}

fn replace_in(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(file, text.replace(from, to)).unwrap();
}

#[test]
fn a_seat_change_is_seen_by_the_next_message() {
    let mut h = Host::new();
    let g1 = h.root.join("g1");
    cargo_bin_cmd!("pbem").args(["seat"]).arg(&g1).args(["--role", "union", "--email", "grant@example.org", "--now", "2026-07-01T13:30:00Z"]).assert().success();
    let out = h.hello("grant@example.org");
    assert!(answered(&out), "the new seat is answered: {out}");
    // meade@example.org is still a seat in g2, so drop it there by hand too (same length, in place).
    replace_in(&h.root.join("g2").join("game.toml"), "meade@example.org", "mead0@example.org");
    let out = h.hello("meade@example.org");
    assert!(!answered(&out), "an address that is no longer a seat is not answered: {out}");
    let out = h.hello("mead0@example.org");
    assert!(answered(&out), "an address edited in by hand is answered: {out}");
}

#[test]
fn an_order_follows_its_game_through_a_move_a_copy_and_a_new_game() {
    let mut h = Host::new();
    std::fs::rename(h.root.join("g2"), h.root.join("g2-moved")).unwrap();
    let out = h.intake(&order_mail(&h.root.join("g2-moved"), "union", 2));
    assert!(out.contains("accepted") && out.contains("game g2"), "{out}");
    assert!(h.root.join("g2-moved").join("receipts").read_dir().unwrap().count() > 0);
    let copy = std::process::Command::new("cp").arg("-a").arg(h.root.join("g1")).arg(h.root.join("g1-backup")).status().unwrap();
    assert!(copy.success());
    let out = h.intake(&order_mail(&h.root.join("g1"), "confederate", 3));
    assert!(out.contains("held by more than one folder") && !out.contains("accepted"), "{out}");
    std::fs::remove_dir_all(h.root.join("g1-backup")).unwrap();
    new_game(&h.root, "g3", 72);
    let out = h.intake(&order_mail(&h.root.join("g3"), "union", 4));
    assert!(out.contains("accepted") && out.contains("game g3"), "a new game is routed at once: {out}");
    // The copy's message waited and is taken now that one folder holds g1 again.
    let out = h.intake(&order_mail(&h.root.join("g1"), "union", 5));
    assert!(out.matches("accepted").count() >= 2, "{out}");
}

#[test]
fn a_game_file_id_edited_by_hand_reroutes_at_once() {
    let mut h = Host::new();
    // g2's file now says it is game g1: two folders hold g1, and none holds g2.
    replace_in(&h.root.join("g2").join("game.toml"), "id = \"g2\"", "id = \"g1\"");
    let out = h.intake(&order_mail(&h.root.join("g1"), "union", 2));
    assert!(out.contains("held by more than one folder"), "{out}");
}

#[test]
fn a_deleted_corrupt_truncated_or_old_cache_is_rebuilt() {
    let mut h = Host::new();
    let good = h.cache();
    type Damage = fn(&str) -> String;
    let damages: [(&str, Damage); 4] = [
        ("deleted", |_| String::new()),
        // Meade's address swapped for an attacker's, of the same length: the checksum no longer holds.
        ("corrupt", |t| t.replace("meade@example.org", "evil1@example.org")),
        ("truncated", |t| t[..t.len() / 2].to_string()),
        ("old format", |t| t.replacen("pbem-mail-games 1", "pbem-mail-games 0", 1)),
    ];
    for (what, damage) in damages {
        let text = damage(&good);
        if text.is_empty() {
            std::fs::remove_file(h.cache_path()).unwrap();
        } else {
            std::fs::write(h.cache_path(), text).unwrap();
        }
        let out = h.hello("evil1@example.org");
        assert!(!answered(&out), "{what}: a stranger is not answered: {out}");
        let out = h.hello("meade@example.org");
        assert!(answered(&out), "{what}: a seat is answered: {out}");
        assert_eq!(h.cache(), good, "{what}: the cache is written anew");
    }
    // An unchanged root leaves the cache as it is (not rewritten each run), even with a game
    // folder whose file cannot be read (read again each run, never cached).
    std::fs::create_dir_all(h.root.join("zz-broken")).unwrap();
    std::fs::write(h.root.join("zz-broken").join("game.toml"), "not [toml").unwrap();
    // (Inode and change time: a file replaced twice may get its first inode back.)
    let id = |p: &Path| std::fs::metadata(p).map(|m| (std::os::unix::fs::MetadataExt::ino(&m), std::os::unix::fs::MetadataExt::ctime_nsec(&m))).unwrap();
    let before = id(&h.cache_path());
    for _ in 0..2 {
        h.hello("lee@example.org");
        assert_eq!(id(&h.cache_path()), before);
    }
}

#[test]
fn a_cache_with_a_good_checksum_but_wrong_lines_is_dropped_once_a_game_file_disagrees() {
    // Found by tester T11: a line naming other addresses, its checksum made anew, was believed on
    // every run (the game's orders waited for good).
    use sha2::Digest;
    let mut h = Host::new();
    let text = h.cache().replace("meade@example.org", "evil1@example.org");
    let (_, body) = text.split_once('\n').unwrap();
    std::fs::write(h.cache_path(), format!("pbem-mail-games 1 {}\n{body}", hex::encode(sha2::Sha256::digest(body.as_bytes())))).unwrap();
    // The order for g1 reads its file, which disagrees with the line: the order waits, the cache goes.
    let out = h.intake(&order_mail(&h.root.join("g1"), "confederate", 1));
    assert!(out.contains("changed while this run was reading mail"), "{out}");
    assert!(!h.cache_path().exists());
    // The next run reads every game: the order is taken, the seat answered, the stranger not.
    let out = h.hello("meade@example.org");
    assert!(out.contains("accepted") && answered(&out), "{out}");
    assert!(!answered(&h.hello("evil1@example.org")));
    assert!(h.cache().contains("meade@example.org") && !h.cache().contains("evil1"));
}

/// The mails queued in the root's outbox, as (file name, text), by name.
fn queued(root: &Path) -> Vec<(String, String)> {
    let q = root.join(".mail").join("outbox").join("queue");
    let mut names: Vec<String> = std::fs::read_dir(&q).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".mail") || n.ends_with(".eml")).collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), String::from_utf8_lossy(&std::fs::read(q.join(&n)).unwrap()).into_owned())).collect()
}

#[test]
fn a_seat_whose_message_waits_for_the_host_is_told_once() {
    // A message whose game's folder cannot be read waits, unanswered, until the host mends it;
    // its sender heard nothing meanwhile and might think the orders lost (noted in session 16's
    // close note). Now the seat is told once that it waits, and is answered when it is handled.
    let mut h = Host::new();
    let names = |root: &Path| queued(root).into_iter().map(|(n, _)| n).collect::<std::collections::BTreeSet<_>>();
    let file = h.root.join("g1").join("game.toml");
    let good = std::fs::read(&file).unwrap();
    let mail = order_mail(&h.root.join("g1"), "union", 2);
    std::fs::write(&file, "not [toml").unwrap();
    let before = names(&h.root);
    let out = h.intake(&mail);
    assert!(out.contains("left for the next run") && out.contains("the sender was told it waits"), "{out}");
    let new: Vec<_> = queued(&h.root).into_iter().filter(|(n, _)| !before.contains(n)).collect();
    assert_eq!(new.len(), 1, "one notice: {new:?}");
    let text = &new[0].1;
    assert!(text.contains("To: meade@example.org") && text.contains("Subject: Re: your message (it waits for the host)") && text.contains("needs the host's attention"), "{text}");
    assert!(text.contains("In-Reply-To: <union-2@example.org>"), "it answers the message: {text}");
    for secret in ["[pbem]", "game.toml", "not [toml", "Re: orders", h.root.to_str().unwrap()] {
        assert!(!text.contains(secret), "the notice quotes nothing of the message (not its subject) nor the host's files ({secret}): {text}");
    }
    // The next run finds the message still waiting: no second notice.
    let out = h.hello("nobody@example.org");
    assert!(out.contains("the sender was told it waits"), "{out}");
    assert_eq!(names(&h.root).len(), before.len() + 1, "told once");
    // Mended: the message is handled and answered with its receipt.
    std::fs::write(&file, &good).unwrap();
    let out = h.hello("nobody@example.org");
    assert!(out.contains("1 of 1 order file(s) accepted"), "{out}");
    assert_eq!(names(&h.root).len(), before.len() + 2, "the reply");
    // A sender whose every game is unreadable is known by the routing cache alone: told too
    // (tester t18c-1: only a seat of a readable game was).
    let mail = order_mail(&h.root.join("g2"), "union", 3);
    let stranger = String::from_utf8(order_mail(&h.root.join("g2"), "union", 4)).unwrap().replace("From: meade@example.org", "From: nosy@example.com").replace("<union-4@", "<nosy-4@");
    let seat = order_mail(&h.root.join("g2"), "union", 5);
    let file2 = h.root.join("g2").join("game.toml");
    for f in [&file, &file2] {
        std::fs::write(f, "not [toml").unwrap();
    }
    let out = h.intake(&mail);
    assert!(out.contains("the sender was told it waits"), "{out}");
    assert_eq!(names(&h.root).len(), before.len() + 3, "the notice");
    // A seat's message held back behind a stranger's for the same game is told too (tester
    // t18c-2: the stranger's, which is never answered, kept the seat from being told).
    std::fs::write(h.maildir.join("new").join("1690000001.a.host"), stranger).unwrap();
    std::fs::write(h.maildir.join("new").join("1690000002.b.host"), seat).unwrap();
    let out = h.hello("nobody@example.org");
    assert!(out.lines().any(|l| l.contains("1690000002.b.host") && l.contains("an earlier message for the same game waits; the sender was told it waits")), "{out}");
    assert!(!out.lines().any(|l| l.contains("1690000001.a.host") && l.contains("told")), "the stranger is not: {out}");
    assert_eq!(names(&h.root).len(), before.len() + 4, "one notice more");
}
