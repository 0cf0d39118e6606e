//! The keys players already have, through the real `pbem` binary: RSA and ECDSA seats, keys in
//! ssh-agent (a real `ssh-agent -a SOCKET` started here) and passphrases.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;

/// `pbem` with no agent and no passphrase from the caller's environment.
fn pbem() -> assert_cmd::Command {
    let mut c = cargo_bin_cmd!("pbem");
    c.env_remove("SSH_AUTH_SOCK").env_remove("PBEM_PASSPHRASE");
    c
}

/// `ssh-keygen -t KIND [-b BITS] -N PASSPHRASE` in `dir`; the private key's path.
fn keygen(dir: &Path, name: &str, kind: &str, bits: &str, passphrase: &str) -> PathBuf {
    let key = dir.join(name);
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-t", kind, "-N", passphrase, "-C", name, "-f"]).arg(&key);
    if !bits.is_empty() {
        c.args(["-b", bits]);
    }
    assert!(c.env_remove("SSH_AUTH_SOCK").status().unwrap().success());
    key
}

fn new_game(dir: &Path, conf_pub: &Path, union_pub: &Path) -> assert_cmd::assert::Assert {
    pbem()
        .arg("new")
        .arg(dir.join("g1"))
        .args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z", "--player"])
        .arg(format!("confederate:lee@example.org:{}", conf_pub.display()))
        .arg("--player")
        .arg(format!("union:meade@example.org:{}", union_pub.display()))
        .assert()
}

fn form(dir: &Path, role: &str) -> PathBuf {
    let out = dir.join(format!("{role}.toml"));
    pbem().arg("form").arg(dir.join("g1")).args(["--role", role, "-o"]).arg(&out).assert().success();
    out
}

fn pub_of(key: &Path) -> PathBuf {
    PathBuf::from(format!("{}.pub", key.display()))
}

/// RSA and ECDSA seats: pbem signs with one, ssh-keygen with the other, the step resolves and audits.
#[test]
fn rsa_and_ecdsa_seats_play_a_step_and_audit() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conf = keygen(d, "conf", "rsa", "3072", "");
    let union = keygen(d, "union", "ecdsa", "384", "");
    new_game(d, &pub_of(&conf), &pub_of(&union)).success();
    let cf = form(d, "confederate");
    pbem().arg("sign").arg("--key").arg(&conf).arg(&cf).assert().success();
    let uf = form(d, "union");
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(&union).arg(&uf).env_remove("SSH_AUTH_SOCK").output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    pbem().arg("verify").arg(&cf).arg("--game").arg(d.join("g1")).assert().success().stdout(predicate::str::contains("seat confederate"));
    pbem().arg("submit").arg(d.join("g1")).arg(&cf).arg(&uf).args(["--now", "2026-07-01T13:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("accepted").count(2));
    pbem().arg("adjudicate").arg(d.join("g1")).args(["--now", "2026-07-01T14:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("resolved step(s) 1"));
    pbem().arg("audit").arg(d.join("g1")).assert().success().stdout(predicate::str::contains("audit passed"));
}

#[test]
fn a_short_rsa_seat_key_is_refused_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conf = keygen(d, "conf", "rsa", "1024", "");
    let union = keygen(d, "union", "ed25519", "", "");
    new_game(d, &pub_of(&conf), &pub_of(&union)).code(1)
        .stderr(predicate::str::contains("--player confederate").and(predicate::str::contains("1024-bit RSA key")).and(predicate::str::contains("at least 2048 bits")));
    assert!(!d.join("g1").exists());
    let f = d.join("x.toml");
    std::fs::write(&f, "[pbem]\n").unwrap();
    pbem().arg("sign").arg("--key").arg(&conf).arg(&f).assert().code(1).stderr(predicate::str::contains("1024-bit RSA key"));
}

/// A real ssh-agent on a socket in `dir`, killed when dropped.
struct Agent {
    child: Child,
    socket: PathBuf,
}

impl Agent {
    fn start(dir: &Path) -> Agent {
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent").arg("-D").arg("-a").arg(&socket).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().expect("ssh-agent must be installed");
        // The agent makes its socket at once; wait for it without a fixed sleep.
        for _ in 0..500 {
            if socket.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(socket.exists(), "ssh-agent did not make its socket");
        Agent { child, socket }
    }
    fn add(&self, key: &Path) {
        let out = Command::new("ssh-add").arg(key).env("SSH_AUTH_SOCK", &self.socket).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--key` names a .pub file whose private half is only in ssh-agent; an encrypted key without
/// PBEM_PASSPHRASE is signed by the agent that holds it. Without the agent both fail clearly.
#[test]
fn sign_with_a_key_held_in_ssh_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conf = keygen(d, "conf", "ed25519", "", "");
    let union = keygen(d, "union", "ecdsa", "256", "");
    new_game(d, &pub_of(&conf), &pub_of(&union)).success();
    let agent = Agent::start(d);
    agent.add(&union);
    agent.add(&conf);
    // The private files go away (union) or get a passphrase (conf): only the agent can sign.
    std::fs::remove_file(&union).unwrap();
    assert!(Command::new("ssh-keygen").args(["-q", "-p", "-P", "", "-N", "secret", "-f"]).arg(&conf).output().unwrap().status.success());

    let uf = form(d, "union");
    pbem().arg("sign").arg("--key").arg(pub_of(&union)).arg(&uf).assert().code(1)
        .stderr(predicate::str::contains("ssh-keygen -Y sign with").and(predicate::str::contains("ssh-add -l")));
    pbem().arg("sign").arg("--key").arg(pub_of(&union)).arg(&uf).env("SSH_AUTH_SOCK", &agent.socket).assert().success();
    let cf = form(d, "confederate");
    pbem().arg("sign").arg("--key").arg(&conf).arg(&cf).assert().code(1)
        .stderr(predicate::str::contains("protected by a passphrase").and(predicate::str::contains("ssh-agent")));
    pbem().arg("sign").arg("--key").arg(&conf).arg(&cf).arg("--append").env("SSH_AUTH_SOCK", &agent.socket).assert().success();
    pbem().arg("submit").arg(d.join("g1")).arg(&cf).arg(&uf).args(["--now", "2026-07-01T13:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("accepted").count(2));

    // A key the agent does not hold is refused by ssh-keygen, and nothing is written.
    let other = keygen(d, "other", "ed25519", "", "");
    std::fs::remove_file(&other).unwrap();
    let before = std::fs::read(&uf).unwrap();
    pbem().arg("sign").arg("--key").arg(pub_of(&other)).arg(&uf).env("SSH_AUTH_SOCK", &agent.socket).assert().code(1);
    assert_eq!(std::fs::read(&uf).unwrap(), before);
}
