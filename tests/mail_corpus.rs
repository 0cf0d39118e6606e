//! The mail corpus (tests/mail/cases.toml): every message through `pbem intake` from a Maildir,
//! each checked against its expected outcome (folder, orders accepted and refused, the reply).
//! And the intake's fault cases: killed before the move, two runs at once, an mbox taken twice,
//! an mbox holding a 20 MB message.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::*;
use pbem::mail::intake::{self, Disposition, Source};
use pbem::mail::{HostConfig, Outbox};
use pbem::pipeline;

#[derive(serde::Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    file: String,
    folder: String,
    #[serde(default)]
    accepted: Vec<String>,
    #[serde(default)]
    refused: Vec<String>,
    reply_to: String,
    #[serde(default)]
    cc: Vec<String>,
    #[serde(default)]
    reply: Vec<String>,
    #[serde(default)]
    not_in_reply: Vec<String>,
    /// Texts the run's line for the message (its `.reason` in `failed/`) holds.
    #[serde(default)]
    reason: Vec<String>,
    #[serde(default)]
    crlf: bool,
    #[serde(default)]
    cr: bool,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("mail")
}

/// The corpus is about mail shapes: every message is answered (no cap on replies per hour; the
/// cap has its own test).
fn cfg() -> HostConfig {
    let mut c = HostConfig::queue_only("Gettysburg judge <judge@example.net>");
    c.intake.max_replies_per_hour = 0;
    c
}

fn now() -> chrono::DateTime<chrono::Utc> {
    pipeline::parse_time("2026-07-01T13:00:00Z").unwrap()
}

fn deliver(maildir: &Path, name: &str, bytes: &[u8]) {
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(maildir.join(d)).unwrap();
    }
    std::fs::write(maildir.join("tmp").join(name), bytes).unwrap();
    std::fs::rename(maildir.join("tmp").join(name), maildir.join("new").join(name)).unwrap();
}

fn queued(root: &Path, id: &str) -> Mail {
    read_mail(&Outbox::under(root).queued_message(id).unwrap().unwrap())
}

