//! `pbem public` (the public copy as one archive, audited by `pbem audit FILE`) and `pbem publish`
//! (the static site built from it): only public files, nothing of a withheld step, well-formed
//! pages whose links all resolve, the same bytes every time, nothing else in the site touched.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const EXAMPLE: &str = "turns/demo-gettysburg-campaign-18630701";

fn pbem() -> Command {
    Command::cargo_bin("pbem").unwrap()
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(EXAMPLE)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The entry names of a tar archive.
fn entries(archive: &[u8]) -> Vec<String> {
    let mut ar = tar::Archive::new(archive);
    ar.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect()
}

/// Every file under `dir` as (path relative to it, bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().display().to_string(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn the_public_copy_holds_only_public_files_and_audits_as_an_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.tar"), tmp.path().join("b.tar"));
    pbem().arg("public").arg(example()).arg("--out").arg(&a).assert().success();
    pbem().arg("public").arg(example()).arg("--out").arg(&b).assert().success();
    let bytes = fs::read(&a).unwrap();
    assert_eq!(bytes, fs::read(&b).unwrap(), "the same game gives the same archive, byte for byte");
    let names = entries(&bytes);
    let id = "demo-gettysburg-campaign-18630701";
    assert!(names.contains(&format!("{id}/game.toml")) && names.contains(&format!("{id}/records/{:06}.json.sig", last_record())) && names.contains(&format!("{id}/receipts/{:06}/union-1.toml", last_record())));
    for n in &names {
        let rest = n.strip_prefix(&format!("{id}/")).unwrap_or_else(|| panic!("{n}: outside the game folder"));
        let public = rest == "game.toml" || rest == "scenario.toml" || rest.starts_with("records/") || rest.starts_with("receipts/");
        assert!(public, "{n} is not a public file");
    }
    let out = pbem().arg("audit").arg(&a).assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains(&format!("audit passed: {} records", last_record() + 1)) && out.contains("a public copy"), "{out}");

    // An archive with one byte of a record changed fails, naming the file inside the archive.
    let needle = b"\"index\": 5,";
    let at = bytes.windows(needle.len()).position(|w| w == needle).unwrap();
    let mut bad = bytes.clone();
    bad[at + 10] = b'6';
    let bad_path = tmp.path().join("bad.tar");
    fs::write(&bad_path, &bad).unwrap();
    let err = pbem().arg("audit").arg(&bad_path).assert().failure().get_output().stderr.clone();
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains(&format!("{}:{id}/records/000005.json", bad_path.display())), "{err}");
    assert!(!err.contains("pbem-public-"), "no temporary path in the message: {err}");
}

/// A mistyped archive (or folder) name is said to be missing, not to be no game directory.
#[test]
fn auditing_a_missing_archive_says_it_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nosuch.tar");
    let err = pbem().arg("audit").arg(&missing).assert().code(1).get_output().stderr.clone();
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains(&format!("{}: no such game directory or public copy (file not found)", missing.display())), "{err}");
    assert!(!err.contains("game.toml"), "{err}");
}

/// The example game's newest record (regenerating the example changes its length).
fn last_record() -> u64 {
    (0..).take_while(|n| example().join(format!("records/{n:06}.json")).is_file()).count() as u64 - 1
}

/// The first record of the example game that withholds orders (`withheld_until`).
fn first_withheld() -> u64 {
    (0..=last_record()).find(|n| fs::read_to_string(example().join(format!("records/{n:06}.json"))).unwrap().contains("\"withheld_until\"")).expect("the example game withholds orders once")
}

/// The example game cut after record `last` (as it stood then, mid-game), in `tmp`.
fn cut_example(tmp: &Path, last: u64) -> PathBuf {
    let dir = tmp.join("demo-gettysburg-campaign-18630701");
    copy_tree(&example(), &dir);
    for n in last + 1..=last_record() {
        for ext in ["json", "json.sig"] {
            fs::remove_file(dir.join(format!("records/{n:06}.{ext}"))).unwrap();
        }
    }
    dir
}

