//! The cron run with a file transport: reports mailed after each adjudication, replies to orders,
//! reminders, the outbox surviving an SMTP server that is down and a run killed after sending,
//! and the refusal to act on a clock that went backwards.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use common::*;
use pbem::mail::compose::{self, Draft};
use pbem::mail::config::TransportConfig;
use pbem::mail::{HostConfig, Outbox, cron};
use pbem::pipeline::{self, Entropy};

fn at(s: &str) -> DateTime<Utc> {
    pipeline::parse_time(s).unwrap()
}

fn config(tmp: &Path, transport: TransportConfig) -> HostConfig {
    let mut c = HostConfig::queue_only("judge <judge@example.net>");
    // Made at set-up, as README says (a missing Maildir is an error: a typo must not go unseen).
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(tmp.join("Maildir").join(sub)).unwrap();
    }
    c.intake.maildir = Some(tmp.join("Maildir"));
    c.transport = transport;
    c.time_zones.insert("meade@example.org".into(), "America/New_York".into());
    c
}

fn sent(dir: &Path) -> Vec<(PathBuf, Mail)> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).map(|r| r.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    v.sort();
    v.into_iter().map(|p| {
        let m = read_mail(&std::fs::read(&p).unwrap());
        (p, m)
    }).collect()
}

fn deliver(tmp: &Path, name: &str, bytes: &[u8]) {
    let md = tmp.join("Maildir");
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(md.join(d)).unwrap();
    }
    std::fs::write(md.join("new").join(name), bytes).unwrap();
}


/// Game g1 under `ROOT/turns`, its opening reports sent by a first cron run (at 12:05) through a
/// file transport into `out`.
struct Opened {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    game: PathBuf,
    out: PathBuf,
    cfg: HostConfig,
    e: Entropy,
}

fn opened() -> Opened {
    let _tmp = tempfile::tempdir().unwrap();
    let root = _tmp.path().join("turns");
    let game = new_game(&root, "g1", 24);
    let out = _tmp.path().join("sent");
    let cfg = config(_tmp.path(), TransportConfig::File { dir: out.clone() });
    let mut e = Entropy::seeded([9; 32]);
    cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
    Opened { _tmp, root, game, out, cfg, e }
}

#[test]
fn reports_replies_and_reminders_go_out_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 24);
    let out = tmp.path().join("sent");
    let cfg = config(tmp.path(), TransportConfig::File { dir: out.clone() });
    let mut e = Entropy::seeded([9; 32]);

    // First run: the opening reports, each with its order form, deadline in the player's zone.
    let r = cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
    assert_eq!(r.queued.len(), 2, "{r:?}");
    let mails = sent(&out);
    assert_eq!(mails.len(), 2);
    let meade = mails.iter().map(|(_, m)| m).find(|m| m.to == ["meade@example.org"]).unwrap();
    assert!(meade.subject.contains("the game begins"), "{}", meade.subject);
    assert!(meade.text.contains("EDT"), "deadline in New York time: {}", meade.text);
    assert!(meade.attachments.iter().any(|a| a == "g1-step-1-union.toml"), "{:?}", meade.attachments);
    let lee = mails.iter().map(|(_, m)| m).find(|m| m.to == ["lee@example.org"]).unwrap();
    assert!(lee.text.contains("UTC"), "{}", lee.text);

    // Nothing new: nothing sent again.
    let r = cron::run(&root, &cfg, at("2026-07-01T12:10:00Z"), &mut e).unwrap();
    assert!(r.queued.is_empty(), "{r:?}");
    assert_eq!(sent(&out).len(), 2);

    // 13 hours later (11 before the deadline): reminders to both, once.
    let r = cron::run(&root, &cfg, at("2026-07-02T01:00:00Z"), &mut e).unwrap();
    assert_eq!(r.queued.len(), 2, "{r:?}");
    let r = cron::run(&root, &cfg, at("2026-07-02T02:00:00Z"), &mut e).unwrap();
    assert!(r.queued.is_empty());
    assert_eq!(sent(&out).iter().filter(|(_, m)| m.subject.contains("reminder")).count(), 2);
    assert!(sent(&out).iter().filter(|(_, m)| m.subject.contains("reminder")).all(|(_, m)| m.text.contains("Without orders by the deadline, the game's default (NMR) orders are used for you.")));

    // Both players mail orders: receipts out, the step resolves, new reports out.
    deliver(tmp.path(), "u1", &order_mail(&game, "union", 1));
    deliver(tmp.path(), "c1", &order_mail(&game, "confederate", 1));
    let r = cron::run(&root, &cfg, at("2026-07-02T03:00:00Z"), &mut e).unwrap();
    assert_eq!(r.intake.len(), 2);
    assert!(r.games[0].summary.contains("resolved step(s) 1"), "{r:?}");
    let f = r.flushed.unwrap();
    assert!(f.failed.is_empty());
    assert_eq!(f.sent.len(), 4, "2 receipts + 2 reports: {:?}", f.sent);
    let all = sent(&out);
    assert_eq!(all.iter().filter(|(_, m)| m.text.contains("ACCEPTED")).count(), 2);
    let receipt = all.iter().map(|(_, m)| m).find(|m| m.text.contains("ACCEPTED") && m.to == ["meade@example.org"]).unwrap();
    assert!(receipt.text.contains("received Wed 01 Jul 2026 23:00 EDT (2026-07-02T03:00:00Z)"), "receipt time in New York time: {}", receipt.text);
    assert_eq!(all.iter().filter(|(_, m)| m.subject.contains("step 1 resolved")).count(), 2);
    assert!(Outbox::under(&root).pending().unwrap().is_empty());
}