#[test]
fn every_corpus_message_has_its_expected_outcome() {
    let (_tmp, root, game, maildir) = one_game();
    let cases: Cases = toml::from_str(&std::fs::read_to_string(corpus().join("cases.toml")).unwrap()).unwrap();
    let mut problems = Vec::new();
    for (i, c) in cases.case.iter().enumerate() {
        let template = std::fs::read(corpus().join(&c.file)).unwrap();
        let mut msg = expand(&game, &template);
        if c.crlf {
            msg = String::from_utf8(msg).unwrap().replace('\n', "\r\n").into_bytes();
        }
        if c.cr {
            msg = String::from_utf8(msg).unwrap().replace('\n', "\r").into_bytes();
        }
        let name = format!("{:02}-{}", i, c.file);
        deliver(&maildir, &name, &msg);
        let handled = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
        assert_eq!(handled.len(), 1, "{}", c.file);
        let h = &handled[0];
        let mut bad = |what: String| problems.push(format!("{}: {what}", c.file));
        let folder = match h.disposition {
            Disposition::Done => "done",
            Disposition::Failed => "failed",
            Disposition::Retry => "retry",
        };
        if folder != c.folder {
            bad(format!("ended in {folder} ({}), want {}", h.reason, c.folder));
        }
        if !maildir.join(folder).join(&name).is_file() {
            bad(format!("not moved to {folder}/"));
        }
        for want in c.reason.iter().filter(|w| !h.reason.contains(w.as_str())) {
            bad(format!("its reason {:?} does not say {want:?}", h.reason));
        }
        let accepted: Vec<String> = h.orders.iter().filter_map(|o| o.receipt.as_ref().map(|r| r.role.clone())).collect();
        if accepted != c.accepted {
            bad(format!("accepted {accepted:?}, want {:?}; orders: {:?}", c.accepted, h.orders));
        }
        let errors: Vec<&String> = h.orders.iter().filter_map(|o| o.error.as_ref()).collect();
        for want in &c.refused {
            if !errors.iter().any(|e| e.contains(want.as_str())) {
                bad(format!("no refusal containing {want:?}; refusals: {errors:?}"));
            }
        }
        if c.refused.is_empty() && !errors.is_empty() && c.accepted.len() == h.orders.len() {
            bad(format!("unexpected refusals {errors:?}"));
        }
        match (&h.reply, c.reply_to.as_str()) {
            (None, "") => {}
            (Some(id), "") => bad(format!("a reply {id} was queued, want none")),
            (None, want) => bad(format!("no reply, want one to {want}")),
            (Some(id), want) => {
                let raw = String::from_utf8(Outbox::under(&root).queued_message(id).unwrap().unwrap()).unwrap();
                if !raw.contains("Auto-Submitted: auto-replied\r\n") {
                    bad("the reply lacks Auto-Submitted: auto-replied".into());
                }
                let m = queued(&root, id);
                if m.to != vec![want.to_string()] {
                    bad(format!("reply to {:?}, want {want}", m.to));
                }
                let (mut got_cc, mut want_cc) = (m.cc.clone(), c.cc.clone());
                got_cc.sort();
                want_cc.sort();
                if got_cc != want_cc {
                    bad(format!("reply cc {:?}, want {want_cc:?}", m.cc));
                }
                for s in &c.reply {
                    if !m.text.contains(s.as_str()) {
                        bad(format!("reply lacks {s:?}:\n{}", m.text));
                    }
                }
                for s in c.not_in_reply.iter().filter(|s| m.text.contains(s.as_str())) {
                    bad(format!("reply holds {s:?}:\n{}", m.text));
                }
                if !c.accepted.is_empty() && !m.attachments.iter().any(|a| a.starts_with("receipt-g1-1-")) {
                    bad(format!("no receipt attached: {:?}", m.attachments));
                }
            }
        }
        if folder == "failed" && !maildir.join("failed").join(format!("{name}.reason")).is_file() {
            bad("no reason file beside it in failed/".into());
        }
    }
    assert!(std::fs::read_dir(maildir.join("new")).unwrap().next().is_none(), "every message left new/");
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

/// A game `g1` (deadline 72 hours) under `TMP/turns`, and the path of a Maildir `TMP/Maildir`
/// (made by the first delivery): (the temp folder, root, game, Maildir).
fn one_game() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let maildir = tmp.path().join("Maildir");
    (tmp, root, game, maildir)
}

/// A game `g1` under `TMP/turns`, an empty Maildir `TMP/Maildir`, and the corpus's plain order
/// mail for the game's union seat: (the temp folder, root, Maildir, message).
fn one_game_and_its_order_mail() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<u8>) {
    let (tmp, root, game, maildir) = one_game();
    let msg = expand(&game, &std::fs::read(corpus().join("plain-attachment.eml")).unwrap());
    (tmp, root, maildir, msg)
}

#[test]
fn a_run_killed_before_the_move_neither_loses_nor_repeats() {
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    deliver(&maildir, "m1", &msg);
    let first = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    let reply = first[0].reply.clone().unwrap();
    // Killed after the submit and the reply, before the seen mark and the rename: the message is
    // still in new/. The rerun resubmits harmlessly and queues no second reply.
    std::fs::rename(maildir.join("done").join("m1"), maildir.join("new").join("m1")).unwrap();
    let log = root.join(".mail").join("log");
    // The `mail` line comes after the seen mark (tester16 T16a-6), so a kill takes it too.
    let kept: String = std::fs::read_to_string(&log).unwrap().lines().filter(|l| !l.starts_with("seen ") && !l.starts_with("mail ")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).unwrap();
    let again = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(again[0].disposition, Disposition::Done);
    assert_eq!(again[0].reply.as_deref(), Some(reply.as_str()));
    assert_eq!(again[0].orders[0].receipt.as_ref().unwrap().seq, 1, "same receipt, not a new one");
    assert_eq!(Outbox::under(&root).pending().unwrap(), vec![reply.clone()]);
    // Killed after the seen mark, before the rename: moved without being handled again.
    std::fs::rename(maildir.join("done").join("m1"), maildir.join("cur").join("m1")).unwrap();
    let third = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(third[0].reason.contains("already handled"), "{:?}", third[0]);
    assert!(third[0].orders.is_empty() && third[0].reply.is_none());
    assert!(maildir.join("done").join("m1").is_file());
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 1);
}