#[test]
fn a_site_made_mid_game_shows_nothing_of_a_withheld_step() {
    // Record W withholds both sides' orders until the game's end (an initiative tie, §7); the
    // last record reveals them. Cut after record W + 1, the public copy holds their commitments only.
    let w = first_withheld();
    let cut = w + 1;
    assert!(cut < last_record(), "the example game withholds orders at record {w}, too late to cut after");
    let tmp = tempfile::tempdir().unwrap();
    let game = cut_example(tmp.path(), cut);
    let last: serde_json::Value = serde_json::from_slice(&fs::read(example().join(format!("records/{:06}.json", last_record()))).unwrap()).unwrap();
    let secrets: Vec<String> = last["reveals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["step"].as_u64().unwrap() <= cut)
        .map(|r| r["text"].as_str().unwrap().lines().find(|l| l.starts_with("nonce")).unwrap().to_string())
        .collect();
    assert_eq!(secrets.len(), 2);
    let site = tmp.path().join("site");
    let out = pbem().arg("publish").arg(&game).arg("--out").arg(&site).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8(out).unwrap().contains(&format!("record {w} on show their commitments only")));
    let all = files(&site);
    assert!(all.contains_key(&format!("demo-gettysburg-campaign-18630701/step-{cut}.html")) && !all.contains_key(&format!("demo-gettysburg-campaign-18630701/step-{}.html", cut + 1)));
    for (name, bytes) in &all {
        for s in &secrets {
            let hit = bytes.windows(s.len()).any(|w| w == s.as_bytes());
            assert!(!hit, "{name} shows withheld orders ({s})");
        }
    }
    let withheld = String::from_utf8(all[&format!("demo-gettysburg-campaign-18630701/step-{w}.html")].clone()).unwrap();
    assert!(withheld.contains("only the commitment is public yet"), "{withheld}");
    let game_page = String::from_utf8(all["demo-gettysburg-campaign-18630701/index.html"].clone()).unwrap();
    assert!(game_page.contains(&format!("Step {} is open", cut + 1)) && game_page.contains("id=\"secret\""), "{game_page}");

    // The whole game, published over it, reveals them: the site grows, nothing stale is kept.
    let out = pbem().arg("publish").arg(example()).arg("--out").arg(&site).assert().success().get_output().stdout.clone();
    assert!(!String::from_utf8(out).unwrap().contains("commitments only"));
    let page = fs::read_to_string(site.join(format!("demo-gettysburg-campaign-18630701/step-{w}.html"))).unwrap();
    assert!(secrets.iter().all(|s| page.contains(&s.replace('"', "&quot;"))), "revealed at the end: {page}");
}

