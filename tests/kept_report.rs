//! A report as a player keeps it: the mail the cron run sent, saved whole, pins the record it
//! follows; `pbem audit --report` (the real binary) shows a history cut short after it.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use chrono::{DateTime, Utc};
use common::*;
use pbem::mail::config::TransportConfig;
use pbem::mail::{HostConfig, cron};
use pbem::pipeline::{self, Entropy};
use predicates::prelude::*;

fn at(s: &str) -> DateTime<Utc> {
    pipeline::parse_time(s).unwrap()
}

/// The mail files in `dir` sent to `to` whose subject holds `subject`.
fn mails_to(dir: &Path, to: &str, subject: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v.retain(|p| {
        let m = read_mail(&std::fs::read(p).unwrap());
        m.to == [to] && m.subject.contains(subject)
    });
    v
}

#[test]
fn a_report_mail_saved_whole_pins_its_record() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 24);
    let out = tmp.path().join("sent");
    let mut cfg = HostConfig::queue_only("judge <judge@example.net>");
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(tmp.path().join("Maildir").join(sub)).unwrap();
    }
    cfg.intake.maildir = Some(tmp.path().join("Maildir"));
    cfg.transport = TransportConfig::File { dir: out.clone() };
    let mut e = Entropy::seeded([9; 32]);
    cron::run(&root, &cfg, at("2026-07-01T12:05:00Z"), &mut e).unwrap();
    for (role, name) in [("union", "u1"), ("confederate", "c1")] {
        std::fs::write(tmp.path().join("Maildir").join("new").join(name), order_mail(&game, role, 1)).unwrap();
    }
    let r = cron::run(&root, &cfg, at("2026-07-02T03:00:00Z"), &mut e).unwrap();
    assert!(r.games[0].summary.contains("resolved step(s) 1"), "{r:?}");
    let first = mails_to(&out, "meade@example.org", "the game begins");
    let step1 = mails_to(&out, "meade@example.org", "step 1 resolved");
    assert_eq!((first.len(), step1.len()), (1, 1));
    cargo_bin_cmd!("pbem").arg("audit").arg(&game).arg("--report").arg(&first[0]).arg("--report").arg(&step1[0]).assert().success().stdout(
        predicate::str::contains("record 0 is in the game with this report's hash").and(predicate::str::contains("record 1 is in the game with this report's hash")),
    );
    // The host removes record 1 with its state, reports and the next step's host seed ...
    for f in ["records/000001.json", "records/000001.json.sig", "states/000001.json", "host/seeds/000002.hex"] {
        std::fs::remove_file(game.join(f)).unwrap();
    }
    std::fs::remove_dir_all(game.join("reports/000001")).unwrap();
    // ... but not yet its withheld orders: left behind, they fail the audit by themselves.
    cargo_bin_cmd!("pbem").arg("audit").arg(&game).assert().failure().stderr(predicate::str::contains("holds withheld orders of step 1, which no record reached"));
    for f in std::fs::read_dir(game.join("host/withheld")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    // Everything of step 1 gone: the game audits clean on its own, the kept mail of record 1 does not.
    cargo_bin_cmd!("pbem").arg("audit").arg(&game).arg("--report").arg(&first[0]).assert().success();
    cargo_bin_cmd!("pbem").arg("audit").arg(&game).arg("--report").arg(&step1[0]).assert().failure().stderr(
        predicate::str::contains("follows record 1").and(predicate::str::contains("000001.json is missing; the game's records stop at record 0")),
    );
}
