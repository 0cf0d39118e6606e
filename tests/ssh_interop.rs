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

/// Makes a key of `kind` with `bits` (`ssh-keygen -t KIND -b BITS`), no passphrase.
fn make_sized_key(dir: &Path, name: &str, kind: &str, bits: &str) -> PathBuf {
    let path = dir.join(name);
    let mut args = vec!["-q", "-t", kind, "-N", "", "-C", name, "-f", s(&path)];
    if !bits.is_empty() {
        args.extend(["-b", bits]);
    }
    keygen_ok(&args, None);
    path
}

/// Every key type ssh-keygen makes here: pbem's signatures pass `ssh-keygen -Y verify` (and a
/// changed text fails it), ssh-keygen's signatures pass pbem's check (and a changed text fails
/// it); Ed25519 and RSA (deterministic schemes) even sign byte-identically.
#[test]
fn every_key_type_signs_and_verifies_both_ways_with_ssh_keygen() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("orders.txt");
    std::fs::write(&file, ORDERS).unwrap();
    let changed = b"turn 3\nmove 1st-corps to gettysburG\nhold cemetery-ridge\n";
    for (kind, bits, identical) in [
        ("ed25519", "", true),
        ("ecdsa", "256", false),
        ("ecdsa", "384", false),
        ("ecdsa", "521", false),
        ("rsa", "2048", true),
        ("rsa", "3072", true),
    ] {
        let name = format!("{kind}{bits}");
        let key_path = make_sized_key(dir.path(), &name, kind, bits);
        let line = pub_line(&key_path);
        // Through ssh-keygen only for an ECDSA key the ssh-key crate cannot read (see below).
        let key = sig::load_signing_key(&key_path, None, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(matches!(key, sig::SigningKey::Here(_)) || kind == "ecdsa", "{name}: {key:?}");
        let public = sig::load_public_key(&line).unwrap_or_else(|e| panic!("{name}: {e}"));

        let ours = sig::sign_with(&key, NS_ORDERS, ORDERS.as_bytes()).unwrap();
        assert!(keygen_verify(dir.path(), &line, NS_ORDERS, ORDERS.as_bytes(), &ours), "{name}: ssh-keygen refused our signature");
        assert!(!keygen_verify(dir.path(), &line, NS_ORDERS, changed, &ours), "{name}");
        if kind == "rsa" {
            assert!(pem_body(&ours).contains("rsa-sha2-512"), "{name}: not rsa-sha2-512");
        }

        let theirs = keygen_sign(&key_path, NS_ORDERS, &file);
        let got = sig::verify_order_text(&public, NS_ORDERS, ORDERS.as_bytes(), Some(&theirs)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((got.text.as_str(), got.normalized), (ORDERS, true), "{name}");
        assert!(matches!(sig::verify(&public, NS_ORDERS, changed, &theirs), Err(SigError::BadSignature)), "{name}");
        if identical {
            assert_eq!(ours, theirs, "{name}: our signature differs from ssh-keygen's");
        }
        let fp = keygen_ok(&["-l", "-E", "sha256", "-f", &format!("{}.pub", s(&key_path))], None);
        assert_eq!(String::from_utf8(fp.stdout).unwrap().split_whitespace().nth(1), Some(sig::fingerprint(&public).as_str()), "{name}");
    }
}

/// About one nistp521 key in two has a private scalar shorter than the field, which the ssh-key
/// crate refuses to read: such a key signs through ssh-keygen (checked against its .pub), the others
/// here. Keys are made until both kinds have been seen.
#[test]
fn ecdsa_keys_the_crate_cannot_read_sign_through_ssh_keygen() {
    let dir = tempfile::tempdir().unwrap();
    let (mut here, mut handed) = (false, false);
    for i in 0..64 {
        if here && handed {
            break;
        }
        let key_path = make_sized_key(dir.path(), &format!("p521-{i}"), "ecdsa", "521");
        let line = pub_line(&key_path);
        let key = sig::load_signing_key(&key_path, None, false).unwrap();
        match (&key, sig::load_private_key(&key_path, None)) {
            (sig::SigningKey::Here(_), Ok(_)) => here = true,
            (sig::SigningKey::SshKeygen { .. }, Err(SigError::ParsePrivateKey { .. })) => handed = true,
            (k, r) => panic!("{k:?} / {r:?}"),
        }
        let ours = sig::sign_with(&key, NS_ORDERS, ORDERS.as_bytes()).unwrap();
        assert!(keygen_verify(dir.path(), &line, NS_ORDERS, ORDERS.as_bytes(), &ours));
        // Without its .pub the key is refused with the parser's message, not signed unchecked.
        if matches!(key, sig::SigningKey::SshKeygen { .. }) {
            std::fs::remove_file(format!("{}.pub", s(&key_path))).unwrap();
            assert!(matches!(sig::load_signing_key(&key_path, None, false), Err(SigError::ParsePrivateKey { .. })));
        }
    }
    assert!(here && handed, "64 nistp521 keys and not both kinds: here {here}, handed {handed}");
}

/// The decoded SSHSIG blob of an armored signature, as lossy text (to look for algorithm names).
fn pem_body(armored: &str) -> String {
    let sig = ssh_key::SshSig::from_pem(armored).unwrap();
    sig.signature().algorithm().to_string()
}

#[test]
fn rsa_keys_under_2048_bits_and_dsa_keys_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = make_sized_key(dir.path(), "rsa1024", "rsa", "1024");
    let err = sig::load_private_key(&key_path, None).unwrap_err();
    assert!(matches!(err, SigError::RsaTooSmall { bits: 1024, .. }), "{err:?}");
    assert!(err.to_string().contains("1024-bit RSA key") && err.to_string().contains("at least 2048 bits"), "{err}");
    let err = sig::load_public_key(&pub_line(&key_path)).unwrap_err();
    assert!(matches!(err, SigError::RsaTooSmall { bits: 1024, .. }), "{err:?}");

    let key_path = make_sized_key(dir.path(), "dsa", "dsa", "");
    for err in [sig::load_private_key(&key_path, None).unwrap_err(), sig::load_public_key(&pub_line(&key_path)).unwrap_err()] {
        assert!(matches!(err, SigError::UnsupportedKey { .. }), "{err:?}");
        assert!(err.to_string().contains("ssh-dss key, which pbem does not accept"), "{err}");
    }
}