/// A page's local links (href, src) and ids, checked as well-formed XHTML by a strict XML parser.
fn read_page(name: &str, text: &str) -> (Vec<String>, BTreeSet<String>) {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(text);
    let (mut links, mut ids) = (Vec::new(), BTreeSet::new());
    loop {
        match r.read_event().unwrap_or_else(|e| panic!("{name}: not well-formed at byte {}: {e}", r.buffer_position())) {
            Event::Start(e) | Event::Empty(e) => {
                for a in e.attributes() {
                    let a = a.unwrap_or_else(|err| panic!("{name}: bad attribute: {err}"));
                    let v = a.value.to_string();
                    match a.key.as_ref() {
                        "href" | "src" => links.push(v),
                        "id" => assert!(ids.insert(v.clone()), "{name}: id {v} twice"),
                        _ => {}
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // Only the five XML entities and numeric ones (an HTML-only entity like &nbsp; is not XML).
    for (i, _) in text.match_indices('&') {
        let rest = &text[i + 1..];
        let ok = ["amp;", "lt;", "gt;", "quot;", "apos;", "#"].iter().any(|p| rest.starts_with(p));
        assert!(ok, "{name}: a stray & at byte {i}");
    }
    (links, ids)
}

#[test]
fn every_page_is_well_formed_and_every_link_resolves() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    fs::create_dir_all(&site).unwrap();
    fs::write(site.join("notes.txt"), "the host's own file").unwrap();
    pbem().arg("publish").arg(example()).arg("--out").arg(&site).assert().success();
    let all = files(&site);
    assert_eq!(all["notes.txt"], b"the host's own file", "nothing else in the site is touched");
    let mut pages = BTreeMap::new();
    for (name, bytes) in all.iter().filter(|(n, _)| n.ends_with(".html")) {
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(text.starts_with("<!DOCTYPE html>"), "{name}");
        assert!(!text.contains("<script"), "{name}: no scripts");
        pages.insert(name.clone(), read_page(name, text));
    }
    for (name, (links, _)) in &pages {
        let base = Path::new(name).parent().unwrap();
        for l in links {
            assert!(!l.contains("://"), "{name}: {l} leaves the site (it must work from file://)");
            let (file, frag) = l.split_once('#').unwrap_or((l, ""));
            let target = if file.is_empty() { PathBuf::from(name) } else { normal(&base.join(file)) };
            let t = target.display().to_string();
            assert!(all.contains_key(&t), "{name}: link {l} to {t}, which is not in the site");
            if !frag.is_empty() {
                assert!(pages[&t].1.contains(frag), "{name}: link {l}: no id {frag} in {t}");
            }
        }
    }
    // Every record's page has its picture element; once the game draws the board, the picture.
    let game = pbem::games::by_rules("gettysburg-campaign").unwrap();
    for n in 0..=last_record() {
        let name = format!("demo-gettysburg-campaign-18630701/step-{n}.html");
        let text = std::str::from_utf8(&all[&name]).unwrap();
        assert!(pages[&name].1.contains("picture"), "{name}: no picture element");
        let state = fs::read_to_string(example().join(format!("states/{n:06}.json"))).unwrap();
        if game.picture(&state, None, false).unwrap().is_some() {
            assert!(text.contains(&format!("<img src=\"step-{n}.svg\"")), "{name}: the game draws this board, the page must show it");
        }
    }
    // Published again: the same bytes, nothing rewritten.
    let out = pbem().arg("publish").arg(example()).arg("--out").arg(&site).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8(out).unwrap().contains(" 0 files changed"));
    assert_eq!(files(&site), all);
    // The downloaded copy audits.
    pbem().arg("audit").arg(site.join("demo-gettysburg-campaign-18630701/demo-gettysburg-campaign-18630701.tar")).assert().success();
}

/// `a/b/../c` as `a/c`.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

#[test]
fn a_game_failing_its_audit_is_not_published() {
    let tmp = tempfile::tempdir().unwrap();
    let game = cut_example(tmp.path(), last_record());
    let rec = game.join("records/000004.json");
    let text = fs::read_to_string(&rec).unwrap();
    fs::write(&rec, text.replacen("rolled", "rolls", 1)).unwrap();
    let site = tmp.path().join("site");
    let err = pbem().arg("publish").arg(&game).arg("--out").arg(&site).assert().failure().get_output().stderr.clone();
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains("not published") && err.contains("records/000004.json"), "{err}");
    assert!(!site.exists(), "nothing written");
}

#[test]
fn publish_all_lists_every_game_and_says_which_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    cut_example(&root, 3);
    fs::create_dir_all(root.join("broken")).unwrap();
    fs::write(root.join("broken/game.toml"), "id = 3\n").unwrap();
    let site = tmp.path().join("site");
    let a = pbem().arg("publish").arg("--all").arg(&root).arg("--out").arg(&site).assert().code(1);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("broken: not published") && err.contains("game.toml"), "{err}");
    let index = fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("demo-gettysburg-campaign-18630701/index.html") && index.contains("Step 4 is open"), "{index}");
    assert!(!index.contains("broken"));
}

#[test]
fn a_failed_audit_of_a_game_to_publish_is_said_once_naming_the_file_in_its_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let game = tmp.path().join("demo-gettysburg-campaign-18630701");
    copy_tree(&example(), &game);
    let rec = game.join("records/000004.json");
    let text = fs::read_to_string(&rec).unwrap();
    fs::write(&rec, text.replacen("\"game\"", "\"gamE\"", 1)).unwrap();
    let site = tmp.path().join("site");
    let err = pbem().arg("publish").arg(&game).arg("--out").arg(&site).assert().failure().get_output().stderr.clone();
    let err = String::from_utf8(err).unwrap();
    assert_eq!(err.matches("audit failed: ").count(), 1, "{err}");
    let id = "demo-gettysburg-campaign-18630701";
    assert!(err.contains(&format!("not published: audit failed: {id}.tar:{id}/records/000004.json: not a record: unknown field `gamE`")), "{err}");
    assert!(!site.exists(), "nothing written");
}

/// An archive of `names` (each an empty file).
fn tar_of_names(names: &[String]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for n in names {
        let mut h = tar::Header::new_gnu();
        h.set_size(0);
        h.set_mode(0o644);
        b.append_data(&mut h, n, &[][..]).unwrap();
    }
    b.into_inner().unwrap()
}

