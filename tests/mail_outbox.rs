//! Outgoing mail ends: the real binary's cron run against a tiny SMTP server in the test (550 to
//! one recipient, 451 to another, or no answer at all) and against a port nobody listens on. A
//! mail refused for good moves to `outbox/dead/` and is told once; `--quiet` prints one line per
//! problem and nothing when all went well; transport errors read as sentences.

#[path = "mail/common.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;
use pbem::mail::Outbox;
use pbem::mail::compose::{self, Draft};

/// A loopback SMTP server: refuses `RCPT` to `nobody@...` for good (550) and to `grey@...` for
/// now (451), accepts the rest; with `silent`, accepts connections and never answers. Keeps
/// every command it was given.
struct Server {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

fn server(silent: bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            if silent {
                held.push(conn);
                continue;
            }
            let _ = session(conn, &l);
        }
    });
    Server { port, log }
}

fn session(conn: TcpStream, log: &Mutex<Vec<String>>) -> std::io::Result<()> {
    let mut out = conn.try_clone()?;
    let mut lines = BufReader::new(conn);
    out.write_all(b"220 test ESMTP\r\n")?;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_string();
        log.lock().unwrap().push(cmd.clone());
        let upper = cmd.to_ascii_uppercase();
        let reply = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250-test\r\n250 AUTH PLAIN LOGIN".to_string()
        } else if upper.starts_with("AUTH") {
            "535 5.7.8 Authentication credentials invalid".to_string()
        } else if upper.starts_with("RCPT") && upper.contains("NOBODY@") {
            format!("550 5.1.1 {}: Recipient address rejected: User unknown", &cmd[8..])
        } else if upper.starts_with("RCPT") && upper.contains("GREY@") {
            "451 4.7.1 Greylisted, try again later".to_string()
        } else if upper == "DATA" {
            out.write_all(b"354 go on\r\n")?;
            loop {
                line.clear();
                if lines.read_line(&mut line)? == 0 || line == ".\r\n" {
                    break;
                }
            }
            "250 2.0.0 queued".to_string()
        } else if upper == "QUIT" {
            out.write_all(b"221 bye\r\n")?;
            return Ok(());
        } else {
            "250 ok".to_string()
        };
        out.write_all(format!("{reply}\r\n").as_bytes())?;
    }
}

/// A root with no game, a fake SMTP server (`silent`: one that never answers) and a mail config
/// for it: the temporary folder (kept while it lives), the root, the server, the config.
fn bare_root(silent: bool) -> (tempfile::TempDir, PathBuf, Server, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir_all(&root).unwrap();
    let s = server(silent);
    let cfg = config(tmp.path(), s.port);
    (tmp, root, s, cfg)
}

fn config(dir: &Path, port: u16) -> PathBuf {
    config_with(dir, port, "")
}

fn config_with(dir: &Path, port: u16, extra: &str) -> PathBuf {
    let cfg = dir.join("pbem-mail.toml");
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nport = {port}\nsecurity = \"none\"\ntimeout_secs = 1\n{extra}")).unwrap();
    cfg
}

fn queue(root: &Path, id: &str, to: &str, now: &str) {
    let m = compose::build(Draft { id: id.into(), from: "judge@example.net", to: vec![to.into()], cc: vec![], subject: "s".into(), body: "b\n".into(), attachments: vec![], in_reply_to: None, date: pbem::pipeline::parse_time(now).unwrap() }).unwrap();
    assert!(Outbox::under(root).queue(&m, pbem::pipeline::parse_time(now).unwrap()).unwrap());
}