/// Report mails carry the picture of the board as that player sees it, as a PNG that decodes, and
/// the same mail is the same bytes however often it is built (a fixed multipart boundary).
#[test]
fn report_mails_carry_the_picture_as_a_png() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 24);
    let out = tmp.path().join("sent");
    let cfg = config(tmp.path(), TransportConfig::File { dir: out.clone() });
    cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut Entropy::seeded([9; 32])).unwrap();
    let mails = sent(&out);
    for (role, to) in [("union", "meade@example.org"), ("confederate", "lee@example.org")] {
        let m = mails.iter().map(|(_, m)| m).find(|m| m.to == [to]).unwrap();
        let name = format!("g1-record-0-{role}.png");
        assert!(m.text.contains(&format!("A picture of the board as you see it is attached ({name})")), "{}", m.text);
        let (_, png) = m.files.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{:?}", m.attachments));
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(png).expect("the attachment is a PNG");
        assert!(pixmap.width() > 600 && pixmap.height() > 400, "{}x{}", pixmap.width(), pixmap.height());
    }
    let raw = std::fs::read(&mails[0].0).unwrap();
    assert!(String::from_utf8_lossy(&raw).contains("Content-Type: image/png"));
    let draft = || Draft {
        id: "pbem-report-x".into(),
        from: "judge <judge@example.net>",
        to: vec!["lee@example.org".into()],
        cc: vec![],
        subject: "s".into(),
        body: "report\n".into(),
        attachments: vec![("a.toml".into(), b"x = 1\n".to_vec()), ("b.png".into(), vec![0x89, b'P', b'N', b'G'])],
        in_reply_to: None,
        date: at("2026-07-01T12:05:00Z"),
    };
    assert_eq!(compose::build(draft()).unwrap().bytes, compose::build(draft()).unwrap().bytes, "the same mail, the same bytes");
}

#[test]
fn smtp_down_loses_nothing_and_a_crash_after_sending_sends_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    // A port nobody listens on: the server is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = config(
        tmp.path(),
        TransportConfig::Smtp { host: "127.0.0.1".into(), port: Some(port), security: pbem::mail::config::Security::None, user: None, password_env: None, password_file: None, ca_file: None, timeout_secs: Some(5) },
    );
    let r = cron::run(&root, &down, at("2026-07-01T12:05:00Z"), &mut Entropy::seeded([1; 32])).unwrap();
    let f = r.flushed.unwrap();
    // The server could not be reached: no mail is tried (no timeout per mail), both wait.
    assert!(f.failed.is_empty() && f.sent.is_empty() && f.dead.is_empty(), "{f:?}");
    assert_eq!(f.waiting, 2, "{f:?}");
    assert!(f.unreachable.as_deref().is_some_and(|m| m.contains("refused the connection")), "{f:?}");
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 2, "both reports still queued");

    // A run died after the server accepted one mail and before it was removed from the queue.
    let outbox = Outbox::under(&root);
    let first = outbox.pending().unwrap()[0].clone();
    std::fs::create_dir_all(outbox.dir.join("sent")).unwrap();
    std::fs::write(outbox.dir.join("sent").join(&first), "2026-07-01T12:05:01Z\n").unwrap();

    let out = tmp.path().join("sent");
    let up = config(tmp.path(), TransportConfig::File { dir: out.clone() });
    let r = cron::run(&root, &up, at("2026-07-01T12:10:00Z"), &mut Entropy::seeded([1; 32])).unwrap();
    assert_eq!(r.flushed.unwrap().sent.len(), 1, "only the one not sent before");
    assert_eq!(sent(&out).len(), 1);
    assert!(outbox.pending().unwrap().is_empty());

    // Queueing the same id again does nothing.
    let m = compose::build(Draft { id: first.clone(), from: "judge@example.net", to: vec!["x@example.org".into()], cc: vec![], subject: "s".into(), body: "b".into(), attachments: vec![], in_reply_to: None, date: at("2026-07-01T12:00:00Z") }).unwrap();
    assert!(!outbox.queue(&m, at("2026-07-01T12:11:00Z")).unwrap());
}

#[test]
fn a_clock_behind_the_last_record_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 72);
    let cfg = config(tmp.path(), TransportConfig::None);
    let r = cron::run(&root, &cfg, at("2026-06-30T12:00:00Z"), &mut Entropy::seeded([1; 32])).unwrap();
    assert!(r.games[0].failed);
    assert!(r.games[0].summary.contains("refusing to act on game g1: the clock says 2026-06-30T12:00:00Z, before its record 0"), "{}", r.games[0].summary);
    assert_eq!(pipeline::load(&root.join("g1")).unwrap().record.index, 0);
    // Not only the mail run: `adjudicate DIR` and `submit` refuse such a clock too.
    let game = root.join("g1");
    let err = pipeline::adjudicate(&game, at("2026-06-30T12:00:00Z"), &mut Entropy::seeded([1; 32])).unwrap_err();
    assert!(err.to_string().contains("before its record 0"), "{err}");
    let text = form(&game, "union", 1, &|s| s);
    let order = tmp.path().join("union.toml");
    std::fs::write(&order, format!("{text}{}", sign("union", &text))).unwrap();
    let results = pipeline::submit(&game, &[order], at("2026-06-30T12:00:00Z")).unwrap();
    assert!(results[0].as_ref().is_err_and(|e| e.to_string().contains("before its record 0")));
    assert!(std::fs::read_dir(game.join("receipts")).map(|d| d.count() == 0).unwrap_or(true), "no receipt stored");
}