#[test]
fn the_same_bytes_twice_in_one_run_are_handled_once() {
    // A run files its messages away only after one sync for many of them (a group commit): the
    // second copy, delivered twice by the MTA, must still be seen as the same message.
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    deliver(&maildir, "m1", &msg);
    deliver(&maildir, "m2", &msg);
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(run.len(), 2);
    let (first, second) = if run[0].reply.is_some() { (&run[0], &run[1]) } else { (&run[1], &run[0]) };
    assert_eq!(first.orders[0].receipt.as_ref().unwrap().seq, 1);
    assert!(second.reason.contains("already handled"), "{second:?}");
    assert!(second.orders.is_empty() && second.reply.is_none());
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 1);
    for m in ["m1", "m2"] {
        assert!(maildir.join("done").join(m).is_file(), "{m} filed");
    }
    assert_eq!(seen_marks(&root), 1);
}

#[test]
fn two_intakes_at_once_one_waits_for_the_next_run() {
    let (_tmp, root, game, maildir) = one_game();
    deliver(&maildir, "m1", &expand(&game, &std::fs::read(corpus().join("pasted-body.eml")).unwrap()));
    std::fs::create_dir_all(root.join(".mail")).unwrap();
    let held = std::fs::File::create(root.join(".mail").join("intake.lock")).unwrap();
    held.try_lock().unwrap();
    let err = intake::run(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap_err();
    assert!(matches!(err, pbem::error::Error::Locked(_)), "{err}");
    assert!(maildir.join("new").join("m1").is_file(), "left for the next run");
    drop(held);
    let h = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(h[0].disposition, Disposition::Done);
}

#[test]
fn an_mbox_taken_twice_is_handled_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let mut mbox = Vec::new();
    for f in ["pasted-body.eml", "appended-attachment.eml"] {
        mbox.extend_from_slice(b"From sender@example.org Wed Jul  1 13:00:00 2026\n");
        mbox.extend(expand(&game, &std::fs::read(corpus().join(f)).unwrap()));
        mbox.extend_from_slice(b"\n");
    }
    let path = tmp.path().join("mbox");
    std::fs::write(&path, &mbox).unwrap();
    let first = take_in(&root, &Source::Mbox(path.clone()), &cfg(), now()).unwrap();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|h| h.disposition == Disposition::Done && h.orders.len() == 1 && h.orders[0].receipt.is_some()), "{first:?}");
    let second = take_in(&root, &Source::Mbox(path), &cfg(), now()).unwrap();
    assert!(second.is_empty(), "{second:?}");
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 2);
}

#[test]
fn a_huge_message_inside_an_mbox_is_refused_and_the_others_are_handled() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let mut mbox = Vec::new();
    for f in ["pasted-body.eml", "huge.eml", "appended-attachment.eml"] {
        mbox.extend_from_slice(b"From sender@example.org Wed Jul  1 13:00:00 2026\n");
        mbox.extend(expand(&game, &std::fs::read(corpus().join(f)).unwrap()));
        mbox.extend_from_slice(b"\n");
    }
    let path = tmp.path().join("mbox");
    std::fs::write(&path, &mbox).unwrap();
    let handled = take_in(&root, &Source::Mbox(path), &cfg(), now()).unwrap();
    assert_eq!(handled.len(), 3, "{handled:?}");
    let refused: Vec<_> = handled.iter().filter(|h| h.disposition == Disposition::Failed).collect();
    assert_eq!(refused.len(), 1, "{handled:?}");
    // The reason gives the size of the whole message, though only its head was kept.
    assert!(refused[0].reason.contains("too large: 2"), "{}", refused[0].reason);
    let spooled = root.join(".mail").join("spool").join("failed").join(&refused[0].name);
    assert!(std::fs::metadata(&spooled).unwrap().len() < 100_000, "only the head is spooled");
    let accepted: usize = handled.iter().map(|h| h.orders.iter().filter(|o| o.receipt.is_some()).count()).sum();
    assert_eq!(accepted, 2, "{handled:?}");
    let replies = Outbox::under(&root).pending().unwrap();
    assert_eq!(replies.len(), 3);
    assert!(replies.iter().any(|id| queued(&root, id).text.contains("larger than this judge accepts")));
}

