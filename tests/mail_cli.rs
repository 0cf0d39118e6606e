//! `pbem intake` and `pbem adjudicate --all --mail` run as the real binary, as a `.forward` pipe,
//! on an mbox and with the local sendmail (a stand-in script that keeps what it is given).

#[path = "mail/common.rs"]
mod common;

use std::path::Path;

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

/// A sendmail stand-in: each call appends its arguments and the message to `LOG`; it fails
/// (exit 75, "try again later") while `DOWN` exists.
fn fake_sendmail(dir: &Path) -> std::path::PathBuf {
    let script = dir.join("sendmail");
    let text = format!(
        "#!/bin/sh\nif [ -e '{down}' ]; then echo 'queue full' >&2; exit 75; fi\n{{ echo \"ARGS: $*\"; cat; echo '.'; }} >> '{log}'\n",
        down = dir.join("DOWN").display(),
        log = dir.join("LOG").display()
    );
    std::fs::write(&script, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

fn config(dir: &Path, transport: &str) -> std::path::PathBuf {
    let cfg = dir.join("pbem-mail.toml");
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\n{transport}\n")).unwrap();
    cfg
}

fn sent_messages(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.split("\nARGS: ").filter(|m| !m.trim().is_empty()).map(str::to_string).collect()
}

#[test]
fn intake_from_a_pipe_answers_through_sendmail_and_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let sendmail = fake_sendmail(tmp.path());
    let cfg = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", sendmail.display()));
    let mail = order_mail(&game, "union", 1);
    let out = pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail.clone()).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("accepted") && stdout.contains("role union"), "{stdout}");
    let log = tmp.path().join("LOG");
    let sent = sent_messages(&log);
    assert_eq!(sent.len(), 1, "one receipt mailed: {sent:?}");
    assert!(sent[0].contains("meade@example.org") && sent[0].contains("commitment"), "{}", sent[0]);
    assert!(sent[0].contains("Subject: [pbem g1] Re: orders") && sent[0].contains("Auto-Submitted: auto-replied"), "{}", sent[0]);
    // The same message piped again (a retrying MTA) is not handled twice and sends nothing.
    pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:01:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success()
        .stdout(predicates::str::contains("<stdin>: done: the same bytes were taken in before: not handled again"));
    assert_eq!(sent_messages(&log).len(), 1);
    let receipts = std::fs::read_dir(game.join("receipts")).unwrap().count();
    assert!(receipts >= 1);
    // The mail state holds sealed orders and queued reports: the host's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(root.join(".mail")).unwrap().permissions().mode() & 0o777, 0o700);
    }
    // From a pipe, a failure asks the MTA to try again later (75) rather than to bounce.
    pbem().args(["intake", "--stdin", "--root"]).arg(tmp.path().join("no-such-root")).arg("--config").arg(&cfg).write_stdin(b"x".to_vec()).assert().code(75);
}