#[test]
fn the_cron_run_publishes_the_site_and_reports_link_to_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 24);
    let out = tmp.path().join("sent");
    let site = tmp.path().join("site");
    let mut cfg = config(tmp.path(), TransportConfig::File { dir: out.clone() });
    cfg.publish.out = Some(site.clone());
    cfg.publish.public_url = Some("https://games.example.net/pbem/".into());
    let mut e = Entropy::seeded([9; 32]);

    let r = cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
    assert_eq!(r.published.len(), 1, "{r:?}");
    assert!(site.join("index.html").is_file() && site.join("g1/step-0.html").is_file() && site.join("g1/g1.tar").is_file());
    assert!(sent(&out).iter().all(|(_, m)| m.text.contains("https://games.example.net/pbem/g1/step-0.html")), "every report links to its page");

    // Nothing new: nothing published again, and the game's files are not read (its mark holds).
    let r = cron::run(&root, &cfg, at("2026-07-01T12:10:00Z"), &mut e).unwrap();
    assert!(r.published.is_empty(), "{r:?}");
    let mark = root.join(".mail/published/g1");
    assert!(std::fs::read_to_string(&mark).unwrap().contains(&site.display().to_string()));
    // The game's page gone from the site, or the mark damaged: checked in full, published again
    // if the site needs it, and marked again.
    std::fs::remove_file(site.join("g1/index.html")).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T12:11:00Z"), &mut e).unwrap();
    assert_eq!(r.published.len(), 1, "{r:?}");
    // Any page of the game's folder deleted (found by tester T12: only its index was looked at).
    std::fs::remove_file(site.join("g1/step-0.html")).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T12:11:30Z"), &mut e).unwrap();
    assert_eq!(r.published.len(), 1, "{r:?}");
    assert!(site.join("g1/step-0.html").is_file());
    std::fs::write(&mark, "pbem-published 1\n").unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T12:12:00Z"), &mut e).unwrap();
    assert!(r.published.is_empty(), "{r:?}");
    assert!(std::fs::read_to_string(&mark).unwrap().contains("record 0"));

    // One order in: its receipt is public, so the site changes though no step was resolved.
    deliver(tmp.path(), "u1", &order_mail(&game, "union", 1));
    let r = cron::run(&root, &cfg, at("2026-07-01T12:15:00Z"), &mut e).unwrap();
    assert_eq!(r.published.len(), 1, "{r:?}");
    assert!(cron::run(&root, &cfg, at("2026-07-01T12:20:00Z"), &mut e).unwrap().published.is_empty());

    // A step resolved: its page is there before the mail that links to it goes out.
    deliver(tmp.path(), "c1", &order_mail(&game, "confederate", 1));
    let r = cron::run(&root, &cfg, at("2026-07-02T03:00:00Z"), &mut e).unwrap();
    assert_eq!(r.published.len(), 1, "{r:?}");
    assert!(site.join("g1/step-1.html").is_file());
    let step1: Vec<_> = sent(&out).into_iter().filter(|(_, m)| m.subject.contains("step 1 resolved")).collect();
    assert_eq!(step1.len(), 2);
    assert!(step1.iter().all(|(_, m)| m.text.contains("https://games.example.net/pbem/g1/step-1.html")));
}

#[test]
fn a_seat_moved_to_another_address_is_told_at_both() {
    let Opened { _tmp, root, game, out, cfg, mut e } = opened();
    let req = pbem::control::Request::Seat { role: "union".into(), email: Some("hancock@example.org".into()), key: None, time_zone: None };
    pbem::control::apply(&game, req, "Meade left", at("2026-07-01T13:00:00Z")).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    assert_eq!(r.queued.len(), 3, "two reports and the old address's notice: {r:?}");
    let all = sent(&out);
    let new = all.iter().map(|(_, m)| m).find(|m| m.to == ["hancock@example.org"]).unwrap();
    assert!(new.subject.contains("notice from the host") && new.text.contains("the host changed the seat of union: address hancock@example.org"), "{}", new.text);
    let old = all.iter().map(|(_, m)| m).rfind(|m| m.to == ["meade@example.org"]).unwrap();
    assert!(old.subject.contains("your seat union now belongs to another address") && old.text.contains("go to hancock@example.org"), "{}: {}", old.subject, old.text);
    // Told once.
    assert!(cron::run(&root, &cfg, at("2026-07-01T13:10:00Z"), &mut e).unwrap().queued.is_empty());
}

#[test]
fn a_paused_game_sends_no_reminders() {
    let Opened { _tmp, root, game, out, cfg, mut e } = opened();
    pbem::control::apply(&game, pbem::control::Request::Pause, "away", at("2026-07-01T13:00:00Z")).unwrap();
    // 13 hours later, within the reminder window of the old deadline: only the pause's reports.
    let r = cron::run(&root, &cfg, at("2026-07-02T01:00:00Z"), &mut e).unwrap();
    assert_eq!(r.queued.len(), 2, "{r:?}");
    assert!(sent(&out).iter().all(|(_, m)| !m.subject.contains("reminder")));
    // The pause's mails announce no running deadline (tester10 M1): subject and body say it is paused.
    let pause: Vec<Mail> = sent(&out).into_iter().map(|(_, m)| m).filter(|m| m.subject.contains("notice from the host")).collect();
    assert_eq!(pause.len(), 2);
    for m in &pause {
        assert!(m.subject.contains("game paused; no deadline runs until it resumes") && !m.subject.contains("needed by"), "{}", m.subject);
        assert!(m.text.contains("due by the deadline (the game is paused by the host: ") && m.text.contains("moved on by the time paused when it resumes)"), "{}", m.text);
    }
}

