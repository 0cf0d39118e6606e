//! Interoperability of `pbem::sig` with the real OpenSSH `ssh-keygen` (signing, verifying, key files).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pbem::sig::{self, NS_ORDERS, SigError};

/// Runs `ssh-keygen` with `args` (and `stdin`), without any agent.
fn keygen(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new("ssh-keygen")
        .args(args)
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh-keygen must be installed (Debian package openssh-client)");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs `ssh-keygen` and panics with its stderr unless it succeeds.
fn keygen_ok(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let out = keygen(args, stdin);
    assert!(
        out.status.success(),
        "ssh-keygen {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Makes a key with `ssh-keygen -t TYPE -N PASSPHRASE -C COMMENT` in `dir`, returns its path.
fn make_key(dir: &Path, name: &str, kind: &str, passphrase: &str) -> PathBuf {
    let path = dir.join(name);
    keygen_ok(
        &[
            "-q",
            "-t",
            kind,
            "-N",
            passphrase,
            "-C",
            name,
            "-f",
            s(&path),
        ],
        None,
    );
    path
}

/// Signs `file` with `ssh-keygen -Y sign`, returns the content of `file.sig`.
fn keygen_sign(key: &Path, namespace: &str, file: &Path) -> String {
    keygen_ok(
        &["-Y", "sign", "-f", s(key), "-n", namespace, s(file)],
        None,
    );
    let sig_path = PathBuf::from(format!("{}.sig", s(file)));
    let sig = std::fs::read_to_string(&sig_path).unwrap();
    std::fs::remove_file(sig_path).unwrap();
    sig
}

/// Runs `ssh-keygen -Y verify` for identity `player` whose key is `pub_line`; true if it accepts.
fn keygen_verify(
    dir: &Path,
    pub_line: &str,
    namespace: &str,
    message: &[u8],
    armored: &str,
) -> bool {
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, format!("player {pub_line}\n")).unwrap();
    let sig_path = dir.join("message.sig");
    std::fs::write(&sig_path, armored).unwrap();
    let out = keygen(
        &[
            "-Y",
            "verify",
            "-f",
            s(&signers),
            "-I",
            "player",
            "-n",
            namespace,
            "-s",
            s(&sig_path),
        ],
        Some(message),
    );
    out.status.success()
}

fn pub_line(key: &Path) -> String {
    std::fs::read_to_string(format!("{}.pub", s(key)))
        .unwrap()
        .trim()
        .to_owned()
}

const ORDERS: &str = "turn 3\nmove 1st-corps to gettysburg\nhold cemetery-ridge\n";

#[test]
fn ssh_keygen_key_signs_byte_identically_and_is_verified_by_ssh_keygen() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_key(dir.path(), "player", "ed25519", "");
    let file = dir.path().join("orders.txt");
    std::fs::write(&file, ORDERS).unwrap();

    let key = sig::load_private_key(&key_path, None).unwrap();
    let ours = sig::sign(&key, NS_ORDERS, ORDERS.as_bytes()).unwrap();
    let theirs = keygen_sign(&key_path, NS_ORDERS, &file);
    assert_eq!(ours, theirs, "our signature differs from ssh-keygen's");

    let line = pub_line(&key_path);
    assert!(keygen_verify(
        dir.path(),
        &line,
        NS_ORDERS,
        ORDERS.as_bytes(),
        &ours
    ));
    // ssh-keygen must also be able to say no, or the check above proves nothing.
    assert!(!keygen_verify(
        dir.path(),
        &line,
        NS_ORDERS,
        b"turn 3\nmove 1st-corps to gettysburG\n",
        &ours
    ));
    assert!(!keygen_verify(
        dir.path(),
        &line,
        "pbem-receipt",
        ORDERS.as_bytes(),
        &ours
    ));
}

#[test]
fn our_key_files_load_in_ssh_keygen_and_sign_identically() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("host_key");
    let key = sig::generate_ed25519("host@pbem");
    sig::write_private_key(&key_path, &key).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let line = pub_line(&key_path);
    assert!(
        line.starts_with("ssh-ed25519 AAAA") && line.ends_with(" host@pbem"),
        "{line}"
    );
    let derived = keygen_ok(&["-y", "-f", s(&key_path)], None);
    assert_eq!(String::from_utf8(derived.stdout).unwrap().trim(), line);

    let file = dir.path().join("receipt.txt");
    std::fs::write(&file, "receipt\n").unwrap();
    let theirs = keygen_sign(&key_path, "pbem-receipt", &file);
    assert_eq!(
        sig::sign(&key, "pbem-receipt", b"receipt\n").unwrap(),
        theirs
    );

    let fp = keygen_ok(
        &["-l", "-E", "sha256", "-f", &format!("{}.pub", s(&key_path))],
        None,
    );
    let fp = String::from_utf8(fp.stdout).unwrap();
    assert_eq!(
        fp.split_whitespace().nth(1),
        Some(sig::fingerprint(key.public_key()).as_str())
    );

    let loaded = sig::load_public_key(s(&PathBuf::from(format!("{}.pub", s(&key_path))))).unwrap();
    assert_eq!(loaded.key_data(), key.public_key().key_data());
    assert!(matches!(
        sig::write_private_key(&key_path, &key),
        Err(SigError::KeyExists { .. })
    ));
}