#[test]
fn sendmail_refusing_keeps_the_mail_queued_until_a_later_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let sendmail = fake_sendmail(tmp.path());
    let cfg = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", sendmail.display()));
    std::fs::write(tmp.path().join("DOWN"), b"").unwrap();
    let mut mbox = Vec::new();
    for role in ["union", "confederate"] {
        mbox.extend_from_slice(b"From someone@example.org Wed Jul  1 13:00:00 2026\n");
        mbox.extend(order_mail(&game, role, 1));
        mbox.extend_from_slice(b"\n");
    }
    let path = tmp.path().join("mbox");
    std::fs::write(&path, &mbox).unwrap();
    let out = pbem().args(["intake", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--mbox").arg(&path).arg("--config").arg(&cfg).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(stdout.matches("  accepted ").count(), 2, "{stdout}");
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("not sent (kept for the next run)") && stderr.contains(&format!("sendmail ({})", sendmail.display())), "{stderr}");
    let log = tmp.path().join("LOG");
    assert!(sent_messages(&log).is_empty());
    let queue = root.join(".mail").join("outbox").join("queue");
    let queued = || std::fs::read_dir(&queue).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "mail")).count();
    assert_eq!(queued(), 2, "both receipts wait in the queue");
    // The cron run once sendmail works again: both steps' orders are in, so it resolves the
    // step and mails both receipts and both reports, each once.
    std::fs::remove_file(tmp.path().join("DOWN")).unwrap();
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    let sent = sent_messages(&log);
    assert_eq!(sent.len(), 4, "{sent:#?}");
    assert_eq!(queued(), 0);
    assert_eq!(sent.iter().filter(|m| m.contains("your report")).count(), 2);
    let quiet = pbem().args(["adjudicate", "--quiet", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:10:00Z"]).assert().success();
    assert!(quiet.get_output().stdout.is_empty(), "--quiet: nothing happened, nothing printed");
    assert_eq!(sent_messages(&log).len(), 4, "a second run sends nothing again");
    pbem().arg("audit").arg(&game).assert().success();
}

#[test]
fn a_piped_message_left_waiting_is_taken_in_by_the_next_cron_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let out = tmp.path().join("sent");
    let cfg = config(tmp.path(), &format!("kind = \"file\"\ndir = \"{}\"", out.display()));
    // The clock is behind the game (record 0 opened at 12:00): the order waits in the spool.
    pbem().args(["intake", "--stdin", "--now", "2026-07-01T11:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg)
        .write_stdin(order_mail(&game, "union", 1)).assert().success()
        .stdout(predicates::function::function(|out: &str| out.matches("left for the next run").count() == 1));
    assert!(!game.join("receipts").exists() || std::fs::read_dir(game.join("receipts")).unwrap().next().is_none());
    // The cron run (no [intake] source: mail comes by pipe) takes it in.
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    assert!(game.join("receipts").join("000001").join("union-1.toml").is_file());
}

/// A game `g1` under `TMP/turns` whose opening reports are queued, not sent (transport none).
fn openings_queued() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(config(tmp.path(), "kind = \"none\"")).args(["--now", "2026-07-01T12:05:00Z"]).assert().success();
    (tmp, root)
}

/// sendmail's exit status says what its failure means: 67 (`EX_NOUSER`) fails that mail for good
/// (to `dead/` at once, named with its address; the other mail still goes); a sendmail that cannot
/// be started fails no mail: all wait, even past the 5 days after which a mail refused for now is
/// given up, as when an SMTP server is down (found with tester T10's report).
#[test]
fn sendmail_refusing_one_mail_buries_it_alone_and_a_missing_sendmail_buries_none() {
    let (tmp, root) = openings_queued();
    let outbox = pbem::mail::Outbox::under(&root);
    assert_eq!(outbox.pending().unwrap().len(), 2);
    let missing = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", tmp.path().join("no-such-sendmail").display()));
    let md = tmp.path().join("Maildir");
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(md.join(sub)).unwrap();
    }
    // A week on (an intake run: no step is due in it).
    let intake = |cfg: &Path| pbem().args(["intake", "--quiet", "--now", "2026-07-08T12:05:00Z", "--root"]).arg(&root).arg("--maildir").arg(&md).arg("--config").arg(cfg).assert();
    // Nothing moved to dead/: an intake run exits 0 for mail that waits (as before).
    let out = intake(&missing).code(0);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("could not be run") && stderr.contains("2 mail(s) wait for the next run") && !stderr.contains("os error"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(outbox.dead().unwrap().is_empty() && outbox.pending().unwrap().len() == 2, "no mail given up for a missing sendmail");
    let script = tmp.path().join("picky-sendmail");
    let log = tmp.path().join("LOG");
    std::fs::write(&script, format!("#!/bin/sh\ncase \"$*\" in *meade@*) echo 'meade@example.org: User unknown' >&2; exit 67;; esac\n{{ echo \"ARGS: $*\"; cat; echo '.'; }} >> '{}'\n", log.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", script.display()));
    let out = intake(&cfg).code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("to meade@example.org refused") && stderr.contains("User unknown") && stderr.contains("never tried again"), "{stderr}");
    assert!(!stderr.contains("not accepted in 5 days"), "refused for good, not given up: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(outbox.dead().unwrap().len(), 1);
    assert!(outbox.pending().unwrap().is_empty());
    assert_eq!(sent_messages(&log).len(), 1, "the other report went");
}

/// A run killed while sendmail reads a message (here: a report mail, over 100 KB with its
/// picture, more than a pipe holds) must not leave sendmail with half of it: sendmail delivers
/// whatever it read once its input ends, so the player would get a cut mail (found by tester T8).
/// The message is sendmail's input as a whole file, which outlives the run.
#[cfg(target_os = "linux")]
#[test]
fn a_run_killed_while_sendmail_reads_never_hands_it_half_a_mail() {
    let (tmp, root) = openings_queued();
    let outbox = pbem::mail::Outbox::under(&root);
    let ids = outbox.pending().unwrap();
    let queued: Vec<Vec<u8>> = ids.iter().map(|id| outbox.queued_message(id).unwrap().unwrap()).collect();
    assert!(queued.iter().all(|m| m.len() > 70_000), "report mails larger than a pipe holds");
    // A sendmail that says it has started, then waits a second before it reads its input.
    let (started, out) = (tmp.path().join("STARTED"), tmp.path().join("OUT"));
    let script = tmp.path().join("slow-sendmail");
    std::fs::write(&script, format!("#!/bin/sh\ntouch '{}'\nsleep 1\ncat > '{}'\n", started.display(), out.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = tmp.path().join("sendmail.toml");
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"sendmail\"\ncommand = \"{}\"\n", script.display())).unwrap();
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let mut run = std::process::Command::new(bin).args(["adjudicate", "--quiet", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T12:06:00Z"]).spawn().unwrap();
    let t = std::time::Instant::now();
    while !started.exists() && t.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(started.exists(), "sendmail never ran");
    run.kill().unwrap();
    run.wait().unwrap();
    let t = std::time::Instant::now();
    while (!out.exists() || std::fs::read(&out).unwrap().len() < queued[0].len().min(queued[1].len())) && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let got = std::fs::read(&out).unwrap();
    assert!(queued.contains(&got), "sendmail was handed {} bytes, not one of the queued mails ({} and {} bytes)", got.len(), queued[0].len(), queued[1].len());
    // Not marked sent: the next run sends it again (a duplicate is allowed, a cut mail is not).
    assert_eq!(outbox.pending().unwrap(), ids);
}

/// A mail moved to `dead/` needs the host: `pbem intake` says so and exits 1, as the cron run does
/// (README "Mail that cannot be sent"); from a `.forward` pipe it exits 0, since a failure status
/// would make the MTA bounce or retry the message just taken in (found by tester T10).
#[test]
fn an_intake_run_that_moves_mail_to_dead_exits_1_except_from_a_pipe() {
    let (tmp, root) = openings_queued();
    let sendmail = fake_sendmail(tmp.path());
    std::fs::write(tmp.path().join("DOWN"), b"").unwrap();
    let cfg = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", sendmail.display()));
    let md = tmp.path().join("Maildir");
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(md.join(sub)).unwrap();
    }
    // Six days on, still refused for now: both opening reports are given up (dead after 5 days).
    let late = ["--now", "2026-07-07T12:05:00Z"];
    let out = pbem().args(["intake", "--quiet", "--root"]).arg(&root).arg("--maildir").arg(&md).arg("--config").arg(&cfg).args(late).assert().code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_eq!(stderr.matches("never tried again").count(), 2, "{stderr}");
    // Put back as README says, and given up again by a piped intake: told, but exit 0.
    let (dead, queue) = (root.join(".mail/outbox/dead"), root.join(".mail/outbox/queue"));
    for e in std::fs::read_dir(&dead).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "eml" || x == "toml") {
            std::fs::rename(&p, queue.join(p.file_name().unwrap())).unwrap();
        }
    }
    let out = pbem().args(["intake", "--stdin", "--quiet", "--root"]).arg(&root).arg("--config").arg(&cfg).args(late).write_stdin(b"From: x@example.org\n\nhello\n".to_vec()).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert_eq!(stderr.matches("never tried again").count(), 2, "{stderr}");
}

#[test]
fn the_outbox_line_counts_every_mail_the_run_queued_press_relays_too() {
    // Found by a tester (tester15 D3): the count held the replies only, so a run that also relayed
    // press or mailed a teammate's plan said "3 queued, 6 sent", which reads as mail sent twice.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let cfg = config(tmp.path(), &format!("kind = \"file\"\ndir = \"{}\"", tmp.path().join("sent").display()));
    let mut mail = order_mail(&game, "confederate", 1);
    mail.extend_from_slice(b"\npress to union\nWe meet at Gettysburg.\nendpress\n");
    let out = pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("outbox: 2 queued in this run, 2 sent, 0 waiting"), "the reply and the press relayed:\n{stdout}");
}

#[test]
fn a_reply_to_huge_headers_keeps_every_header_line_under_998_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let sent = tmp.path().join("sent");
    let cfg = config(tmp.path(), &format!("kind = \"file\"\ndir = \"{}\"", sent.display()));
    // One word of 200,000 letters as the subject (no place to fold it), a name and a Message-ID
    // of thousands (tester16 T16a-5).
    for (n, subject) in [("y".repeat(200_000)), ("ü".repeat(100_000)), (["word"; 40_000].join(" "))].into_iter().enumerate() {
        let mail = format!("From: {} <meade@example.org>\nSubject: {subject}\nMessage-ID: <{n}{}@example.org>\n\nhelp\n", "M".repeat(3000), "a".repeat(5000));
        pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    }
    let mut replies: Vec<_> = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    replies.sort();
    assert_eq!(replies.len(), 3);
    for r in &replies {
        let head = &r[..r.find("\r\n\r\n").or_else(|| r.find("\n\n")).unwrap()];
        assert!(head.len() < 4000, "the headers are cut short: {} bytes", head.len());
        for line in r.lines() {
            assert!(line.len() <= 998, "a line of {} characters: {}...", line.len(), &line[..60]);
        }
        assert!(!head.contains("In-Reply-To"), "a Message-ID no line can hold is not quoted");
    }
    assert!(replies.iter().any(|r| r.contains(&format!("Subject: Re:\r\n {}...", "y".repeat(160)))), "{}", &replies[0][..400]);
}

#[test]
fn intake_without_a_source_of_mail_is_a_usage_error() {
    // tester18 T18-5: a missing argument exits 2 (README "Exit status"); it exited 1.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir_all(&root).unwrap();
    pbem().args(["intake", "--root"]).arg(&root).assert().code(2)
        .stderr(predicates::str::contains("give --maildir DIR, --mbox FILE or --stdin, or set [intake] maildir or mbox in the host config"));
}