#[test]
fn a_host_controls_report_mail_tells_a_seat_whose_orders_are_in_that_they_are_in() {
    let Opened { _tmp: tmp, root, game, out, cfg, mut e } = opened();
    deliver(tmp.path(), "u1", &order_mail(&game, "union", 1));
    cron::run(&root, &cfg, at("2026-07-01T12:30:00Z"), &mut e).unwrap();
    pbem::control::apply(&game, pbem::control::Request::Deadline(pbem::control::DeadlineMove::Extend(chrono::Duration::hours(24))), "holidays", at("2026-07-01T13:00:00Z")).unwrap();
    cron::run(&root, &cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    let notices: Vec<_> = sent(&out).into_iter().map(|(_, m)| m).filter(|m| m.subject.contains("notice from the host")).collect();
    let union = notices.iter().find(|m| m.to == ["meade@example.org"]).unwrap();
    let conf = notices.iter().find(|m| m.to == ["lee@example.org"]).unwrap();
    assert!(union.subject.contains("your orders are in (receipt 1;") && union.text.contains("Your orders for step 1 are in (receipt 1)"), "{}\n{}", union.subject, union.text);
    assert!(conf.subject.contains("orders needed by") && conf.text.contains("are due by"), "{}", conf.subject);
}

/// Two host controls between cron runs: both records' reports are mailed (the chain needs
/// them), the older's subject says it is out of date instead of asking for orders by the
/// deadline the newer replaced (tester20 T20a-3).
#[test]
fn a_report_a_later_record_replaced_in_the_same_run_says_it_is_out_of_date() {
    let Opened { _tmp, root, game, out, cfg, mut e } = opened();
    let extend = |h: i64, t: &str| pbem::control::apply(&game, pbem::control::Request::Deadline(pbem::control::DeadlineMove::Extend(chrono::Duration::hours(h))), "holidays", at(t)).unwrap();
    extend(24, "2026-07-01T13:00:00Z");
    extend(24, "2026-07-01T13:01:00Z");
    cron::run(&root, &cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    let mails: Vec<Mail> = sent(&out).into_iter().map(|(_, m)| m).filter(|m| m.subject.contains("notice from the host")).collect();
    // The out-of-date mail asks for nothing and carries no form (tester21 T21a-1).
    for m in mails.iter().filter(|m| m.subject.contains("out of date")) {
        assert!(m.text.starts_with("This report is out of date: record 2, mailed with it, replaces it: read that one instead.") && !m.text.contains("are due by"), "{}", m.text);
        assert!(m.attachments.iter().all(|a| !a.ends_with(".toml")), "no order form: {:?}", m.attachments);
    }
    assert!(mails.iter().filter(|m| !m.subject.contains("out of date")).all(|m| m.attachments.iter().any(|a| a.ends_with(".toml"))), "the newer has its form");
    let notices: Vec<String> = mails.into_iter().map(|m| m.subject).collect();
    assert_eq!(notices.len(), 4, "{notices:?}");
    assert_eq!(notices.iter().filter(|s| s.contains("out of date: see the mail of record 2") && !s.contains("needed by")).count(), 2, "{notices:?}");
    assert_eq!(notices.iter().filter(|s| s.contains("orders needed by") && s.contains("4 Jul")).count(), 2, "{notices:?}");
}

#[test]
fn a_game_the_host_ended_mails_its_final_reports() {
    // The host's last record has neither an opening nor a resolution: its time is the control's
    // (found by tester T12: every cron run failed on it and the players were never told).
    let Opened { _tmp, root, game, out, cfg, mut e } = opened();
    let late = order_mail(&game, "union", 1);
    pbem::control::apply(&game, pbem::control::Request::Abandon, "the club closed", at("2026-07-01T13:00:00Z")).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    assert!(!r.games[0].failed, "{r:?}");
    assert_eq!(r.queued.len(), 2, "{r:?}");
    let finals: Vec<_> = sent(&out).into_iter().filter(|(_, m)| m.subject.contains("final result")).collect();
    assert_eq!(finals.len(), 2);
    assert!(finals.iter().all(|(_, m)| m.text.contains("the club closed")), "{}", finals[0].1.text);
    // An order sent after the end is refused without advice to send it again (tester10 L2).
    deliver(_tmp.path(), "late", &late);
    cron::run(&root, &cfg, at("2026-07-01T13:10:00Z"), &mut e).unwrap();
    let replies: Vec<String> = sent(&out).into_iter().map(|(_, m)| m.text).filter(|t| t.contains("REFUSED")).collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    let reply = &replies[0];
    assert!(reply.contains("The game is over: it takes no more orders"), "{reply}");
    assert!(!reply.contains("send them again"), "{reply}");
}

/// A game restored from an older copy and resolved anew (tester8 D4, tester9 D1, D3): each new
/// record has the number of one already mailed, yet its reports go out, once each (a report
/// mail's id holds its record's hash, so the outbox does not take them as sent), and a record
/// the players already have in this form is not mailed again; the mark names the record by its
/// hash.
#[test]
fn records_resolved_anew_after_a_restore_are_mailed() {
    let mut o = opened();
    let backup = o.root.parent().unwrap().join("backup-g1");
    assert!(std::process::Command::new("cp").arg("-a").arg(&o.game).arg(&backup).status().unwrap().success());
    let resolved = |o: &Opened, step: u32| sent(&o.out).iter().filter(|(_, m)| m.subject.contains(&format!("step {step} resolved"))).count();
    let run = |o: &mut Opened, now: &str| cron::run(&o.root, &o.cfg, at(now), &mut o.e).unwrap();
    for (now, step) in [("2026-07-02T13:00:00Z", 1), ("2026-07-03T14:00:00Z", 2)] {
        let r = run(&mut o, now);
        assert!(r.games[0].summary.contains(&format!("resolved step(s) {step}")), "{r:?}");
    }
    assert_eq!((resolved(&o, 1), resolved(&o, 2)), (2, 2));
    std::fs::remove_dir_all(&o.game).unwrap();
    assert!(std::process::Command::new("cp").arg("-a").arg(&backup).arg(&o.game).status().unwrap().success());
    // Restored, not resolved yet: record 0 is the one the players have; nothing is mailed.
    let r = run(&mut o, "2026-07-02T11:00:00Z");
    assert!(!r.queued.iter().any(|id| id.starts_with("pbem-report-")), "{r:?}");
    // Resolved anew an hour later than before, twice: other records 1 and 2 (their times differ).
    for (now, step) in [("2026-07-02T14:00:00Z", 1), ("2026-07-03T15:00:00Z", 2)] {
        let r = run(&mut o, now);
        assert!(r.games[0].summary.contains(&format!("resolved step(s) {step}")), "{r:?}");
        assert_eq!(resolved(&o, step), 4, "the new record {step}'s reports are mailed too");
    }
    let mark = std::fs::read_to_string(o.root.join(".mail/mailed/g1")).unwrap();
    let sha = pbem::commit::sha256_hex(&std::fs::read(o.game.join("records/000002.json")).unwrap());
    assert_eq!(mark, format!("2 {}\n", &sha[..16]));
    let r = run(&mut o, "2026-07-03T16:00:00Z");
    assert!(!r.queued.iter().any(|id| id.starts_with("pbem-report-")), "{r:?}");
}

/// Restored from a backup, then given two host records before the next run (tester10 H2): both
/// new records are mailed to every seat, not only the newest; so too when the restored game has
/// fewer records than the mark names, and when it has more. What was mailed before the restore in
/// the same form is not mailed again.
#[test]
fn every_record_written_after_a_restore_is_mailed() {
    use pbem::control::{Request, apply};
    for steps_before in [1u32, 2, 3] {
        let mut o = opened();
        let backup = o.root.parent().unwrap().join("backup-g1");
        assert!(std::process::Command::new("cp").arg("-a").arg(&o.game).arg(&backup).status().unwrap().success());
        let days = ["2026-07-02T13:00:00Z", "2026-07-03T14:00:00Z", "2026-07-04T15:00:00Z"];
        for now in &days[..steps_before as usize] {
            cron::run(&o.root, &o.cfg, at(now), &mut o.e).unwrap();
        }
        std::fs::remove_dir_all(&o.game).unwrap();
        assert!(std::process::Command::new("cp").arg("-a").arg(&backup).arg(&o.game).status().unwrap().success());
        apply(&o.game, Request::Pause, "C", at("2026-07-01T13:00:00Z")).unwrap();
        apply(&o.game, Request::Resume, "", at("2026-07-01T14:00:00Z")).unwrap();
        let before = sent(&o.out).len();
        let r = cron::run(&o.root, &o.cfg, at("2026-07-01T15:00:00Z"), &mut o.e).unwrap();
        let subjects: Vec<String> = sent(&o.out).iter().map(|(_, m)| m.subject.clone()).collect();
        let notices = subjects.iter().filter(|s| s.contains("notice from the host")).count();
        assert_eq!((notices, subjects.len() - before), (4, 4), "{steps_before} step(s) before: {r:?} {subjects:?}");
    }
}

/// A game deleted and a new one made with its id (tester9 D2): the new game's reports reach its
/// players, the old game's sent mails notwithstanding.
#[test]
fn a_new_game_with_a_deleted_ones_id_is_mailed() {
    let mut o = opened();
    let r = cron::run(&o.root, &o.cfg, at("2026-07-02T13:00:00Z"), &mut o.e).unwrap();
    assert!(r.games[0].summary.contains("resolved step(s) 1"), "{r:?}");
    std::fs::remove_dir_all(&o.game).unwrap();
    // Made (as `new_game` makes every game) at 12:00 on July 1st: its step 1 is due as well.
    let _ = new_game(&o.root, "g1", 24);
    let r = cron::run(&o.root, &o.cfg, at("2026-07-02T13:10:00Z"), &mut o.e).unwrap();
    assert!(r.games[0].summary.contains("resolved step(s) 1"), "{r:?}");
    let resolved = sent(&o.out).iter().filter(|(_, m)| m.subject.contains("step 1 resolved")).count();
    assert_eq!(resolved, 4, "the new game's step 1 reports are mailed too");
}

/// The records a plain `adjudicate` wrote (no mail; it leaves the game's due index holding for
/// the cron run that comes next) have numbers whose reports were mailed before: a game restored
/// from an older copy and resolved anew, and a new game given a deleted game's id. The cron run
/// mails them all the same (tester t25b-1: its look at an idle game compared the mailed mark's
/// record number only, so their players were never mailed).
#[test]
fn records_with_numbers_mailed_before_are_mailed_when_a_plain_adjudicate_wrote_them() {
    let mut o = opened();
    let backup = o.root.parent().unwrap().join("backup-g1");
    assert!(std::process::Command::new("cp").arg("-a").arg(&o.game).arg(&backup).status().unwrap().success());
    let subjects = |o: &Opened, what: &str| sent(&o.out).iter().filter(|(_, m)| m.subject.contains(what)).count();
    cron::run(&o.root, &o.cfg, at("2026-07-02T13:00:00Z"), &mut o.e).unwrap();
    assert_eq!(subjects(&o, "step 1 resolved"), 2);
    std::fs::remove_dir_all(&o.game).unwrap();
    assert!(std::process::Command::new("cp").arg("-a").arg(&backup).arg(&o.game).status().unwrap().success());
    let a = pipeline::adjudicate(&o.game, at("2026-07-02T14:00:00Z"), &mut o.e).unwrap();
    assert!(a.summary().contains("resolved step(s) 1"), "{}", a.summary());
    for now in ["2026-07-02T14:05:00Z", "2026-07-02T14:10:00Z"] {
        cron::run(&o.root, &o.cfg, at(now), &mut o.e).unwrap();
        assert_eq!(subjects(&o, "step 1 resolved"), 4, "the new record 1 is mailed, once");
    }
    // A new game given the deleted game's id, opened by a plain run before the cron run's.
    std::fs::remove_dir_all(&o.game).unwrap();
    let _ = new_game(&o.root, "g1", 72);
    pipeline::adjudicate(&o.game, at("2026-07-02T14:20:00Z"), &mut o.e).unwrap();
    let begun = subjects(&o, "the game begins");
    cron::run(&o.root, &o.cfg, at("2026-07-02T14:25:00Z"), &mut o.e).unwrap();
    assert_eq!(subjects(&o, "the game begins"), begun + 2, "the new game's opening is mailed");
}

/// A reminder goes out once a step and seat, and again after a host record: the seat given to
/// another player reminds the new holder, and a deadline moved reminds every awaited seat of the
/// new deadline (tester t25b-2: reminders named by game, step and seat only went to nobody new).
#[test]
fn a_seat_change_or_a_deadline_moved_makes_the_reminders_due_again() {
    use pbem::control::{DeadlineMove, Request, apply};
    let mut o = opened();
    let reminders = |o: &Opened| -> Vec<Mail> { sent(&o.out).into_iter().map(|(_, m)| m).filter(|m| m.subject.contains("reminder")).collect() };
    for now in ["2026-07-02T01:00:00Z", "2026-07-02T02:00:00Z"] {
        cron::run(&o.root, &o.cfg, at(now), &mut o.e).unwrap();
        assert_eq!(reminders(&o).len(), 2, "once a step and seat");
    }
    let req = Request::Seat { role: "union".into(), email: Some("hancock@example.org".into()), key: None, time_zone: None };
    apply(&o.game, req, "Meade left", at("2026-07-02T02:30:00Z")).unwrap();
    cron::run(&o.root, &o.cfg, at("2026-07-02T03:00:00Z"), &mut o.e).unwrap();
    let to = |o: &Opened, who: &str| reminders(o).iter().filter(|m| m.to.iter().any(|t| t.contains(who))).count();
    // Every awaited seat's reminder is due again after a host record (the other seat's too).
    assert_eq!((to(&o, "hancock@example.org"), reminders(&o).len()), (1, 4), "the new holder is reminded");
    apply(&o.game, Request::Deadline(DeadlineMove::Extend(chrono::Duration::hours(6))), "", at("2026-07-02T04:00:00Z")).unwrap();
    cron::run(&o.root, &o.cfg, at("2026-07-02T07:00:00Z"), &mut o.e).unwrap();
    let after = reminders(&o);
    assert_eq!(after.len(), 6, "both seats reminded of the new deadline: {:?}", after.iter().map(|m| (&m.to, &m.subject)).collect::<Vec<_>>());
    assert_eq!(after.iter().filter(|m| m.subject.contains("by Thu 2 Jul 18:00 UTC")).count(), 2, "the new deadline");
    cron::run(&o.root, &o.cfg, at("2026-07-02T08:00:00Z"), &mut o.e).unwrap();
    assert_eq!(reminders(&o).len(), 6, "and not again");
}

/// A reminder an earlier version queued (named without the record) stands for the step's own
/// record: the upgraded run does not send it again (tester t25c-1), but after a host record the
/// reminders are due again all the same.
#[test]
fn a_reminder_queued_by_an_earlier_version_is_not_sent_again() {
    use pbem::control::{DeadlineMove, Request, apply};
    let mut o = opened();
    let outbox = Outbox::under(&o.root);
    let old = compose::stable_id(&["reminder", "g1", "1", "union"]);
    let m = compose::build(Draft { id: old, from: "judge@example.net", to: vec!["meade@example.org".into()], cc: vec![], subject: "[pbem g1] reminder".into(), body: "b".into(), attachments: vec![], in_reply_to: None, date: at("2026-07-02T00:30:00Z") }).unwrap();
    assert!(outbox.queue(&m, at("2026-07-02T00:30:00Z")).unwrap());
    let reminded = |o: &Opened, who: &str| sent(&o.out).iter().filter(|(_, m)| m.subject.contains("reminder") && m.to.iter().any(|t| t.contains(who))).count();
    cron::run(&o.root, &o.cfg, at("2026-07-02T01:00:00Z"), &mut o.e).unwrap();
    assert_eq!((reminded(&o, "meade@"), reminded(&o, "lee@")), (1, 1), "the earlier one only, for the union");
    apply(&o.game, Request::Deadline(DeadlineMove::Extend(chrono::Duration::hours(2))), "", at("2026-07-02T02:00:00Z")).unwrap();
    cron::run(&o.root, &o.cfg, at("2026-07-02T03:00:00Z"), &mut o.e).unwrap();
    assert_eq!((reminded(&o, "meade@"), reminded(&o, "lee@")), (2, 2), "after a host record, both again");
}

/// A step whose record its group left out (mail for the game came before the record: the cron
/// run's veto) leaves its state and reports behind; `clear_left_out` clears them, so that the
/// game is as before the step (tester t25c-3: such games failed the audit until the next run),
/// and the step is resolved anew later.
#[test]
fn what_a_step_left_out_of_its_group_wrote_is_cleared() {
    let o = opened();
    let group = pbem::store::Group::new();
    group.set_veto(std::sync::Arc::new(|_: &Path| false));
    let mut e = Entropy::seeded([5; 32]);
    let a = pipeline::adjudicate_sweep(&o.game, at("2026-07-02T13:00:00Z"), &mut e, &mut |_, _| Ok(()), &group).unwrap();
    assert_eq!(a.resolved, vec![1]);
    group.flush().unwrap();
    let (record, state) = (o.game.join("records/000001.json"), o.game.join("states/000001.json"));
    assert!(!record.exists() && state.exists(), "left out: the state without its record");
    pipeline::clear_left_out(&o.game).unwrap();
    assert!(!state.exists() && !o.game.join("records/000001.json.sig").exists());
    let a = pipeline::adjudicate(&o.game, at("2026-07-02T13:05:00Z"), &mut e).unwrap();
    assert!(a.resolved == vec![1] && record.exists(), "{}", a.summary());
}

/// A reminder says what the seat's next miss gets under the game's NMR policy, and the grace
/// after the deadline (tester14 T14a-5: every reminder said the default orders; tester15 T15-5:
/// under `wait` too).
#[test]
fn a_reminder_names_the_built_in_player_the_grace_and_a_wait_where_they_apply() {
    use pbem::model::{Deadlines, NmrMode, NmrPolicy};
    let cases = [
        (NmrMode::Bot, 6, "Without orders within the 6 hours of grace after the deadline, the built-in player plays for you (the game's NMR policy)."),
        (NmrMode::Wait, 0, "The game waits for your orders: the step is not resolved without them."),
    ];
    for (policy, grace, want) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        new_game_with(&root, "g1", Deadlines { default_hours: 24, grace_hours: grace, ..Default::default() }, NmrPolicy { policy, bot_after: 0 });
        let out = tmp.path().join("sent");
        let cfg = config(tmp.path(), TransportConfig::File { dir: out.clone() });
        let mut e = Entropy::seeded([9; 32]);
        cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
        cron::run(&root, &cfg, at("2026-07-02T01:00:00Z"), &mut e).unwrap();
        let reminders: Vec<Mail> = sent(&out).into_iter().map(|(_, m)| m).filter(|m| m.subject.contains("reminder")).collect();
        assert_eq!(reminders.len(), 2);
        for m in reminders {
            assert!(m.text.contains(want), "{}", m.text);
        }
    }
}

/// A game whose folder cannot be written (here a file stands where its receipts or its next
/// record go) is left out of the run: its message waits in `new/`, unanswered, and its step is
/// not written, while every other game takes its orders, resolves and mails as usual; once the
/// host mends it, the next run does what was left (tester t25a-2: one such game stopped every
/// game's intake and steps, run after run).
#[test]
fn a_game_that_cannot_be_written_is_left_out_and_the_others_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let (g1, g2) = (new_game(&root, "g1", 24), new_game(&root, "g2", 24));
    let out = tmp.path().join("sent");
    let cfg = config(tmp.path(), TransportConfig::File { dir: out.clone() });
    let mut e = Entropy::seeded([9; 32]);
    cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
    // A folder where the receipt's signature goes: the game reads, but its receipt is not written.
    let blocked = g1.join("receipts/000001/union-1.toml.sig");
    std::fs::create_dir_all(&blocked).unwrap();
    deliver(tmp.path(), "a-g1", &order_mail(&g1, "union", 1));
    // The same seat's command after it waits with it: its answer would say the orders awaited.
    deliver(tmp.path(), "a-g1-status", b"From: meade@example.org\nTo: judge@example.net\nSubject: status\nMessage-ID: <st@example.org>\n\nstatus\n");
    deliver(tmp.path(), "b-g2", &order_mail(&g2, "union", 1));
    let r = cron::run(&root, &cfg, at("2026-07-01T13:00:00Z"), &mut e).unwrap();
    let line = |name: &str| r.intake.iter().find(|h| h.name == name).unwrap();
    assert_eq!(line("a-g1").disposition, pbem::mail::intake::Disposition::Retry, "{:?}", line("a-g1"));
    assert!(line("a-g1").reason.contains("receipts") && line("a-g1").waits_for_host() && line("a-g1").orders.is_empty(), "{:?}", line("a-g1"));
    assert_eq!(line("b-g2").disposition, pbem::mail::intake::Disposition::Done, "{:?}", line("b-g2"));
    assert_eq!(line("a-g1-status").disposition, pbem::mail::intake::Disposition::Retry, "{:?}", line("a-g1-status"));
    let md = tmp.path().join("Maildir");
    assert!(md.join("new/a-g1").is_file() && !md.join("new/b-g2").exists());
    let receipts = |to: &str| sent(&out).iter().filter(|(_, m)| m.text.contains("ACCEPTED") && m.text.contains(to)).count();
    assert_eq!((receipts("game g1"), receipts("game g2")), (0, 1), "{:?}", sent(&out).iter().map(|(_, m)| &m.subject).collect::<Vec<_>>());
    // Mended: the message waiting is taken in and answered.
    std::fs::remove_dir(&blocked).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    assert_eq!(r.intake.len(), 2, "{r:?}");
    assert!(r.intake.iter().all(|h| h.disposition == pbem::mail::intake::Disposition::Done), "{r:?}");
    assert!(!md.join("new/a-g1").exists() && receipts("game g1") == 1);

    // Something in the way where the game reads or writes (a folder at the next receipt's name,
    // tester t25d D1): the order is not refused for it; the message waits for the host.
    let in_the_way = g1.join("receipts/000001/confederate-1.toml");
    std::fs::create_dir_all(&in_the_way).unwrap();
    deliver(tmp.path(), "c-g1", &order_mail(&g1, "confederate", 1));
    let r = cron::run(&root, &cfg, at("2026-07-01T13:07:00Z"), &mut e).unwrap();
    let h = r.intake.iter().find(|h| h.name == "c-g1").unwrap();
    assert!(h.waits_for_host() && h.reason.contains("confederate-1.toml"), "{h:?}");
    assert!(md.join("new/c-g1").is_file() && !sent(&out).iter().any(|(_, m)| m.text.contains("REFUSED")));
    std::fs::remove_dir(&in_the_way).unwrap();

    // A step that cannot be written (a folder where its state goes): that game's step is left
    // out and its line says why; the other game's step resolves and is mailed.
    deliver(tmp.path(), "d-g2", &order_mail(&g2, "confederate", 1));
    let record = g1.join("states/000001.json");
    std::fs::create_dir_all(record.join("in-the-way")).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T13:10:00Z"), &mut e).unwrap();
    let (l1, l2) = (game_line(&r, "g1"), game_line(&r, "g2"));
    assert!(l1.failed && l1.summary.contains("000001.json"), "{l1:?}");
    assert!(!l2.failed && l2.summary.contains("resolved step(s) 1"), "{l2:?}");
    assert_eq!(sent(&out).iter().filter(|(_, m)| m.subject.contains("step 1 resolved")).count(), 2, "g2's reports only");
    std::fs::remove_dir_all(&record).unwrap();
    let r = cron::run(&root, &cfg, at("2026-07-01T13:15:00Z"), &mut e).unwrap();
    assert!(game_line(&r, "g1").summary.contains("resolved step(s) 1"), "{r:?}");
    assert_eq!(sent(&out).iter().filter(|(_, m)| m.subject.contains("step 1 resolved")).count(), 4);
    pbem::audit::audit(&g1, None).unwrap();
}