/// A mail from the Union seat with its form (nonce number `n`) pasted and signed, and the
/// commitment its receipt must carry.
fn union_mail(game: &Path, n: u32) -> (Vec<u8>, String) {
    let text = form(game, "union", n, &|s| s);
    let commitment = hex::encode(pbem::commit::order_commitment("g1", 1, "union", text.as_bytes()));
    let mail = format!("From: meade@example.org\nTo: judge@example.net\nSubject: orders {n}\nMessage-ID: <u{n}@example.org>\n\n{text}{}", sign("union", &text));
    (mail.into_bytes(), commitment)
}

fn newest_union_commitment(game: &Path) -> String {
    pipeline::latest_receipts(&pipeline::load(game).unwrap().dir, 1).unwrap()["union"].commitment.clone()
}

#[test]
fn orders_in_an_mbox_count_in_the_order_they_were_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let mut mbox = Vec::new();
    let mut last = String::new();
    for n in [4, 1, 3, 2] {
        let (mail, c) = union_mail(&game, n);
        mbox.extend_from_slice(b"From meade@example.org Wed Jul  1 13:00:00 2026\n");
        mbox.extend(mail);
        mbox.extend_from_slice(b"\n");
        last = c;
    }
    let path = tmp.path().join("mbox");
    std::fs::write(&path, &mbox).unwrap();
    let h = take_in(&root, &Source::Mbox(path), &cfg(), now()).unwrap();
    assert_eq!(h.len(), 4);
    assert_eq!(newest_union_commitment(&game), last, "the last order in the mbox is the one in force");
}

#[test]
fn maildir_messages_are_handled_in_delivery_order() {
    let (tmp, root, game, maildir) = one_game();
    // Delivered in the same second; the counter in the name tells the order (as text, the
    // second name sorts first).
    let (first, _) = union_mail(&game, 1);
    let (second, second_c) = union_mail(&game, 2);
    deliver(&maildir, "1797100000.M99999P1.host", &first);
    deliver(&maildir, "1797100000.M100000P2.host", &second);
    let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_797_100_000);
    for name in ["1797100000.M99999P1.host", "1797100000.M100000P2.host"] {
        std::fs::File::options().write(true).open(maildir.join("new").join(name)).unwrap().set_modified(t).unwrap();
    }
    take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(newest_union_commitment(&game), second_c);
    // A Maildir that is not there (a typo in the config) is an error, not a quiet nothing.
    let err = intake::run(&root, &Source::Maildir(tmp.path().join("Mialdir")), &cfg(), now()).unwrap_err();
    assert!(err.to_string().contains("is not a Maildir"), "{err}");
}

#[test]
fn when_one_message_must_wait_every_later_one_waits_too() {
    let (_tmp, root, game, maildir) = one_game();
    let (older, _) = union_mail(&game, 1);
    let (newer, newer_c) = union_mail(&game, 2);
    deliver(&maildir, "1797100000.M1P1.host", &older);
    deliver(&maildir, "1797100001.M2P2.host", &newer);
    // The game stays locked (a long adjudication) while the first message is handled.
    let held = std::fs::File::options().create(true).truncate(false).write(true).open(game.join(".lock")).unwrap();
    held.try_lock().unwrap();
    let first = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|h| h.disposition == Disposition::Retry), "{first:?}");
    assert!(first[1].reason.contains("an earlier message for the same game waits"), "{}", first[1].reason);
    drop(held);
    let second = take_in(&root, &Source::Maildir(maildir), &cfg(), now()).unwrap();
    assert!(second.iter().all(|h| h.disposition == Disposition::Done), "{second:?}");
    assert_eq!(newest_union_commitment(&game), newer_c, "the newer order counts");
}