/// Reads a file of OpenSSH's own SSHSIG test data (regress/unittests/sshsig/testdata, made by its
/// mktestdata.sh with the sk-dummy security key: namespace `unittest`).
fn vector(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/sshsig").join(name)).unwrap()
}

/// Security keys cannot be made here; OpenSSH's own signatures by its test security keys verify,
/// and a changed text, another namespace or a signature without user presence does not.
#[test]
fn security_key_signatures_made_by_openssh_verify() {
    let data = vector("signed-data");
    for name in ["ed25519_sk", "ecdsa_sk"] {
        let public = sig::load_public_key(vector(&format!("{name}.pub")).trim()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let armored = vector(&format!("{name}.sig"));
        sig::verify(&public, "unittest", data.as_bytes(), &armored).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = sig::verify_order_text(&public, "unittest", data.as_bytes(), Some(&armored)).unwrap();
        assert!(!got.normalized && got.text == data, "{name}");
        assert!(matches!(sig::verify(&public, "unittest", b"This is a test, this is only a tesT", &armored), Err(SigError::BadSignature)), "{name}");
        assert!(matches!(sig::verify(&public, NS_ORDERS, data.as_bytes(), &armored), Err(SigError::WrongNamespace { .. })), "{name}");

        // The signature pbem stores is the one OpenSSH wrote, byte for byte.
        assert_eq!(got.signature, armored, "{name}");

        // The same signature with the user-presence flag cleared (the token was not touched):
        // the blob ends with the flags byte and a 4-byte counter.
        let b64: String = armored.lines().filter(|l| !l.starts_with("-----")).collect();
        let mut blob = base64(&["-d"], b64.as_bytes());
        let flags = blob.len() - 5;
        assert_eq!(blob[flags], 0x01, "{name}: the vector has only the user-presence flag");
        blob[flags] = 0;
        let b64 = String::from_utf8(base64(&["-w", "70"], &blob)).unwrap();
        let untouched = format!("{}\n{b64}{}\n", sig::ARMOR_BEGIN, sig::ARMOR_END);
        assert!(keygen_verify_ns(&public, "unittest", data.as_bytes(), &armored) && !keygen_verify_ns(&public, "unittest", data.as_bytes(), &untouched), "{name}: ssh-keygen must agree");
        let err = sig::verify(&public, "unittest", data.as_bytes(), &untouched).unwrap_err();
        assert!(matches!(err, SigError::NoUserPresence), "{name}: {err:?}");
    }
}

/// Runs coreutils `base64 ARGS` over `input`.
fn base64(args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new("base64").args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

/// `ssh-keygen -Y verify` of `armored` by `public` in a fresh folder.
fn keygen_verify_ns(public: &ssh_key::PublicKey, namespace: &str, message: &[u8], armored: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    keygen_verify(dir.path(), &public.to_openssh().unwrap(), namespace, message, armored)
}