/// Runs `pbem adjudicate --quiet --all ROOT --mail CFG`: (exit code, stdout, stderr).
fn cron(root: &Path, cfg: &Path, now: &str) -> (i32, String, String) {
    let out = cargo_bin_cmd!("pbem").args(["adjudicate", "--quiet", "--all"]).arg(root).arg("--mail").arg(cfg).args(["--now", now]).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn a_mail_refused_for_good_is_dead_lettered_and_told_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let s = server(false);
    let cfg = config(tmp.path(), s.port);
    queue(&root, "to-nobody", "nobody@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!(code, 1, "the run that finds it tells the host: {stderr}");
    assert_eq!(stdout, "", "--quiet");
    assert_eq!(stderr.lines().count(), 1, "one line for the one problem: {stderr}");
    assert!(stderr.contains("mail to-nobody to nobody@example.org refused") && stderr.contains("550 5.1.1") && stderr.contains("User unknown") && stderr.contains("dead"), "{stderr}");
    let outbox = Outbox::under(&root);
    assert_eq!(outbox.dead().unwrap(), ["to-nobody"]);
    let reason = std::fs::read_to_string(outbox.dead_dir().join("to-nobody.reason")).unwrap();
    assert!(reason.contains("550 5.1.1") && reason.contains("nobody@example.org"), "{reason}");
    assert!(outbox.dead_dir().join("to-nobody.eml").is_file());
    assert!(outbox.pending().unwrap().is_empty(), "the two reports were sent: {:?}", outbox.pending());
    // The next runs are quiet and succeed, and never try the dead mail again.
    for now in ["2026-07-01T12:10:00Z", "2026-07-01T12:15:00Z"] {
        assert_eq!(cron(&root, &cfg, now), (0, String::new(), String::new()));
    }
    let tries = s.log.lock().unwrap().iter().filter(|c| c.contains("nobody@")).count();
    assert_eq!(tries, 1, "{:?}", s.log.lock().unwrap());
    // Queueing the same id again does nothing (a reminder with a fixed id is not sent again).
    let m = compose::build(Draft { id: "to-nobody".into(), from: "judge@example.net", to: vec!["nobody@example.org".into()], cc: vec![], subject: "s".into(), body: "b".into(), attachments: vec![], in_reply_to: None, date: pbem::pipeline::parse_time(T0).unwrap() }).unwrap();
    assert!(!outbox.queue(&m, pbem::pipeline::parse_time(T0).unwrap()).unwrap());
}

#[test]
fn a_server_that_is_down_is_one_line_however_many_mails_wait() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = config(tmp.path(), port);
    queue(&root, "extra", "lee@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("the SMTP server 127.0.0.1:{port} refused the connection")) && stderr.contains("3 mail(s) wait for the next run"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 3, "nothing lost");
    assert!(Outbox::under(&root).dead().unwrap().is_empty());

    // Without --quiet, the counts add up: 2 reports queued by this run, none sent, 3 waiting.
    let out = cargo_bin_cmd!("pbem").args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T12:06:00Z"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("outbox: 0 queued in this run, 0 sent, 3 waiting"), "{stdout}");
}

#[test]
fn a_server_that_does_not_answer_is_told_as_a_sentence() {
    let (_tmp, root, s, cfg) = bare_root(true);
    queue(&root, "one", "lee@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr.trim_end(), format!("outbox: the SMTP server 127.0.0.1:{} did not answer within 1 s; 1 mail(s) wait for the next run", s.port));
}

#[test]
fn a_mail_refused_for_now_waits_and_ends_after_five_days() {
    let (_tmp, root, _server, cfg) = bare_root(false);
    queue(&root, "grey", "grey@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("mail grey to grey@example.org not sent (kept for the next run)") && stderr.contains("refused it for now: 451 4.7.1 Greylisted"), "{stderr}");
    assert_eq!(Outbox::under(&root).pending().unwrap(), ["grey"]);
    // Five days later the judge gives up on it, as a mail server does, and says so once.
    let (code, _, stderr) = cron(&root, &cfg, "2026-07-06T12:00:00Z");
    assert_eq!(code, 1);
    assert!(stderr.contains("mail grey to grey@example.org refused") && stderr.contains("not accepted in 5 days"), "{stderr}");
    assert!(Outbox::under(&root).pending().unwrap().is_empty());
    assert_eq!(cron(&root, &cfg, "2026-07-06T12:05:00Z"), (0, String::new(), String::new()));
}

#[test]
fn a_greylisting_server_is_one_line_however_many_mails_wait() {
    let (_tmp, root, _server, cfg) = bare_root(false);
    for id in ["grey1", "grey2", "grey3"] {
        queue(&root, id, "grey@example.org", T0);
    }
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("3 mails not sent (kept for the next run), the first grey1:") && stderr.contains("451 4.7.1 Greylisted"), "{stderr}");
}

#[test]
fn a_refused_login_is_about_the_server_and_no_mail_ends_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir_all(&root).unwrap();
    let s = server(false);
    std::fs::write(tmp.path().join("pw"), "wrong\n").unwrap();
    let cfg = config_with(tmp.path(), s.port, "user = \"judge\"\npassword_file = \"pw\"\n");
    queue(&root, "one", "lee@example.org", T0);
    queue(&root, "two", "nobody@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr.trim_end(), format!("outbox: the SMTP server 127.0.0.1:{} refused the login as judge: 535 5.7.8 Authentication credentials invalid; 2 mail(s) wait for the next run", s.port));
    assert_eq!(Outbox::under(&root).pending().unwrap(), ["one", "two"], "a 5xx to the login is no mail's fault");
    assert!(!s.log.lock().unwrap().iter().any(|c| c.starts_with("RCPT")), "no mail tried");
}

#[test]
fn quiet_prints_nothing_when_all_went_well() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let s = server(false);
    let cfg = config(tmp.path(), s.port);
    assert_eq!(cron(&root, &cfg, "2026-07-01T12:05:00Z"), (0, String::new(), String::new()), "the opening reports sent");
    let maildir = tmp.path().join("Maildir");
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(maildir.join(d)).unwrap();
    }
    std::fs::write(maildir.join("new").join("u1"), order_mail(&game, "union", 1)).unwrap();
    std::fs::write(maildir.join("new").join("c1"), order_mail(&game, "confederate", 1)).unwrap();
    let out = cargo_bin_cmd!("pbem").args(["intake", "--quiet", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--maildir").arg(&maildir).arg("--config").arg(&cfg).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.is_empty(), "two orders accepted, two receipts sent: {text:?}");
    assert!(game.join("receipts").join("000001").join("union-1.toml").is_file());
    // The step resolves (both orders are in) and both reports go out: nothing to say.
    assert_eq!(cron(&root, &cfg, "2026-07-01T13:05:00Z"), (0, String::new(), String::new()));
    assert_eq!(pbem::pipeline::load(&game).unwrap().record.index, 1);
    let sent = s.log.lock().unwrap().iter().filter(|c| c == &"DATA").count();
    assert_eq!(sent, 6, "2 opening reports, 2 receipts, 2 step reports");
}

#[test]
fn a_dead_letter_of_a_run_killed_before_it_told_the_host_is_told_by_the_next_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let s = server(false);
    let cfg = config(tmp.path(), s.port);
    queue(&root, "to-nobody", "nobody@example.org", T0);
    // A flush that moves the mail to dead/ and is killed before it prints anything (its result
    // dropped untold: the kill point).
    let host = pbem::mail::HostConfig::load(&cfg).unwrap();
    let t = pbem::mail::transport::from_config(&host.transport).unwrap().unwrap();
    let outbox = Outbox::under(&root);
    let f = outbox.flush(t.as_ref(), pbem::pipeline::parse_time("2026-07-01T12:01:00Z").unwrap()).unwrap();
    assert_eq!(f.dead.len(), 1);
    drop(f);
    assert_eq!(outbox.dead().unwrap(), ["to-nobody"]);
    let (code, _, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!(code, 1, "the next run tells the host: {stderr}");
    assert!(stderr.contains("mail to-nobody to nobody@example.org refused") && stderr.contains("550 5.1.1") && stderr.contains("dead"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(cron(&root, &cfg, "2026-07-01T12:10:00Z"), (0, String::new(), String::new()), "told once");
    let tries = s.log.lock().unwrap().iter().filter(|c| c.contains("nobody@")).count();
    assert_eq!(tries, 1, "never tried again");
}

/// A mail the client library refuses before it is sent (here an address with a non-ASCII letter,
/// and the server does not announce SMTPUTF8) fails that mail only, for good: named with its
/// address, moved to `dead/` at once; the mails before and after it go in the same run (found by
/// tester T10: the refusal stopped the whole flush, every run, for good).
#[test]
fn a_mail_the_client_refuses_is_dead_lettered_alone_and_the_others_are_sent() {
    let (_tmp, root, s, cfg) = bare_root(false);
    queue(&root, "a-first", "lee@example.org", T0);
    queue(&root, "b-umlaut", "ü@bücher.de", T0);
    queue(&root, "c-last", "grant@example.org", T0);
    let (code, stdout, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("mail b-umlaut to ü@bücher.de refused") && stderr.contains("SMTPUTF8") && stderr.contains("dead"), "{stderr}");
    let outbox = Outbox::under(&root);
    assert_eq!(outbox.dead().unwrap(), ["b-umlaut"]);
    let reason = std::fs::read_to_string(outbox.dead_dir().join("b-umlaut.reason")).unwrap();
    assert!(reason.contains("SMTPUTF8"), "{reason}");
    assert!(outbox.pending().unwrap().is_empty() && outbox.was_sent("a-first") && outbox.was_sent("c-last"));
    assert_eq!(s.log.lock().unwrap().iter().filter(|c| c.as_str() == "DATA").count(), 2);
    assert_eq!(cron(&root, &cfg, "2026-07-01T12:10:00Z"), (0, String::new(), String::new()), "told once");
}

/// The config's `from` must be an address the mailer can send from: one with a non-ASCII letter
/// would be refused with every mail (SMTPUTF8), so the config is refused, naming it; a name in any
/// letters stays fine (only the address is in the envelope).
#[test]
fn a_from_address_with_a_non_ascii_letter_is_refused_naming_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir_all(&root).unwrap();
    let cfg = tmp.path().join("pbem-mail.toml");
    std::fs::write(&cfg, "from = \"Richter <richter@bücher.de>\"\n").unwrap();
    let (code, _, stderr) = cron(&root, &cfg, "2026-07-01T12:05:00Z");
    assert_ne!(code, 0);
    assert!(stderr.contains("pbem-mail.toml") && stderr.contains("from = ") && stderr.contains("non-ASCII"), "{stderr}");
    std::fs::write(&cfg, "from = \"Jürgen Richter <richter@example.net>\"\n").unwrap();
    assert_eq!(cron(&root, &cfg, "2026-07-01T12:05:00Z"), (0, String::new(), String::new()));
}
