//! Deadlines in each player's own time zone (`pbem new --time-zone ROLE=ZONE`), with the time
//! left, in reports, forms, `pbem status` and mail subjects, run as the real binary.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

/// Game `g1` under `root`, created 2026-11-30 13:00 UTC with 72-hour deadlines, the Union
/// player in New York and the Confederate one without a zone.
fn new_game(root: &Path, tmp: &Path) -> PathBuf {
    let mut args = vec!["new".to_string(), root.join("g1").display().to_string(), "--rules".into(), "gettysburg-campaign".into()];
    for role in ["union", "confederate"] {
        let pubfile = tmp.join(format!("{role}.pub"));
        std::fs::write(&pubfile, common::key(role).public_key().to_openssh().unwrap()).unwrap();
        args.extend(["--player".into(), format!("{role}:{}:{}", common::email(role), pubfile.display())]);
    }
    args.extend(["--time-zone", "Union=America/New_York", "--now", "2026-11-30T13:00:00Z"].map(String::from));
    pbem().args(&args).assert().success();
    root.join("g1")
}

fn lines_with<'a>(text: &'a str, start: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.trim_start().starts_with(start)).collect()
}

#[test]
fn reports_forms_and_status_show_each_seats_deadline_and_the_time_left() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), tmp.path());
    let gf = std::fs::read_to_string(game.join("game.toml")).unwrap();
    assert!(gf.contains("role = \"union\"\nemail = \"meade@example.org\"\nkey = "), "{gf}");
    assert_eq!(lines_with(&gf, "time_zone"), ["time_zone = \"America/New_York\""], "only the seat given a zone has one");

    let union = std::fs::read_to_string(game.join("reports/000000/union.txt")).unwrap();
    assert_eq!(lines_with(&union, "deadline:"), ["  deadline: Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)"]);
    assert_eq!(lines_with(&union, "time left:"), ["  time left: 3 days (when this report was written)"]);
    assert_eq!(lines_with(&union, "# Deadline:"), ["# Deadline: Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)"]);
    assert_eq!(lines_with(&union, "# Time left:"), ["# Time left: 3 days (when this form was made)"]);
    let confederate = std::fs::read_to_string(game.join("reports/000000/confederate.txt")).unwrap();
    assert_eq!(lines_with(&confederate, "deadline:"), ["  deadline: Thu 03 Dec 2026 13:00 UTC"]);

    let form = pbem().arg("form").arg(&game).args(["--role", "union", "--now", "2026-12-01T10:30:00Z"]).assert().success();
    assert_eq!(lines_with(&stdout(&form), "# Time left:"), ["# Time left: 2 days 2 hours (when this form was made)"]);

    let status = pbem().arg("status").arg(&game).args(["--now", "2026-12-03T12:15:00Z"]).assert().success();
    let status = stdout(&status);
    assert_eq!(lines_with(&status, "step 1"), ["step 1 opened 2026-11-30T13:00:00Z, deadline 2026-12-03T13:00:00Z (45 minutes left)"]);
    assert_eq!(lines_with(&status, "confederate"), ["  confederate (command): awaited"]);
    assert_eq!(lines_with(&status, "union"), ["  union (command): awaited; in its time zone the deadline is Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)"]);
    // Once the seat has sent orders, still in its own zone (tester t17a-2: only while awaited).
    let order = tmp.path().join("union.toml");
    let text = common::form(&game, "union", 1, &|s| s);
    std::fs::write(&order, format!("{text}{}", common::sign("union", &text))).unwrap();
    pbem().arg("submit").arg(&game).arg(&order).args(["--now", "2026-12-03T12:00:00Z"]).assert().success();
    let status = pbem().arg("status").arg(&game).args(["--now", "2026-12-03T12:15:00Z"]).assert().success();
    let union = lines_with(&stdout(&status), "union").concat();
    assert!(union.starts_with("  union (command): received 2026-12-03T12:00:00Z (receipt 1, ") && union.ends_with("); in its time zone the deadline is Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)"), "{union}");
    let late = pbem().arg("status").arg(&game).args(["--now", "2026-12-03T13:00:00Z"]).assert().success();
    assert_eq!(lines_with(&stdout(&late), "step 1"), ["step 1 opened 2026-11-30T13:00:00Z, deadline 2026-12-03T13:00:00Z (passed)"]);

    pbem().arg("audit").arg(&game).assert().success();
}

