//! SMTP with TLS and AUTH on loopback: aiosmtpd (python3-aiosmtpd) with a certificate from a
//! throwaway CA made by the `openssl` command, our lettre/rustls transport trusting that CA through
//! `ca_file`, for STARTTLS and implicit TLS. .ci/run installs what is missing; no skipping.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use pbem::mail::compose::{self, Draft};
use pbem::mail::config::{Security, TransportConfig};
use pbem::mail::transport;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl is missing (.ci/run installs it)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and a server certificate for localhost / 127.0.0.1 signed by it; returns (ca, cert, key).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=pbem test CA"]);
    openssl(dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"]);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(dir, &["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext"]);
    (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key"))
}

fn start(dir: &Path, mode: &str, cert: &Path, key: &Path) -> (Server, u16) {
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mail/smtpd.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .arg(dir.join("boxes"))
        .arg(mode)
        .arg(cert)
        .arg(key)
        .args(["judge", "s3cret"])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "python3-aiosmtpd is missing or the TLS server did not start");
    (Server(child), port)
}

fn send(dir: &Path, port: u16, security: Security, ca: Option<&Path>, password: &str) -> Result<(), String> {
    let pw = dir.join(format!("pw-{port}-{password}"));
    std::fs::write(&pw, format!("{password}\n")).unwrap();
    let cfg = TransportConfig::Smtp {
        host: "localhost".into(),
        port: Some(port),
        security,
        user: Some("judge".into()),
        password_env: None,
        password_file: Some(pw),
        ca_file: ca.map(Path::to_path_buf),
        timeout_secs: Some(10),
    };
    let t = transport::from_config(&cfg).map_err(|e| e.to_string())?.expect("an SMTP transport");
    let m = compose::build(Draft {
        id: format!("tls-{port}"),
        from: "pbem judge <judge@example.net>",
        to: vec!["lee@example.org".into()],
        cc: vec![],
        subject: "over TLS".into(),
        body: "hello\n".into(),
        attachments: vec![],
        in_reply_to: None,
        date: pbem::pipeline::parse_time("2026-07-01T12:00:00Z").unwrap(),
    })
    .map_err(|e| e.to_string())?;
    t.send(&m.id, &m.from, &m.to, &m.bytes).map_err(|e| e.message)
}

fn delivered(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("boxes").join("lee@example.org").join("new")).map(|r| r.count()).unwrap_or(0)
}

#[test]
fn starttls_and_implicit_tls_with_auth_deliver_and_refuse_what_they_should() {
    let tmp = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(tmp.path());
    for (mode, security) in [("starttls", Security::Starttls), ("tls", Security::Tls)] {
        let dir = tmp.path().join(mode);
        std::fs::create_dir_all(&dir).unwrap();
        let (_server, port) = start(&dir, mode, &cert, &key);
        send(&dir, port, security, Some(&ca), "s3cret").unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(delivered(&dir), 1, "{mode}: the message arrived");
        let e = send(&dir, port, security, None, "s3cret").expect_err("an untrusted certificate is refused");
        assert!(e.starts_with(&format!("the TLS handshake with the SMTP server localhost:{port} failed: ")) && !e.contains("os error"), "{mode}: {e}");
        // (aiosmtpd does not answer a wrong login within the timeout; tests/mail_outbox.rs has a 535.)
        let e = send(&dir, port, security, Some(&ca), "wrong").expect_err("a wrong password is refused");
        assert!(e.starts_with(&format!("the SMTP server localhost:{port} ")) && !e.contains("os error"), "{mode}: {e}");
        assert_eq!(delivered(&dir), 1, "{mode}: nothing else arrived");
    }
}