#[test]
fn a_clock_behind_the_game_or_an_unreadable_game_leaves_the_order_for_later() {
    let (_tmp, root, game, maildir) = one_game();
    let (mail, c) = union_mail(&game, 1);
    deliver(&maildir, "1797100000.M1P1.host", &mail);
    // The game opened at 12:00; a clock saying 11:00 must not refuse the player's order.
    let early = pipeline::parse_time("2026-07-01T11:00:00Z").unwrap();
    let h = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), early).unwrap();
    assert_eq!(h[0].disposition, Disposition::Retry, "{h:?}");
    assert!(h[0].reason.contains("refusing to act on game g1"), "{}", h[0].reason);
    assert!(Outbox::under(&root).pending().unwrap().is_empty(), "no reply yet");
    // A game folder whose game.toml cannot be read may be the game an order names: it waits.
    let broken = root.join("g2");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("game.toml"), "garbage = [\n").unwrap();
    let (other, _) = union_mail(&game, 2);
    let other = String::from_utf8(other).unwrap().replacen("game = \"g1\"", "game = \"g2\"", 1);
    deliver(&maildir, "1797100001.M2P2.host", other.as_bytes());
    let h = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(h[0].disposition, Disposition::Done, "{h:?}");
    assert_eq!(h[1].disposition, Disposition::Retry, "{h:?}");
    assert!(h[1].reason.contains("cannot be read"), "{}", h[1].reason);
    assert_eq!(newest_union_commitment(&game), c);
}

#[test]
fn replies_to_one_address_are_capped_per_hour_but_a_new_orders_receipt_always_goes() {
    let (_tmp, root, game, maildir) = one_game();
    let mut c = HostConfig::queue_only("Gettysburg judge <judge@example.net>");
    assert_eq!(c.intake.max_replies_per_hour, 10, "the documented default");
    c.intake.max_replies_per_hour = 3;
    for n in 1..=3 {
        deliver(&maildir, &format!("1797100000.M{n}P1.host"), format!("From: meade@example.org\nSubject: hello {n}\nMessage-ID: <h{n}@example.org>\n\nHello?\n").as_bytes());
    }
    deliver(&maildir, "1797100001.M4P1.host", b"From: meade@example.org\nSubject: hello 4\nMessage-ID: <h4@example.org>\n\nHello?\n");
    let (orders, commitment) = union_mail(&game, 4);
    deliver(&maildir, "1797100001.M5P1.host", &orders);
    let h = take_in(&root, &Source::Maildir(maildir.clone()), &c, now()).unwrap();
    assert_eq!(h.len(), 5);
    assert!(h[..3].iter().all(|h| h.reply.is_some()), "{h:?}");
    // The fourth is over the cap: not answered, and the run says why.
    assert_eq!(h[3].disposition, Disposition::Done, "{:?}", h[3]);
    assert!(h[3].reply.is_none(), "{:?}", h[3]);
    assert!(h[3].reason.contains("no reply sent") && h[3].reason.contains("max_replies_per_hour = 3"), "{}", h[3].reason);
    assert!(h[3].needs_host && h[..3].iter().all(|h| !h.needs_host), "{h:?}");
    // A new order is taken in and its receipt goes all the same (tester t18b-1: the cap, which
    // anyone may fill with mail from the seat's address, cost the player a receipt).
    assert!(h[4].reply.is_some() && !h[4].needs_host, "{:?}", h[4]);
    assert_eq!(newest_union_commitment(&game), commitment);
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 4);
    // Another address has its own count.
    deliver(&maildir, "1797100002.M5P1.host", &order_mail(&game, "confederate", 5));
    let h = take_in(&root, &Source::Maildir(maildir.clone()), &c, now()).unwrap();
    assert!(h[0].reply.is_some(), "{h:?}");
    // An hour later meade is answered again.
    deliver(&maildir, "1797103700.M6P1.host", b"From: meade@example.org\nSubject: again\nMessage-ID: <h6@example.org>\n\nHello?\n");
    let later = now() + chrono::Duration::minutes(61);
    let h = take_in(&root, &Source::Maildir(maildir), &c, later).unwrap();
    assert!(h[0].reply.is_some(), "{h:?}");
}