#[test]
fn ssh_keygen_signature_verifies_detached_and_appended() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_key(dir.path(), "player", "ed25519", "");
    let public = sig::load_public_key(&pub_line(&key_path)).unwrap();
    let file = dir.path().join("orders.txt");
    std::fs::write(&file, ORDERS).unwrap();
    let detached = keygen_sign(&key_path, NS_ORDERS, &file);

    let got =
        sig::verify_order_text(&public, NS_ORDERS, ORDERS.as_bytes(), Some(&detached)).unwrap();
    assert_eq!((got.text.as_str(), got.normalized), (ORDERS, true));
    assert_eq!(got.signature, detached);

    let appended = format!("{ORDERS}{detached}");
    let got = sig::verify_order_text(&public, NS_ORDERS, appended.as_bytes(), None).unwrap();
    assert_eq!((got.text.as_str(), got.normalized), (ORDERS, true));

    // A mail client turned every line ending into CRLF, added trailing blanks and a footer.
    let mangled = format!(
        "{}\r\n{}\r\n-- \r\nsent from my phone\r\n",
        ORDERS.replace('\n', " \r\n"),
        detached.replace('\n', "\r\n")
    );
    let got = sig::verify_order_text(&public, NS_ORDERS, mangled.as_bytes(), None).unwrap();
    assert_eq!((got.text.as_str(), got.normalized), (ORDERS, true));
    assert_eq!(got.signature, detached);
}

#[test]
fn ssh_keygen_signature_of_unnormalized_file_keeps_raw_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_key(dir.path(), "player", "ed25519", "");
    let public = sig::load_public_key(&pub_line(&key_path)).unwrap();
    let raw = "\u{FEFF}turn 3  \r\nhold\r\n\r\n";
    let file = dir.path().join("orders.txt");
    std::fs::write(&file, raw).unwrap();
    let detached = keygen_sign(&key_path, NS_ORDERS, &file);

    let got = sig::verify_order_text(&public, NS_ORDERS, raw.as_bytes(), Some(&detached)).unwrap();
    assert_eq!((got.text.as_str(), got.normalized), (raw, false));
    let got = sig::verify_order_text(
        &public,
        NS_ORDERS,
        format!("{raw}{detached}").as_bytes(),
        None,
    )
    .unwrap();
    assert_eq!((got.text.as_str(), got.normalized), (raw, false));
}

#[test]
fn ssh_keygen_signatures_are_rejected_for_wrong_key_namespace_or_edit() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_key(dir.path(), "player", "ed25519", "");
    let other_path = make_key(dir.path(), "other", "ed25519", "");
    let public = sig::load_public_key(&pub_line(&key_path)).unwrap();
    let other = sig::load_public_key(&pub_line(&other_path)).unwrap();
    let file = dir.path().join("orders.txt");
    std::fs::write(&file, ORDERS).unwrap();
    let good = keygen_sign(&key_path, NS_ORDERS, &file);
    let wrong_ns = keygen_sign(&key_path, "pbem-receipt", &file);

    let err =
        sig::verify_order_text(&other, NS_ORDERS, ORDERS.as_bytes(), Some(&good)).unwrap_err();
    assert!(matches!(err, SigError::WrongKey { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&sig::fingerprint(&public)),
        "{err}"
    );
    let err = sig::verify(&other, NS_ORDERS, ORDERS.as_bytes(), &good).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("signed by a different key: fingerprint SHA256:"),
        "{err}"
    );

    let err =
        sig::verify_order_text(&public, NS_ORDERS, ORDERS.as_bytes(), Some(&wrong_ns)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("signed for namespace `pbem-receipt`, expected `pbem-orders`"),
        "{err}"
    );

    let mut edited = ORDERS.as_bytes().to_vec();
    edited[10] ^= 0x01;
    let err = sig::verify_order_text(&public, NS_ORDERS, &edited, Some(&good)).unwrap_err();
    assert!(matches!(err, SigError::TextChanged), "{err:?}");
    let err = sig::verify(&public, NS_ORDERS, &edited, &good).unwrap_err();
    assert_eq!(
        err.to_string(),
        "signature does not match the text: the file was changed after signing"
    );
    sig::verify(&public, NS_ORDERS, ORDERS.as_bytes(), &good).unwrap();
}

#[test]
fn passphrase_protected_key_needs_its_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_key(dir.path(), "locked", "ed25519", "secret");

    let err = sig::load_private_key(&key_path, None).unwrap_err();
    assert!(matches!(err, SigError::NeedPassphrase { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(s(&key_path)) && msg.contains("PBEM_PASSPHRASE"),
        "{msg}"
    );

    let err = sig::load_private_key(&key_path, Some("wrong")).unwrap_err();
    assert!(matches!(err, SigError::BadPassphrase { .. }), "{err:?}");

    let key = sig::load_private_key(&key_path, Some("secret")).unwrap();
    let line = pub_line(&key_path);
    assert_eq!(
        key.public_key().key_data(),
        sig::load_public_key(&line).unwrap().key_data()
    );
    let ours = sig::sign(&key, NS_ORDERS, ORDERS.as_bytes()).unwrap();
    assert!(keygen_verify(
        dir.path(),
        &line,
        NS_ORDERS,
        ORDERS.as_bytes(),
        &ours
    ));
}

#[test]
fn non_ed25519_keys_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["ecdsa", "rsa"] {
        let key_path = make_key(dir.path(), kind, kind, "");
        let err = sig::load_private_key(&key_path, None).unwrap_err();
        assert!(
            matches!(err, SigError::NotEd25519 { .. }),
            "{kind}: {err:?}"
        );
        assert!(err.to_string().contains("only Ed25519"), "{err}");
        let err = sig::load_public_key(&pub_line(&key_path)).unwrap_err();
        assert!(
            matches!(err, SigError::NotEd25519 { .. }),
            "{kind}: {err:?}"
        );
    }
}
