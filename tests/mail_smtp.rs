//! The whole loop through real mail parts on loopback: aiosmtpd (python3-aiosmtpd) as the SMTP
//! server delivering to a Maildir per recipient, swaks as the players' mail client, and the real
//! `pbem` binary as the cron job: reports out by SMTP, forms filled and signed, orders mailed in
//! (attached with .sig, or pasted with the signature appended), receipts back, to the final result.
//! .ci/run installs python3-aiosmtpd and swaks; this test fails (does not skip) without them.

#[path = "mail/common.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" }
}

struct Smtpd {
    child: Child,
    port: u16,
    base: PathBuf,
}

impl Drop for Smtpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_smtpd(base: &Path) -> Smtpd {
    let ok = Command::new(python()).args(["-c", "import aiosmtpd"]).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "python3-aiosmtpd is missing: `apt-get install python3-aiosmtpd` (.ci/run installs it)");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mail/smtpd.py");
    let mut child = Command::new(python()).arg(script).arg(port.to_string()).arg(base).stdout(Stdio::piped()).stdin(Stdio::null()).spawn().expect("start python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the loopback SMTP server did not start");
    Smtpd { child, port, base: base.to_path_buf() }
}

fn swaks(port: u16, from: &str, args: &[&str]) {
    let out = Command::new("swaks")
        .args(["--server", &format!("127.0.0.1:{port}"), "--from", from, "--to", "judge@example.net", "--silent", "2"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("swaks is missing ({e}): `apt-get install swaks` (.ci/run installs it)"));
    assert!(out.status.success(), "swaks failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Mails in a recipient's Maildir not read before, oldest first.
fn new_mail(s: &Smtpd, who: &str, seen: &mut BTreeSet<PathBuf>) -> Vec<Mail> {
    let dir = s.base.join(who).join("new");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).map(|r| r.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    paths.sort_by_key(|p| (std::fs::metadata(p).unwrap().modified().unwrap(), p.clone()));
    paths.into_iter().filter(|p| seen.insert(p.clone())).map(|p| read_mail(&std::fs::read(p).unwrap())).collect()
}

fn cron(root: &Path, cfg: &Path, now: chrono::DateTime<chrono::Utc>) {
    let out = assert_cmd::cargo::cargo_bin_cmd!("pbem")
        .args(["adjudicate", "--all"])
        .arg(root)
        .arg("--mail")
        .arg(cfg)
        .args(["--now", &pbem::pipeline::timestamp(now)])
        .output()
        .unwrap();
    assert!(out.status.success(), "cron run failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_whole_game_by_mail_through_loopback_smtp() {
    let tmp = tempfile::tempdir().unwrap();
    let smtpd = start_smtpd(&tmp.path().join("maildirs"));
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let cfg = tmp.path().join("pbem-mail.toml");
    std::fs::write(
        &cfg,
        format!(
            "from = \"Gettysburg judge <judge@example.net>\"\n[intake]\nmaildir = \"maildirs/judge@example.net\"\n[transport]\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nport = {}\nsecurity = \"none\"\n",
            smtpd.port
        ),
    )
    .unwrap();
    // The judge's Maildir is made at set-up, as README says.
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(tmp.path().join("maildirs").join("judge@example.net").join(sub)).unwrap();
    }
    let players = tmp.path().join("players");
    std::fs::create_dir_all(&players).unwrap();
    let mut now = pbem::pipeline::parse_time(T0).unwrap() + chrono::Duration::minutes(5);
    cron(&root, &cfg, now);
    let mut seen = BTreeSet::new();
    let mut finals = BTreeSet::new();
    let (mut sent_orders, mut receipts, mut reports) = (0, 0, 0);
    for _round in 0..400 {
        for role in ["confederate", "union"] {
            for m in new_mail(&smtpd, email(role), &mut seen) {
                if m.subject.contains("final result") {
                    finals.insert(role);
                }
                if m.subject.contains("report") || m.subject.contains("final result") {
                    reports += 1;
                }
                if m.text.contains("ACCEPTED") {
                    receipts += 1;
                }
                assert!(!m.text.contains("REFUSED"), "an order was refused:\n{}", m.text);
                for (name, form) in &m.files {
                    if !name.starts_with("g1-step-") {
                        continue;
                    }
                    // The player signs the form as it came (an unedited form is a legal order).
                    let text = pbem::sig::normalize(form).unwrap();
                    let text = pbem::orderfile::fill_nonce(&text).unwrap_or(text);
                    let sig = sign(role, &text);
                    let file = players.join(name);
                    if role == "union" {
                        std::fs::write(&file, &text).unwrap();
                        std::fs::write(players.join(format!("{name}.sig")), &sig).unwrap();
                        let sigp = format!("@{}.sig", file.display());
                        swaks(smtpd.port, email(role), &["--header", "Subject: orders", "--body", "orders attached", "--attach-type", "text/plain", "--attach", &format!("@{}", file.display()), "--attach", &sigp]);
                    } else {
                        std::fs::write(&file, format!("Orders below.\n\n{text}{sig}\n-- \nR. E. Lee\n")).unwrap();
                        swaks(smtpd.port, email(role), &["--header", "Subject: orders", "--body", &format!("@{}", file.display())]);
                    }
                    sent_orders += 1;
                }
            }
        }
        if finals.len() == 2 {
            break;
        }
        now += chrono::Duration::hours(1);
        cron(&root, &cfg, now);
    }
    assert_eq!(finals.len(), 2, "both players got the final result by mail");
    assert!(sent_orders > 2 && receipts == sent_orders, "every order mailed got its receipt: {sent_orders} sent, {receipts} receipts");
    let g = pbem::pipeline::load(&root.join("g1")).unwrap();
    assert!(g.record.outcome.is_some());
    assert_eq!(reports as u64, 2 * (g.record.index + 1), "one report per player per record");
    // Every message accounted for: the judge's Maildir was emptied into done/, nothing failed,
    // nothing is left in the outbox.
    let judge = smtpd.base.join("judge@example.net");
    assert_eq!(std::fs::read_dir(judge.join("new")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(judge.join("done")).unwrap().count(), sent_orders);
    assert!(!judge.join("failed").exists());
    assert!(pbem::mail::Outbox::under(&root).pending().unwrap().is_empty());
    pbem::audit::audit(&root.join("g1"), None).unwrap();
}