#[test]
fn a_message_that_once_crashed_intake_is_answered_and_the_next_one_is_handled() {
    let (_tmp, root, game, maildir) = one_game();
    let (bad, _) = union_mail(&game, 1);
    let bad = transform(bad, "armor-accent");
    let (good, good_c) = union_mail(&game, 2);
    deliver(&maildir, "1797100000.M1P1.host", &bad);
    deliver(&maildir, "1797100001.M2P2.host", &good);
    let handled = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(handled.len(), 2, "{handled:?}");
    assert_eq!(handled[0].disposition, Disposition::Done, "{handled:?}");
    let refusal = handled[0].orders[0].error.as_deref().unwrap_or_default();
    assert!(refusal.contains("not base64"), "{refusal}");
    assert!(handled[1].orders[0].receipt.is_some(), "{handled:?}");
    assert_eq!(newest_union_commitment(&game), good_c);
    assert!(std::fs::read_dir(maildir.join("new")).unwrap().next().is_none(), "every message left new/");
}

/// How many messages the mail log marks seen.
fn seen_marks(root: &Path) -> usize {
    std::fs::read_to_string(root.join(".mail").join("log")).unwrap().lines().filter(|l| l.starts_with("seen ")).count()
}

#[test]
fn a_message_marked_seen_by_an_older_version_is_not_handled_again() {
    // Older versions marked each handled message by a file `ROOT/.mail/seen/HASH`; an upgraded
    // host must still honour them (the log holds only marks written since).
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    let seen = root.join(".mail").join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    std::fs::write(seen.join(pbem::commit::sha256_hex(&msg)), "2026-07-01T12:00:00Z\n").unwrap();
    deliver(&maildir, "m1", &msg);
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(run[0].reason.contains("already handled"), "{:?}", run[0]);
    assert!(run[0].orders.is_empty() && run[0].reply.is_none());
    assert!(maildir.join("done").join("m1").is_file());
    assert!(Outbox::under(&root).pending().unwrap().is_empty());
}

#[test]
fn a_message_handled_again_after_a_kill_is_answered_as_a_first_acceptance() {
    // Killed after the order's receipt was written but before the reply and the seen mark were
    // durable: the rerun finds its own receipt again, which must not read "already received".
    for cut_took_line in [false, true] {
        let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
        deliver(&maildir, "m1", &msg);
        let first = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
        let id = first[0].reply.clone().unwrap();
        let text = queued(&root, &id).text;
        assert!(text.contains("ACCEPTED") && !text.contains("already received"), "{text}");
        let queue = Outbox::under(&root).dir.join("queue");
        std::fs::remove_file(queue.join(format!("{id}.mail"))).unwrap();
        std::fs::rename(maildir.join("done").join("m1"), maildir.join("new").join("m1")).unwrap();
        // Without the seen mark and the reply's count; with `cut_took_line`, killed right after
        // the receipt, before the log noted which message took it.
        let log = root.join(".mail").join("log");
        let keep = |l: &str| !l.starts_with("seen ") && !l.starts_with("mail ") && !l.starts_with("reply ") && (!cut_took_line || !l.starts_with("took "));
        let kept: String = std::fs::read_to_string(&log).unwrap().lines().filter(|l| keep(l)).map(|l| format!("{l}\n")).collect();
        std::fs::write(&log, kept).unwrap();
        let again = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
        assert_eq!(again[0].reply.as_deref(), Some(id.as_str()));
        assert_eq!(again[0].orders[0].receipt.as_ref().unwrap().seq, 1, "the same receipt");
        assert_eq!(queued(&root, &id).text, text, "answered as the first time (cut_took_line = {cut_took_line})");
    }
}