fn game_line<'a>(r: &'a cron::CronRun, id: &str) -> &'a cron::GameRun {
    r.games.iter().find(|g| g.game == id).unwrap()
}

/// A seat's mail without orders (a command) for a game whose `game.toml` cannot be read now (the
/// host broke it editing by hand) waits for the host to mend it, as its orders would; it was
/// failed unanswered for good (tester t25f D1). Then it is answered.
#[test]
fn a_command_for_a_game_that_cannot_be_read_waits_for_it() {
    let o = opened();
    let md = o._tmp.path().join("Maildir");
    let command = |id: &str| format!("From: George Meade <meade@example.org>\nTo: judge@example.net\nSubject: Re: [pbem g1] status\nMessage-ID: <{id}@example.org>\n\nstatus\n").into_bytes();
    // A first mail: the routing cache knows the game's seats from then on (a game file is cached
    // once it is older than the coarse clock's tick, `due::FRESH_NS`).
    std::thread::sleep(std::time::Duration::from_nanos(pbem::due::FRESH_NS as u64 + 100_000_000));
    deliver(o._tmp.path(), "cmd0", &command("cmd0"));
    let mut e = Entropy::seeded([4; 32]);
    cron::run(&o.root, &o.cfg, at("2026-07-01T12:55:00Z"), &mut e).unwrap();
    let file = o.game.join("game.toml");
    let good = std::fs::read(&file).unwrap();
    std::fs::write(&file, [good.as_slice(), b"\n[[[ broken by hand\n"].concat()).unwrap();
    deliver(o._tmp.path(), "cmd", &command("cmd"));
    let r = cron::run(&o.root, &o.cfg, at("2026-07-01T13:00:00Z"), &mut e).unwrap();
    let h = &r.intake[0];
    assert!(h.waits_for_host() && h.reason.contains("cannot be read"), "{h:?}");
    assert!(md.join("new/cmd").is_file());
    std::fs::write(&file, &good).unwrap();
    let r = cron::run(&o.root, &o.cfg, at("2026-07-01T13:05:00Z"), &mut e).unwrap();
    let h = &r.intake[0];
    assert!(h.disposition == pbem::mail::intake::Disposition::Done && h.reply.is_some(), "{h:?}");
    assert!(!md.join("new/cmd").exists());
}

/// A file system's `lost+found` under ROOT (root's alone where ROOT is a mount point) is never
/// taken for a game folder: unreadable, it made every order for an unknown game wait and every
/// run fail on its lock (tester t25f D2).
#[test]
fn lost_and_found_is_no_game_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 24);
    std::fs::create_dir_all(root.join("lost+found")).unwrap();
    let folders = cron::game_folders(&root).unwrap();
    assert_eq!((0..folders.len()).map(|i| folders.name(i).to_string()).collect::<Vec<_>>(), ["g1"]);
    assert!(pbem::store::may_hold_game("g1") && !pbem::store::may_hold_game("lost+found") && !pbem::store::may_hold_game(".mail"));
}