#[test]
fn an_archive_is_listed_before_anything_is_unpacked_and_no_temporary_folder_outlives_its_audit() {
    let tmp = tempfile::tempdir().unwrap();
    let temp = tmp.path().join("tmp");
    fs::create_dir(&temp).unwrap();
    let audit = |archive: &Path| pbem().env("TMPDIR", &temp).arg("audit").arg(archive).assert();
    // Thousands of receipts and no game.toml: refused from the listing, nothing unpacked.
    let many: Vec<String> = (1..=3000).map(|i| format!("g/receipts/{i:06}/x-1.toml")).collect();
    let bomb = tmp.path().join("bomb.tar");
    fs::write(&bomb, tar_of_names(&many)).unwrap();
    audit(&bomb).failure().stderr(predicates::str::contains("g/game.toml: missing"));
    // Receipts of steps no record in the archive opens, and names no public copy has.
    let mut names: Vec<String> = ["g/game.toml", "g/scenario.toml", "g/records/000000.json"].map(String::from).to_vec();
    names.extend(many.iter().skip(1).cloned());
    fs::write(&bomb, tar_of_names(&names)).unwrap();
    audit(&bomb).failure().stderr(predicates::str::contains("g/receipts/000002: receipts for a step no record in the archive opens"));
    fs::write(&bomb, tar_of_names(&["g/game.toml".into(), "g/notes.txt".into()])).unwrap();
    audit(&bomb).failure().stderr(predicates::str::contains("g/notes.txt: not a file of a public copy"));
    assert_eq!(fs::read_dir(&temp).unwrap().count(), 0, "nothing was unpacked");
    // A folder a killed audit left (its lock held by nobody) goes with the next audit; one being
    // made (no lock in place yet) stays, unless unchanged for over a day (a run killed while
    // making it, or an older pbem's); the audit's own folder goes when it ends.
    let stale = temp.join("pbem-public-stale");
    fs::create_dir_all(stale.join("g/records")).unwrap();
    fs::write(stale.join(".lock"), "").unwrap();
    fs::create_dir(temp.join("pbem-public-making")).unwrap();
    let old = temp.join("pbem-public-old");
    fs::create_dir_all(old.join("g/records")).unwrap();
    fs::write(old.join(".lock.new"), "").unwrap();
    let two_days = std::time::SystemTime::now() - std::time::Duration::from_secs(48 * 3600);
    fs::File::open(&old).unwrap().set_modified(two_days).unwrap();
    let a = tmp.path().join("a.tar");
    pbem().arg("public").arg(example()).arg("--out").arg(&a).assert().success();
    audit(&a).success();
    let left: Vec<String> = fs::read_dir(&temp).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["pbem-public-making"]);
}

/// The process id of a process that has ended (a temp name of a killed run holds one).
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// Sets `path`'s modification time `ago` back (`touch -d`).
fn age(path: &Path, ago: &str) {
    assert!(std::process::Command::new("touch").arg("-d").arg(ago).arg(path).status().unwrap().success());
}

#[test]
fn a_public_copy_written_removes_the_temp_files_a_killed_run_left_beside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.tar");
    // A killed `pbem public --out x.tar` (its temp file, atomic-write-file's, an hour old), one of
    // ours whose process is gone, a temp file being written now, and another output's.
    let names = [".x.tar.A8Fro6", &format!(".x.tar.{}.0.tmp", dead_pid()), ".x.tar.Zq3Lw9", ".y.tar.B7kPq2"];
    for n in &names {
        fs::write(tmp.path().join(n), vec![0u8; 1 << 10]).unwrap();
    }
    for n in [names[0], names[3]] {
        age(&tmp.path().join(n), "1 hour ago");
    }
    pbem().arg("public").arg(example()).arg("--out").arg(&out).assert().success();
    assert!(out.is_file());
    let left: BTreeSet<String> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let want: BTreeSet<String> = ["x.tar", ".x.tar.Zq3Lw9", ".y.tar.B7kPq2"].iter().map(|s| s.to_string()).collect();
    assert_eq!(left, want);
}

#[test]
fn publish_all_publishes_neither_copy_of_a_game_two_folders_hold() {
    // A backup copy inside the root (tester12 M2): both would publish into one folder, and
    // whichever came last would win; like `adjudicate --all`, neither is taken.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = cut_example(&root, 3);
    copy_tree(&game, &root.join("zz-backup"));
    let site = tmp.path().join("site");
    let a = pbem().arg("publish").arg("--all").arg(&root).arg("--out").arg(&site).assert().code(1);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert_eq!(err.matches("is held by more than one folder").count(), 2, "{err}");
    assert!(err.contains("zz-backup: not published") && err.contains("remove all but one"), "{err}");
    assert!(!site.join("demo-gettysburg-campaign-18630701").exists(), "nothing of that game published");
}