/// A run killed after its batch's receipts were written but before its replies were queued: a
/// message whose order a later message of that batch replaced is answered as it was then, with its
/// receipt, not refused as a resend of a replaced order (its own earlier handling took it).
#[test]
fn a_message_whose_receipt_a_later_one_replaced_before_a_kill_is_answered_as_then() {
    let (_tmp, root, game, maildir) = one_game();
    // m1 and a resend of it in other bytes (m1b), then m2, which replaces them.
    let m1 = order_mail(&game, "union", 1);
    let m1b = resent(&m1);
    deliver(&maildir, "m1", &m1);
    deliver(&maildir, "m1b", &m1b);
    deliver(&maildir, "m2", &order_mail(&game, "union", 2));
    let first = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    let ids: Vec<String> = first.iter().map(|h| h.reply.clone().unwrap()).collect();
    let texts: Vec<String> = ids.iter().map(|id| queued(&root, id).text).collect();
    assert!(texts.iter().all(|t| t.contains("ACCEPTED")), "{texts:?}");
    // As a kill leaves it: receipts written, no reply queued, nothing marked seen or filed.
    let queue = Outbox::under(&root).dir.join("queue");
    for id in &ids {
        std::fs::remove_file(queue.join(format!("{id}.mail"))).unwrap();
    }
    for m in ["m1", "m1b", "m2"] {
        std::fs::rename(maildir.join("done").join(m), maildir.join("new").join(m)).unwrap();
    }
    let log = root.join(".mail").join("log");
    let kept: String = std::fs::read_to_string(&log).unwrap().lines().filter(|l| !l.starts_with("seen ") && !l.starts_with("mail ") && !l.starts_with("reply ")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).unwrap();
    let again = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(texts[1].contains("already received as receipt 1"), "{}", texts[1]);
    for (i, (h, seq)) in again.iter().zip([1, 1, 2]).enumerate() {
        assert_eq!(h.orders[0].receipt.as_ref().map(|r| r.seq), Some(seq), "{h:?}");
        assert_eq!(queued(&root, &ids[i]).text, texts[i], "message {} answered as then", i + 1);
    }
}

/// `msg` sent again as another message: a header of its own and another Message-ID, the same
/// body (not the same mail delivered again, which is answered once).
fn resent(msg: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(msg.to_vec()).unwrap();
    let at = text.find("Message-ID: <").unwrap() + "Message-ID: <".len();
    format!("X-Resent: yes\r\n{}resent-{}", &text[..at], &text[at..]).into_bytes()
}

#[test]
fn the_same_mail_delivered_again_with_more_trace_lines_is_answered_once() {
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    deliver(&maildir, "m1", &msg);
    let first = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(first[0].reply.is_some());
    // Delivered again (tester16 T16a-6), in a later run and twice in one run, each copy with one
    // more Received: line.
    let again = |n: usize| [format!("Received: from relay{n}.example.net by mx.example.net; Wed, 1 Jul 2026 13:0{n}:00 +0000\r\n").as_bytes(), &msg].concat();
    deliver(&maildir, "m2", &again(2));
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(run[0].reason.contains("the same mail delivered again"), "{:?}", run[0]);
    assert!(run[0].orders.is_empty() && run[0].reply.is_none());
    deliver(&maildir, "m3", &again(3));
    deliver(&maildir, "m4", &again(4));
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(run.iter().all(|h| h.reply.is_none() && h.reason.contains("the same mail delivered again")), "{run:?}");
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 1, "one answer");
    // The same Message-ID with another body (a program that reuses its ids) is read.
    let changed = String::from_utf8(msg.clone()).unwrap().replace("Here are my orders", "Here are my orders again");
    deliver(&maildir, "m5", changed.as_bytes());
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(run[0].reply.is_some(), "{:?}", run[0]);
}

#[test]
fn a_resend_in_another_message_still_reads_already_received() {
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    deliver(&maildir, "m1", &msg);
    take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    // The same order in a new message (other bytes): a resend, told so.
    let other = resent(&msg);
    deliver(&maildir, "m2", &other);
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    let text = queued(&root, run[0].reply.as_deref().unwrap()).text;
    assert!(text.contains("already received as receipt 1"), "{text}");
}

