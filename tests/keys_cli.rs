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

/// Runs `pbem ARGS` on a new pseudo-terminal (its controlling terminal, as in an interactive
/// shell); when the output shows `prompt`, types `answer` and a newline. Returns the exit status
/// and everything shown on the terminal.
#[cfg(target_os = "linux")]
fn on_terminal(args: &[&std::ffi::OsStr], prompt: &str, answer: &str) -> (std::process::ExitStatus, String) {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the given integers; the other arguments may be null.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened by openpty and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pbem"));
    cmd.args(args).env_remove("SSH_AUTH_SOCK").env_remove("PBEM_PASSPHRASE").env_remove("SSH_ASKPASS").env_remove("DISPLAY");
    cmd.stdin(slave.try_clone().unwrap()).stdout(slave.try_clone().unwrap()).stderr(slave);
    // SAFETY: only async-signal-safe calls between fork and exec: a new session whose controlling
    // terminal is the pty on standard input.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let mut term = std::fs::File::from(master);
    let mut shown = Vec::new();
    let mut typed = false;
    let mut buf = [0u8; 4096];
    // Reads until the other side closes (EIO on Linux once pbem and ssh-keygen have exited).
    while let Ok(n) = term.read(&mut buf) {
        if n == 0 {
            break;
        }
        shown.extend_from_slice(&buf[..n]);
        if !typed && String::from_utf8_lossy(&shown).contains(prompt) {
            term.write_all(format!("{answer}\n").as_bytes()).unwrap();
            typed = true;
        }
    }
    (child.wait().unwrap(), String::from_utf8_lossy(&shown).into_owned())
}

/// An encrypted key without PBEM_PASSPHRASE or agent, run on a terminal: the passphrase is asked
/// for there (ssh-keygen's prompt), not echoed, and the file is signed.
#[cfg(target_os = "linux")]
#[test]
fn a_passphrase_is_asked_on_the_terminal_and_not_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conf = keygen(d, "conf", "ed25519", "", "");
    let union = keygen(d, "union", "rsa", "2048", "hunter2-secret");
    new_game(d, &pub_of(&conf), &pub_of(&union)).success();
    let uf = form(d, "union");
    let (status, shown) = on_terminal(&["sign".as_ref(), "--key".as_ref(), union.as_os_str(), uf.as_os_str()], "passphrase", "hunter2-secret");
    assert!(status.success(), "{shown}");
    assert!(shown.contains("Enter passphrase") && shown.contains("signed "), "{shown}");
    assert!(!shown.contains("hunter2"), "the passphrase was echoed: {shown}");
    pbem().arg("verify").arg(&uf).arg("--game").arg(d.join("g1")).assert().success().stdout(predicate::str::contains("seat union"));

    // A wrong passphrase: refused, the file left as it was.
    let before = std::fs::read(&uf).unwrap();
    let (status, shown) = on_terminal(&["sign".as_ref(), "--key".as_ref(), union.as_os_str(), uf.as_os_str()], "passphrase", "wrong");
    assert!(!status.success(), "{shown}");
    assert_eq!(std::fs::read(&uf).unwrap(), before);
}

/// A certificate given as a seat's key is refused as one, with what to give instead; a file that
/// holds no key given to `sign --key` (the order file) says a private key is wanted, not a public
/// key line (tester16 T16c-8).
#[test]
fn a_certificate_or_a_file_without_a_key_is_named_for_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let conf = keygen(d, "conf", "ed25519", "", "");
    let union = keygen(d, "union", "ed25519", "", "");
    let ca = keygen(d, "ca", "ed25519", "", "");
    assert!(Command::new("ssh-keygen").args(["-q", "-s"]).arg(&ca).args(["-I", "id", "-n", "x"]).arg(pub_of(&union)).status().unwrap().success());
    let cert = d.join("union-cert.pub");
    let refused = "is an OpenSSH certificate (ssh-ed25519-cert-v01@openssh.com); pbem does not accept certificates: give the plain public key";
    new_game(d, &pub_of(&conf), &cert).code(1).stderr(predicate::str::contains(format!("--player union: {} {refused}", cert.display())));
    new_game(d, &pub_of(&conf), &pub_of(&union)).success();
    pbem().arg("seat").arg(d.join("g1")).args(["--role", "union", "--key"]).arg(&cert).assert().code(1).stderr(predicate::str::contains(refused));
    let uf = form(d, "union");
    pbem().arg("verify").arg(&uf).arg("--key").arg(&cert).assert().code(1).stderr(predicate::str::contains(refused));
    pbem().arg("sign").arg("--key").arg(&uf).arg(&uf).assert().code(1)
        .stderr(predicate::str::contains(format!("{} is not an OpenSSH private key: it holds no key at all: give your private key file", uf.display())));
    pbem().arg("sign").arg("--key").arg(&cert).arg(&uf).assert().code(1).stderr(predicate::str::contains(refused));
    // tester18 T18-2: an order signed by ssh-keygen with the certificate is named as such.
    assert!(Command::new("ssh-keygen").args(["-q", "-Y", "sign", "-n", "pbem-orders", "-f"]).arg(&cert).arg(&uf).status().unwrap().success());
    let by_cert = "made with an OpenSSH certificate (ssh-ed25519-cert-v01@openssh.com), which pbem does not take: sign with the plain key";
    pbem().arg("verify").arg(&uf).arg("--key").arg(pub_of(&union)).assert().code(1).stderr(predicate::str::contains(by_cert));
    pbem().arg("submit").arg(d.join("g1")).arg(&uf).assert().code(1).stderr(predicate::str::contains(by_cert));
}

/// A passphrase-protected key in the PEM or PKCS#8 format (older ssh-keygen's default for RSA and
/// ECDSA), which `pbem sign` hands to ssh-keygen, takes its passphrase from PBEM_PASSPHRASE too:
/// ssh-keygen gets it from this binary as its askpass program (tester t25f D4a: it asked on the
/// terminal, and failed without one). A wrong passphrase fails.
#[test]
fn a_pem_key_takes_its_passphrase_from_the_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("pem");
    let made = Command::new("ssh-keygen").args(["-q", "-t", "ecdsa", "-m", "PEM", "-N", "sekrit", "-C", "pem", "-f"]).arg(&key).env_remove("SSH_AUTH_SOCK").status().unwrap();
    assert!(made.success());
    let conf = keygen(tmp.path(), "conf", "ed25519", "", "");
    new_game(tmp.path(), &pub_of(&conf), &pub_of(&key)).success();
    let f = form(tmp.path(), "union");
    pbem().args(["sign", "--key"]).arg(&key).arg(&f).env("PBEM_PASSPHRASE", "sekrit").env_remove("DISPLAY").assert().success();
    pbem().arg("verify").arg("--game").arg(tmp.path().join("g1")).arg(&f).assert().success().stdout(predicates::str::contains("good signature by seat union"));
    let again = form(tmp.path(), "union");
    pbem().args(["sign", "--key"]).arg(&key).arg(&again).env("PBEM_PASSPHRASE", "wrong").assert().failure();
}