/// A symbolic link planted among the open step's receipts naming a sealed order, or a copy of
/// one there, is refused by `pbem public`, naming it, and no copy is written: the sealed order
/// never leaves `host/` (tester20 T20b-1); a game made under `umask 000` has no folder anyone may
/// write in to plant one.
#[test]
fn a_public_copy_never_hands_out_a_planted_link_or_copy_of_a_sealed_order() {
    let tmp = tempfile::tempdir().unwrap();
    let game = cut_example(tmp.path(), 2);
    let receipts = game.join("receipts/000003");
    let out = tmp.path().join("copy.tar");
    let planted = receipts.join("confederate-9.toml");
    for (how, text) in [("link", "a symbolic link"), ("copy", "not a receipt")] {
        for (from, to) in [("union-1.txt", "confederate-9.toml"), ("union-1.txt.sig", "confederate-9.toml.sig")] {
            let sealed = game.join("host/sealed/000003").join(from);
            match how {
                "link" => std::os::unix::fs::symlink(&sealed, receipts.join(to)).unwrap(),
                _ => drop(fs::copy(&sealed, receipts.join(to)).unwrap()),
            }
        }
        let o = pbem().arg("public").arg(&game).arg("--out").arg(&out).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && stderr.contains("confederate-9.toml") && stderr.contains(text), "{how}: {stderr}");
        // Nor does any other command read through the link (tester21 T21a-5).
        let o = pbem().arg("status").arg(&game).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && stderr.contains("confederate-9.toml") && stderr.contains(if how == "link" { "a symbolic link" } else { "not a receipt" }), "status {how}: {stderr}");
        assert!(!out.exists(), "{how}: nothing written");
        fs::remove_file(&planted).unwrap();
        fs::remove_file(receipts.join("confederate-9.toml.sig")).unwrap();
    }
    // A link without its signature, in an earlier step's folder, and a receipts folder that is a
    // link are refused too (tester22 T22a-3: left out, or read through, without a word).
    let earlier = game.join("receipts/000001");
    std::os::unix::fs::symlink("/etc/passwd", earlier.join("extra.toml")).unwrap();
    let o = pbem().arg("public").arg(&game).arg("--out").arg(&out).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("extra.toml: a symbolic link"), "{o:?}");
    fs::remove_file(earlier.join("extra.toml")).unwrap();
    let moved = tmp.path().join("moved");
    fs::rename(&earlier, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &earlier).unwrap();
    let o = pbem().arg("public").arg(&game).arg("--out").arg(&out).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("000001: a symbolic link"), "{o:?}");
    fs::remove_file(&earlier).unwrap();
    fs::rename(&moved, &earlier).unwrap();
    assert!(!out.exists(), "nothing written");
    // A receipt whose signature is missing (deleted, or a file planted without one) is refused,
    // not left out of a copy that would then audit clean (tester t18b-3).
    let kept = earlier.join("union-1.toml.sig");
    let saved = fs::read(&kept).unwrap();
    fs::remove_file(&kept).unwrap();
    let o = pbem().arg("public").arg(&game).arg("--out").arg(&out).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("union-1.toml.sig: missing: the receipt beside it is not signed"), "{o:?}");
    assert!(!out.exists(), "nothing written");
    fs::write(&kept, saved).unwrap();
    pbem().arg("public").arg(&game).arg("--out").arg(&out).assert().success();
    use std::os::unix::fs::PermissionsExt;
    let made = tmp.path().join("made");
    fs::create_dir(&made).unwrap();
    for k in ["u", "c"] {
        assert!(std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(made.join(k)).status().unwrap().success());
    }
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let script = format!("cd '{}' && umask 000 && exec '{}' new turns/g1 --rules gettysburg-campaign --player confederate:c@x:c.pub --player union:u@x:u.pub", made.display(), bin.display());
    let o = std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut check = vec![made.join("turns")];
    while let Some(d) = check.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let mode = fs::symlink_metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o002, 0, "{} is writable by everyone", p.display());
            if p.is_dir() {
                check.push(p);
            }
        }
    }
}