/// The receipts of a run's orders wait for one sync shared by the run's messages
/// (`pipeline::submit_grouped`): the reply still carries each receipt as written, a later message
/// of the same run for the same game finds it (a resend is told so, with the same receipt), and
/// every receipt is on disk when the run ends.
#[test]
fn in_one_run_a_receipt_that_waits_is_attached_found_by_a_resend_and_written() {
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    deliver(&maildir, "m1", &msg);
    let other = resent(&msg);
    deliver(&maildir, "m2", &other);
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(run.len(), 2, "{run:?}");
    let rc = run[0].orders[0].receipt.clone().expect("accepted");
    let file = root.join("g1").join("receipts").join(format!("{:06}", rc.step)).join(format!("{}-{}.toml", rc.role, rc.seq));
    let first = queued(&root, run[0].reply.as_deref().unwrap());
    let attached = first.files.iter().find(|(n, _)| n.starts_with("receipt-g1-") && n.ends_with(".toml")).expect("receipt attached");
    assert_eq!(attached.1, std::fs::read(&file).unwrap(), "the receipt attached is the one written");
    let second = queued(&root, run[1].reply.as_deref().unwrap()).text;
    assert!(second.contains(&format!("already received as receipt {}", rc.seq)), "{second}");
    assert_eq!(run[1].orders[0].receipt.as_ref().map(|r| r.seq), Some(rc.seq));
}

#[test]
fn intake_removes_the_temp_files_a_killed_run_left_in_the_mail_folders() {
    let (_tmp, root, maildir, msg) = one_game_and_its_order_mail();
    // A run killed in the middle of writing a reply to the outbox (its process is gone).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let queue = Outbox::under(&root).dir.join("queue");
    std::fs::create_dir_all(&queue).unwrap();
    let stale = queue.join(format!(".x.eml.{dead}.0.tmp"));
    std::fs::write(&stale, "half a mail").unwrap();
    let other = queue.join(".keep-me");
    std::fs::write(&other, "not ours").unwrap();
    deliver(&maildir, "m1", &msg);
    take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert!(!stale.exists(), "the dead run's temp file is removed");
    assert!(other.exists(), "other files stay");
}

/// A run of more messages than one filing batch (256): each full batch is filed away on the
/// group's thread while the messages after it are handled. An order for a game whose first order
/// came in the batch being filed then waits for that order's receipt, and is its next receipt;
/// every message is filed and marked seen once, and the same bytes again in a later batch of the
/// run are not handled twice.
#[test]
fn a_run_longer_than_a_batch_files_every_batch_and_keeps_the_order_of_a_game() {
    let (_tmp, root, game, maildir) = one_game();
    // Maildir names `SECONDS.NAME`: arrival order is by their seconds.
    let first = order_mail(&game, "union", 1);
    deliver(&maildir, "1700000000.first", &first);
    for n in 1..=300 {
        let stray = format!("From: s{n}@elsewhere.example\nTo: judge@example.net\nSubject: hi\nMessage-ID: <s{n}@elsewhere.example>\n\nhello {n}\n");
        deliver(&maildir, &format!("{}.stray", 1_700_000_000 + n), stray.as_bytes());
    }
    deliver(&maildir, "1700000400.again", &first);
    deliver(&maildir, "1700000500.second", &order_mail(&game, "union", 2));
    let run = take_in(&root, &Source::Maildir(maildir.clone()), &cfg(), now()).unwrap();
    assert_eq!(run.len(), 303);
    let by_name = |n: &str| run.iter().find(|h| h.name == n).unwrap();
    assert_eq!(by_name("1700000000.first").orders[0].receipt.as_ref().unwrap().seq, 1);
    assert!(by_name("1700000400.again").reason.contains("already handled"), "{:?}", by_name("1700000400.again"));
    assert_eq!(by_name("1700000500.second").orders[0].receipt.as_ref().unwrap().seq, 2);
    let receipts = std::fs::read_dir(game.join("receipts").join("000001")).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".toml")).count();
    assert_eq!(receipts, 2);
    assert!(std::fs::read_dir(maildir.join("new")).unwrap().next().is_none(), "every message left new/");
    assert_eq!(std::fs::read_dir(maildir.join("done")).unwrap().count() + std::fs::read_dir(maildir.join("failed")).unwrap().filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".reason")).count(), 303);
    assert_eq!(seen_marks(&root), 302, "one seen mark for each bytes handled");
    assert_eq!(Outbox::under(&root).pending().unwrap().len(), 2, "a reply to each order");
}