#[test]
fn a_bad_time_zone_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), tmp.path());
    let pubfile = tmp.path().join("union.pub");
    let player = |role: &str| format!("{role}:{}:{}", common::email(role), pubfile.display());
    let out = pbem().arg("new").arg(tmp.path().join("g2")).args(["--rules", "gettysburg-campaign", "--player", &player("union"), "--player", &player("confederate")])
        .args(["--time-zone", "union=Eastern"]).assert().failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--time-zone union=Eastern: \"Eastern\" is not an IANA time zone (e.g. America/New_York"), "{err}");
    let out = pbem().arg("new").arg(tmp.path().join("g2")).args(["--rules", "gettysburg-campaign", "--player", &player("union"), "--player", &player("confederate")])
        .args(["--time-zone", "meade=UTC"]).assert().failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--time-zone meade=UTC: no --player with role \"meade\" (given: union, confederate)"), "{err}");
    // A hand-edited game.toml with a zone that is none: the file, line and field.
    let toml = game.join("game.toml");
    let text = std::fs::read_to_string(&toml).unwrap().replace("America/New_York", "America/Gotham");
    std::fs::write(&toml, &text).unwrap();
    let line = text.lines().position(|l| l.contains("Gotham")).unwrap() + 1;
    let out = pbem().arg("status").arg(&game).assert().failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains(&format!("game.toml:{line}: seat[1].time_zone: \"America/Gotham\" is not an IANA time zone")), "{err}");
}

/// The subjects of the mails the file transport wrote into `dir`, sorted.
fn subjects(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter_map(|m| {
            // The header unfolded (a long subject is folded onto indented lines).
            let head = m.split("\r\n\r\n").next().unwrap_or_default().replace("\r\n ", " ").replace("\r\n\t", " ");
            head.lines().find(|l| l.starts_with("Subject: ")).map(|l| l["Subject: ".len()..].to_string())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn mail_subjects_say_what_is_needed_by_when_in_the_players_zone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, tmp.path());
    let sent = tmp.path().join("sent");
    let cfg = tmp.path().join("pbem-mail.toml");
    // The mail config's zone for the Confederate address is used (the seat has none); the Union
    // seat's own zone wins over the mail config's.
    let text = format!(
        "from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"file\"\ndir = \"{}\"\n[reminders]\nhours_before = 24\n\
         [time_zones]\n\"lee@example.org\" = \"Europe/Berlin\"\n\"meade@example.org\" = \"Asia/Tokyo\"\n",
        sent.display()
    );
    std::fs::write(&cfg, text).unwrap();
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-11-30T13:05:00Z"]).assert().success();
    assert_eq!(
        subjects(&sent),
        [
            "[pbem g1] the game begins: orders needed by Thu 3 Dec 08:00 EST (your report, union)",
            "[pbem g1] the game begins: orders needed by Thu 3 Dec 14:00 CET (your report, confederate)",
        ]
    );
    std::fs::remove_dir_all(&sent).unwrap();
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-12-02T14:00:00Z"]).assert().success();
    assert_eq!(
        subjects(&sent),
        ["[pbem g1] reminder, step 1: orders needed by Thu 3 Dec 08:00 EST", "[pbem g1] reminder, step 1: orders needed by Thu 3 Dec 14:00 CET"]
    );
    // A `status` by mail gives the asker's deadline in the mail config's zone too (tester t18a-2:
    // only in UTC, while the other seat's own zone was shown).
    std::fs::remove_dir_all(&sent).unwrap();
    let mail = "From: lee@example.org\nTo: judge@example.net\nSubject: hi\nMessage-ID: <st@example.org>\n\nstatus\n";
    pbem().args(["intake", "--stdin", "--now", "2026-12-02T14:05:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    let reply = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).next().unwrap().replace("=\r\n", "").replace("\r\n", "\n");
    assert!(reply.contains("deadline for confederate in Europe/Berlin (from the host's mail settings): Thu 03 Dec 2026 14:00 CET (2026-12-03T13:00:00Z)"), "{reply}");
    // A receipt's time in the reply is in the seat's own zone, not the mail config's for its
    // address (tester t18d-4: UTC).
    std::fs::remove_dir_all(&sent).unwrap();
    pbem().args(["intake", "--stdin", "--now", "2026-12-02T14:10:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(common::order_mail(&root.join("g1"), "union", 1)).assert().success();
    let reply = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).next().unwrap().replace("=\r\n", "").replace("\r\n", "\n");
    assert!(reply.contains("received Wed 02 Dec 2026 09:10 EST"), "{reply}");
}