#[test]
fn the_site_is_readable_by_everyone_whatever_the_umask() {
    // tester12 L8: under `umask 077` every page was 0600, so no web server could read the site.
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let game = cut_example(tmp.path(), 3);
    let site = tmp.path().join("www").join("site");
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let script = format!("umask 077 && exec '{}' publish '{}' --out '{}'", bin.display(), game.display(), site.display());
    let out = std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut files = 0;
    let mut check = vec![site.clone()];
    while let Some(d) = check.pop() {
        assert_eq!(fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o755, "{}", d.display());
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                check.push(p);
            } else {
                files += 1;
                assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o644, "{}", p.display());
            }
        }
    }
    assert!(files > 5, "{files} files");
    // A page left 0600 by an earlier version is made readable by the next publish.
    let index = site.join("index.html");
    fs::set_permissions(&index, fs::Permissions::from_mode(0o600)).unwrap();
    pbem().arg("publish").arg(&game).arg("--out").arg(&site).assert().success();
    assert_eq!(fs::metadata(&index).unwrap().permissions().mode() & 0o777, 0o644);
}

#[test]
fn a_site_is_never_taken_back_to_an_older_copy_or_another_game_of_the_same_id() {
    // tester13 D7: publishing a backup of the game, or another game that took the same id (two
    // demos whose seeds start alike), replaced what the site showed; each is now refused, naming
    // why, and the site is left exactly as it was.
    let tmp = tempfile::tempdir().unwrap();
    let id = "demo-gettysburg-campaign-18630701";
    let older = cut_example(&tmp.path().join("backup"), 5);
    let other = tmp.path().join("other");
    pbem().args(["demo", "--rules", "gettysburg-campaign", "--seed", &format!("18630701{}", "f".repeat(56))]).arg("--out").arg(&other).assert().success();
    let last_of = |g: &Path| (0..).take_while(|n| g.join(format!("records/{n:06}.json")).is_file()).count() as u64 - 1;
    // What the refusal says of `copy` where the site shows a game up to record `shown`.
    let why = |copy: &Path, shown: u64| match last_of(copy) {
        l if l < shown => format!("this copy ends at record {l}: an older copy of the game, or another game with the id {id}"),
        _ => format!("this copy's record {shown} is not the one the site shows: another game with the id {id}, or a history rewritten"),
    };
    for (k, (shown, refused)) in [(example(), vec![older.clone(), other.clone()]), (other.clone(), vec![example()])].into_iter().enumerate() {
        let site = tmp.path().join(format!("site{k}"));
        pbem().arg("publish").arg(&shown).arg("--out").arg(&site).assert().success();
        let before = files(&site);
        for copy in refused {
            let run = pbem().arg("publish").arg(&copy).arg("--out").arg(&site).assert().code(1);
            let err = String::from_utf8(run.get_output().stderr.clone()).unwrap();
            let want = format!("site.json: the site shows game {id} up to record {}, but {} (remove {} to publish this copy in its place)", last_of(&shown), why(&copy, last_of(&shown)), site.join(id).display());
            assert!(err.contains(&want), "{err}\nwanted: {want}");
            assert_eq!(files(&site), before, "the site is as it was");
        }
        // The game shown, published again, and a copy once the site's folder of it is removed, go in.
        pbem().arg("publish").arg(&shown).arg("--out").arg(&site).assert().success();
        fs::remove_dir_all(site.join(id)).unwrap();
        pbem().arg("publish").arg(&older).arg("--out").arg(&site).assert().success();
    }
}

/// Site step pages keep the nesting of a step's events: a Flag Dash alternative's moves are a
/// sub-list of its "alternative 1 ... carried out:" item, not flattened into the list.
#[test]
fn nested_events_are_sub_lists_on_a_step_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let start = pbem::pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    pbem::demo::run("flag-dash", &dir, [0x46; 32], BTreeMap::new(), start).unwrap();
    let site = tmp.path().join("site");
    let p = pbem::site::publish(&dir, &site).unwrap();
    let mut nested = 0;
    for n in 1..p.pages - 1 {
        let page = fs::read_to_string(p.folder.join(format!("step-{n}.html"))).unwrap();
        for (i, _) in page.match_indices("<li>alternative 1 ") {
            let item = &page[i..];
            let end = item.find("</li>\n<li").unwrap_or(item.len());
            let sub = &item[..end];
            assert!(sub.contains("carried out") || sub.contains("cannot be carried out"), "{sub}");
            if sub.contains(" carried out:<ul>\n<li>") {
                nested += 1;
                assert!(!sub.starts_with("<li>  "), "{sub}");
            }
        }
        if let Some(i) = page.find("<ol id=\"events\">") {
            let events = &page[i..i + page[i..].find("<h2>Orders").unwrap()];
            assert!(!events.contains("  "), "step {n}: indents are sub-lists, continued lines joined: {events}");
        }
    }
    assert!(nested > 0, "some alternative's moves are a sub-list");
}
