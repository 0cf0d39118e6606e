//! Text normalization and OpenSSH signatures (SSHSIG), interchangeable with `ssh-keygen -Y sign` / `-Y verify`.

use std::io::Write;
use std::path::{Path, PathBuf};

use ssh_key::private::Ed25519Keypair;
use ssh_key::public::KeyData;
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

/// First line of an armored SSH signature, as `ssh-keygen -Y sign` writes it.
pub const ARMOR_BEGIN: &str = "-----BEGIN SSH SIGNATURE-----";
/// Last line of an armored SSH signature.
pub const ARMOR_END: &str = "-----END SSH SIGNATURE-----";
/// Environment variable that carries the passphrase of an encrypted private key.
pub const PASSPHRASE_ENV: &str = "PBEM_PASSPHRASE";
/// Namespace of players' signatures on order files (`ssh-keygen -Y sign -n pbem-orders`).
pub const NS_ORDERS: &str = "pbem-orders";
/// Namespace of the host's signatures on receipts.
pub const NS_RECEIPT: &str = "pbem-receipt";
/// Namespace of the host's signatures on records.
pub const NS_RECORD: &str = "pbem-record";

/// The largest key file read (a private key, or a `.pub` file): 64 KiB, a hundred times an
/// OpenSSH Ed25519 key. A larger file is refused by its length before it is read.
pub const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// The smallest RSA modulus accepted, in bits (NIST's minimum, and the `ssh-key` crate's).
pub const MIN_RSA_BITS: usize = 2048;

/// Base64 column width of armored SSH signatures (as ssh-keygen writes them).
const ARMOR_WIDTH: usize = 70;

/// Everything that can go wrong while normalizing, signing, verifying or handling keys.
///
/// Every message is meant to be shown to a player or a host as is.
#[derive(Debug, thiserror::Error)]
pub enum SigError {
    /// The text is not UTF-8; `offset` is the byte offset of the first invalid byte.
    #[error(
        "the text is not valid UTF-8 (first invalid byte at offset {offset}); save the file as UTF-8"
    )]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The text is empty, or holds only blank lines.
    #[error("the text is empty")]
    Empty,
    /// Neither a detached signature nor an appended armored block was found.
    #[error(
        "no signature found: put the `.sig` file made by `ssh-keygen -Y sign` beside the file, or append it to the file"
    )]
    NoSignature,
    /// The armored block could not be decoded.
    #[error("malformed SSH signature block: {0}")]
    BadArmor(String),
    /// The signature was made for another namespace (`ssh-keygen -Y sign -n`).
    #[error(
        "signed for namespace `{found}`, expected `{expected}` (sign with `ssh-keygen -Y sign -n {expected}`)"
    )]
    WrongNamespace {
        /// Namespace inside the signature.
        found: String,
        /// Namespace the caller asked for.
        expected: String,
    },
    /// The signature was made by another key than the one expected.
    #[error("signed by a different key: fingerprint {found}, expected {expected}")]
    WrongKey {
        /// Fingerprint of the key inside the signature.
        found: String,
        /// Fingerprint of the expected key.
        expected: String,
    },
    /// The signature does not verify over the given message.
    #[error("signature does not match the text: the file was changed after signing")]
    BadSignature,
    /// The signature verifies over neither the normalized text nor the exact bytes of the file.
    #[error(
        "signature does not match the text (neither its normalized form nor its exact bytes): the file was changed after signing"
    )]
    TextChanged,
    /// The signature matches the exact bytes of the file, but those are not UTF-8.
    #[error(
        "the signature matches the file's exact bytes, but they are not valid UTF-8 (first invalid byte at offset {offset}); save the file as UTF-8 and sign it again"
    )]
    SignedBytesNotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// A key file could not be read.
    #[error("cannot read key file {}: {source}", path.display())]
    ReadKey {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A key file is larger than [`MAX_KEY_FILE_BYTES`]: not an SSH key, and not read.
    #[error("{} is {size} bytes, larger than a key file may be ({MAX_KEY_FILE_BYTES} bytes); not read", path.display())]
    KeyTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes (at least).
        size: u64,
    },
    /// A key file could not be written.
    #[error("cannot write key file {}: {source}", path.display())]
    WriteKey {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A key file already exists and would be overwritten.
    #[error("key file {} already exists; refusing to overwrite it", path.display())]
    KeyExists {
        /// The file.
        path: PathBuf,
    },
    /// A private key file is not an OpenSSH private key.
    #[error("{} is not an OpenSSH private key: {reason}", path.display())]
    ParsePrivateKey {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A public key is not an OpenSSH public key line.
    #[error(
        "{what} is not an OpenSSH public key line like `ssh-ed25519 AAAA... comment`: {reason}"
    )]
    ParsePublicKey {
        /// The text or file name that was given.
        what: String,
        /// What the parser said.
        reason: String,
    },
    /// An OpenSSH certificate (`ssh-keygen -s`) given where a public key is wanted.
    #[error("{what} is an OpenSSH certificate ({kind}); pbem does not accept certificates: give the plain public key (the .pub file, e.g. id_ed25519.pub, not id_ed25519-cert.pub)")]
    Certificate {
        /// The text or file name that was given.
        what: String,
        /// Its key type, `...-cert-v01@openssh.com`.
        kind: String,
    },
    /// The private key is encrypted and no passphrase was given.
    #[error("private key {} is protected by a passphrase: run `pbem sign` on a terminal (ssh-keygen asks for it), add the key to ssh-agent (`ssh-add`), or set the environment variable {PASSPHRASE_ENV} to it", path.display())]
    NeedPassphrase {
        /// The file.
        path: PathBuf,
    },
    /// The passphrase did not decrypt the private key.
    #[error("wrong passphrase for private key {} (from {PASSPHRASE_ENV})", path.display())]
    BadPassphrase {
        /// The file.
        path: PathBuf,
    },
    /// The key is of a type pbem does not accept (DSA, or one OpenSSH cannot sign SSHSIG with).
    #[error(
        "{what} is a {algorithm} key, which pbem does not accept; use Ed25519 (`ssh-keygen -t ed25519`), ECDSA (nistp256/384/521), RSA of 2048 bits or more, or a FIDO security key (sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com)"
    )]
    UnsupportedKey {
        /// The file or text that held the key.
        what: String,
        /// The key's algorithm, as OpenSSH names it.
        algorithm: String,
    },
    /// An RSA key shorter than [`MIN_RSA_BITS`].
    #[error(
        "{what} is a {bits}-bit RSA key; RSA keys must have at least {MIN_RSA_BITS} bits (make a new key with `ssh-keygen -t ed25519`, or `ssh-keygen -t rsa -b 3072`)"
    )]
    RsaTooSmall {
        /// The file or text that held the key.
        what: String,
        /// The key's modulus size in bits.
        bits: usize,
    },
    /// The private key lives on a FIDO security key: only `ssh-keygen` (with the token) can sign.
    #[error("{} is a security key ({algorithm}): it signs through `ssh-keygen -Y sign`, not here", path.display())]
    SecurityKey {
        /// The key-handle file.
        path: PathBuf,
        /// The key's algorithm, as OpenSSH names it.
        algorithm: String,
    },
    /// A security-key signature without the user-presence flag (the key was not touched), which
    /// `ssh-keygen -Y verify` refuses too.
    #[error("the security-key signature does not show user presence (the key was not touched when signing); sign again and touch the key")]
    NoUserPresence,
    /// Signing was handed to `ssh-keygen -Y sign` (a key in ssh-agent or on a security key) and it failed.
    #[error("ssh-keygen -Y sign with {}: {reason}", path.display())]
    SshKeygen {
        /// The key file given to ssh-keygen.
        path: PathBuf,
        /// What went wrong (ssh-keygen's own message where it gave one).
        reason: String,
    },
    /// Any other failure reported by the SSH key library.
    #[error("SSH signature error: {0}")]
    Ssh(#[from] ssh_key::Error),
}

/// The text that a verified signature covers, as stored by the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedText {
    /// The exact signed bytes, as UTF-8: the normalized body, or the raw body when `normalized` is false.
    pub text: String,
    /// The signature, armored exactly as `ssh-keygen -Y sign` writes it (LF line endings, final newline).
    pub signature: String,
    /// Whether the signature covers the normalized body (true) or the raw body bytes (false).
    pub normalized: bool,
}

/// Normalizes a text file so that mail transport does not change what was signed.
///
/// Requires UTF-8 ([`SigError::NotUtf8`] with the byte offset of the first bad byte), strips a
/// leading byte-order mark, turns CRLF and lone CR into LF, strips trailing spaces and tabs on
/// every line, drops leading and trailing blank lines (mail clients add them) and ends the text with
/// exactly one newline. A text with nothing but blank lines is [`SigError::Empty`]. Inner blank
/// lines stay.
pub fn normalize(bytes: &[u8]) -> Result<String, SigError> {
    let text = std::str::from_utf8(bytes).map_err(|e| SigError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    if is_normalized(text) {
        return Ok(text.to_string());
    }
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.trim_end_matches([' ', '\t']))
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let first = lines.iter().position(|l| !l.is_empty()).ok_or(SigError::Empty)?;
    let mut out = lines[first..].join("\n");
    out.push('\n');
    Ok(out)
}

/// Whether [`normalize`] gives `text` back as it is (every form and report the host writes is):
/// no byte-order mark and no CR, no line ending in a space or tab, a first line that is not
/// blank, and exactly one newline at the end after a line that is not blank.
fn is_normalized(text: &str) -> bool {
    let b = text.as_bytes();
    let ends_once = b.len() >= 2 && b[b.len() - 1] == b'\n' && b[b.len() - 2] != b'\n';
    ends_once
        && b[0] != b'\n'
        && !text.starts_with('\u{FEFF}')
        && !b.contains(&b'\r')
        && !b.windows(2).any(|w| w[1] == b'\n' && (w[0] == b' ' || w[0] == b'\t'))
}

/// Splits a file into its body and an armored signature appended to it.
///
/// The block starts at the last line that ends with [`ARMOR_BEGIN`] (trailing whitespace and CR
/// ignored; a body without a final newline followed directly by the block also works; a comment
/// line, `#` first, is never a block's start). The body is
/// everything before it, byte for byte. The block is returned with each line's trailing whitespace
/// stripped and LF line endings, up to and including the [`ARMOR_END`] line (or to the end of the
/// text if that line is missing, so that verifying it reports a malformed block). Without a BEGIN
/// line the whole text is the body and the block is `None`.
pub fn split_appended(text: &str) -> (String, Option<String>) {
    let (body, block) = split_appended_bytes(text.as_bytes());
    // The split point is at an ASCII line, so the body is still valid UTF-8.
    (String::from_utf8_lossy(body).into_owned(), block)
}

/// Byte-level [`split_appended`]: the body may be any bytes.
fn split_appended_bytes(bytes: &[u8]) -> (&[u8], Option<String>) {
    let begin = ARMOR_BEGIN.as_bytes();
    let mut found = None;
    let mut line_start = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let trimmed = line.trim_ascii_end();
        // A comment that mentions the armor (`# -----BEGIN SSH SIGNATURE-----`) starts no block
        // (tester t25f D4c: an unsigned form was taken for a signed one).
        let before = &trimmed[..trimmed.len().saturating_sub(begin.len())];
        if trimmed.ends_with(begin) && !before.trim_ascii_start().starts_with(b"#") {
            found = Some(line_start + before.len());
        }
        line_start += line.len();
    }
    let Some(at) = found else {
        return (bytes, None);
    };
    let rest = String::from_utf8_lossy(&bytes[at..]);
    let mut block = String::new();
    for line in rest.split('\n') {
        let line = line.trim_end();
        block.push_str(line);
        block.push('\n');
        if line.trim_start() == ARMOR_END {
            break;
        }
    }
    (&bytes[..at], Some(block))
}

/// Signs `message` exactly as `ssh-keygen -Y sign -n NAMESPACE` does: SSHSIG with SHA-512,
/// armored with 70-column lines, LF line endings and a final newline.
///
/// For an Ed25519 or RSA key the result is byte-identical to ssh-keygen's `.sig` file for the
/// same bytes (ECDSA signatures are randomized in OpenSSH, deterministic here; both verify). Fails on an empty namespace or an encrypted (not yet decrypted) key.
pub fn sign(private_key: &PrivateKey, namespace: &str, message: &[u8]) -> Result<String, SigError> {
    match private_key.key_data() {
        ssh_key::private::KeypairData::Rsa(keypair) => return sign_rsa(keypair, namespace, message),
        ssh_key::private::KeypairData::Ed25519(keypair) => {
            if let Some(armored) = sign_ed25519_checked(keypair, namespace, message)? {
                return Ok(armored);
            }
        }
        _ => {}
    }
    let sig = SshSig::sign(private_key, namespace, HashAlg::Sha512, message)?;
    // Signed the checked way: the key's halves match.
    mark_checked(private_key);
    Ok(sig.to_pem(LineEnding::LF)?)
}

/// Adds `key`, if it is an Ed25519 key whose halves are known to match, to the [`CheckedKeys`]:
/// called after `ssh-key` signed with it, or decoded it from a file (its decoding compares the
/// public half the file holds with the one the secret half makes).
fn mark_checked(key: &PrivateKey) {
    if let ssh_key::private::KeypairData::Ed25519(keypair) = key.key_data() {
        ed25519_checked().lock().unwrap_or_else(|e| e.into_inner()).entry(pair_bytes(keypair)).or_insert_with(|| ed25519_dalek::VerifyingKey::from_bytes(keypair.public.as_ref()).ok());
    }
}

/// The Ed25519 keys this process has signed with through `ssh-key`, which checks, at every
/// signature, that the key's public half is the one its secret half makes (a scalar
/// multiplication: two thirds of what a signature costs), or read from a file with
/// [`load_private_key`] (whose decoding makes the same check); by the two halves' bytes, with the
/// public half as a point. A key signs here without that check ([`sign_ed25519_checked`]).
/// Never listed, only looked up; the keys are in this process's memory anyway.
type CheckedKeys = std::collections::BTreeMap<[u8; 64], Option<ed25519_dalek::VerifyingKey>>;

/// The process's [`CheckedKeys`].
fn ed25519_checked() -> &'static std::sync::Mutex<CheckedKeys> {
    static CHECKED: std::sync::OnceLock<std::sync::Mutex<CheckedKeys>> = std::sync::OnceLock::new();
    CHECKED.get_or_init(Default::default)
}

/// A key pair's secret half then its public half: the [`CheckedKeys`] key.
fn pair_bytes(keypair: &Ed25519Keypair) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..32].copy_from_slice(keypair.private.as_ref());
    b[32..].copy_from_slice(keypair.public.as_ref());
    b
}

/// SSHSIG with an Ed25519 key whose halves this process has already checked (see
/// [`CheckedKeys`]), `None` for one it has not. The same bytes as `ssh-key` and `ssh-keygen -Y
/// sign` make (Ed25519 is deterministic: RFC 8032 §5.1.6 over the SSHSIG signed data).
fn sign_ed25519_checked(keypair: &Ed25519Keypair, namespace: &str, message: &[u8]) -> Result<Option<String>, SigError> {
    let Some(Some(public)) = ed25519_checked().lock().unwrap_or_else(|e| e.into_inner()).get(&pair_bytes(keypair)).copied() else { return Ok(None) };
    let data = SshSig::signed_data(namespace, HashAlg::Sha512, message)?;
    let secret = ed25519_dalek::hazmat::ExpandedSecretKey::from(keypair.private.as_ref());
    let raw = ed25519_dalek::hazmat::raw_sign::<sha2::Sha512>(&secret, &data, &public);
    let signature = ssh_key::Signature::new(Algorithm::Ed25519, raw.to_bytes().to_vec())?;
    let sig = SshSig::new(KeyData::Ed25519(keypair.public), namespace, HashAlg::Sha512, signature)?;
    Ok(Some(sig.to_pem(LineEnding::LF)?))
}

/// SSHSIG with an RSA key as `ssh-keygen -Y sign` makes it: rsa-sha2-512 (PKCS#1 v1.5 with
/// SHA-512, deterministic, so byte-identical). Not through the `ssh-key` crate: its 0.6 conversion
/// to an `rsa` key passes the prime p twice, and signing fails.
fn sign_rsa(keypair: &ssh_key::private::RsaKeypair, namespace: &str, message: &[u8]) -> Result<String, SigError> {
    use rsa::signature::{RandomizedSigner, SignatureEncoding};
    let big = |m: &ssh_key::Mpint| rsa::BigUint::from_bytes_be(m.as_positive_bytes().unwrap_or_default());
    let (public, private) = (&keypair.public, &keypair.private);
    let primes = vec![big(&private.p), big(&private.q)];
    let key = rsa::RsaPrivateKey::from_components(big(&public.n), big(&public.e), big(&private.d), primes)
        .map_err(|_| SigError::Ssh(ssh_key::Error::Crypto))?;
    let data = SshSig::signed_data(namespace, HashAlg::Sha512, message)?;
    let raw = rsa::pkcs1v15::SigningKey::<sha2::Sha512>::new(key)
        // With the OS generator for blinding (PKCS#1 v1.5 stays deterministic).
        .try_sign_with_rng(&mut ssh_key::rand_core::OsRng, &data)
        .map_err(|_| SigError::Ssh(ssh_key::Error::Crypto))?;
    let signature = ssh_key::Signature::new(Algorithm::Rsa { hash: Some(HashAlg::Sha512) }, raw.to_vec())?;
    let sig = SshSig::new(KeyData::Rsa(public.clone()), namespace, HashAlg::Sha512, signature)?;
    Ok(sig.to_pem(LineEnding::LF)?)
}

/// Decodes an armored signature, tolerating CRLF, trailing or leading whitespace on its lines and
/// base64 wrapped at another width than ssh-keygen's 70 columns. Returns it with its canonical
/// armor (the same bytes, wrapped as ssh-keygen writes them): what is stored, never a re-encoding
/// by the `ssh-key` crate (which writes sk-ecdsa signatures wrongly).
fn parse_armored(armored: &str) -> Result<(SshSig, String), SigError> {
    let start = armored
        .find(ARMOR_BEGIN)
        .ok_or_else(|| SigError::BadArmor(format!("no `{ARMOR_BEGIN}` line")))?;
    let after = &armored[start + ARMOR_BEGIN.len()..];
    let end = after.find(ARMOR_END).ok_or_else(|| {
        SigError::BadArmor(format!("no `{ARMOR_END}` line: the signature is cut off"))
    })?;
    let b64: String = after[..end].split_whitespace().collect();
    if let Some((line, c)) = not_base64(&after[..end]) {
        return Err(SigError::BadArmor(format!(
            "line {line} of the block holds {c:?}, which is not base64 (was the signature edited, or re-encoded by a mail program?)"
        )));
    }
    if b64.is_empty() {
        return Err(SigError::BadArmor("the block holds no data".into()));
    }
    let mut pem = String::with_capacity(ARMOR_BEGIN.len() + ARMOR_END.len() + b64.len() + b64.len() / ARMOR_WIDTH + 3);
    pem.push_str(ARMOR_BEGIN);
    pem.push('\n');
    // Only ASCII is left (checked above), so every chunk boundary is a character boundary.
    let mut rest = b64.as_str();
    while !rest.is_empty() {
        let (line, after) = rest.split_at(rest.len().min(ARMOR_WIDTH));
        pem.push_str(line);
        pem.push('\n');
        rest = after;
    }
    pem.push_str(ARMOR_END);
    pem.push('\n');
    // The base64 decoded once, and the SSHSIG read from those bytes, as `SshSig::from_pem` would
    // read them after decoding the same text again (its label and line width are ours).
    let blob = <base64ct::Base64 as base64ct::Encoding>::decode_vec(&b64).map_err(|e| SigError::BadArmor(e.to_string()))?;
    let sig = <SshSig as ssh_encoding::Decode>::decode(&mut blob.as_slice()).map_err(|e| match certificate_signer(&blob) {
        // tester18 T18-2: a certificate's signature failed as "character encoding invalid".
        Some(alg) => SigError::BadArmor(format!(
            "made with an OpenSSH certificate ({alg}), which pbem does not take: sign with the plain key (`ssh-keygen -Y sign -f id_ed25519 -n pbem-orders FILE`, or `pbem sign --key id_ed25519 FILE`), not its -cert.pub"
        )),
        None => SigError::BadArmor(e.to_string()),
    })?;
    check_blob_lengths(&blob).map_err(|why| SigError::BadArmor(format!("{why} (was the signature edited?)")))?;
    Ok((sig, pem))
}

/// Checks every length field of an SSHSIG blob (PROTOCOL.sshsig: the magic `SSHSIG`, a version,
/// then the strings publickey, namespace, reserved, hash algorithm and signature) against what
/// follows it, as `ssh-keygen -Y verify` does: each string fits, the public key blob is exactly a
/// sequence of strings (every key type's fields are), the signature blob exactly its type and its
/// bytes (and a security key's flags byte and counter), and nothing follows. `ssh-key` decodes
/// a blob whose nested lengths are wrong (it reads the fields it knows, not the lengths around
/// them), so a changed length field would otherwise pass.
fn check_blob_lengths(blob: &[u8]) -> Result<(), String> {
    let rest = blob.strip_prefix(b"SSHSIG").ok_or("the signature does not start with SSHSIG")?;
    let rest = rest.get(4..).ok_or("the signature is cut off after its magic")?;
    let names = ["public key", "namespace", "reserved field", "hash algorithm", "signature"];
    let mut fields = Vec::new();
    let mut rest = rest;
    for name in names {
        let (field, after) = ssh_string(rest).ok_or_else(|| format!("the signature's {name} field is longer than what follows it"))?;
        fields.push(field);
        rest = after;
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes follow the signature's last field", rest.len()));
    }
    let mut key = fields[0];
    while !key.is_empty() {
        key = ssh_string(key).ok_or("a length inside the signature's public key is wrong")?.1;
    }
    let (kind, after) = ssh_string(fields[4]).ok_or("the signature's algorithm field is longer than what follows it")?;
    let (_, tail) = ssh_string(after).ok_or("the signature's bytes field is longer than what follows it")?;
    let expected_tail = if kind.starts_with(b"sk-") { 5 } else { 0 };
    if tail.len() != expected_tail {
        return Err(format!("the signature's own blob ends with {} unexpected bytes", tail.len()));
    }
    Ok(())
}

/// An SSH `string` (a 32-bit big-endian length, then that many bytes) at the start of `b`: the
/// bytes and what follows, or `None` when the length runs past the end.
fn ssh_string(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let rest = &b[4..];
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// The key type of an SSHSIG blob's signer when it is an OpenSSH certificate
/// (`ssh-ed25519-cert-v01@openssh.com`): the first string inside its public key field.
fn certificate_signer(blob: &[u8]) -> Option<String> {
    let (key, _) = ssh_string(blob.strip_prefix(b"SSHSIG")?.get(4..)?)?;
    let (alg, _) = ssh_string(key)?;
    let alg = std::str::from_utf8(alg).ok()?;
    alg.ends_with("-cert-v01@openssh.com").then(|| alg.to_string())
}

/// The first character of an armored block's data that is neither base64 nor whitespace, with
/// its 1-based line in the block (the BEGIN line is line 1).
fn not_base64(data: &str) -> Option<(usize, char)> {
    data.split('\n').enumerate().find_map(|(i, l)| {
        l.chars()
            .find(|c| !c.is_whitespace() && !c.is_ascii_alphanumeric() && !matches!(c, '+' | '/' | '='))
            .map(|c| (i + 1, c))
    })
}

/// Checks that `sig` was made by `public_key` for `namespace`, before looking at the message.
fn check_signer(public_key: &PublicKey, namespace: &str, sig: &SshSig) -> Result<(), SigError> {
    if sig.namespace() != namespace {
        return Err(SigError::WrongNamespace {
            found: sig.namespace().to_owned(),
            expected: namespace.to_owned(),
        });
    }
    if sig.public_key() != public_key.key_data() {
        return Err(SigError::WrongKey {
            found: sig.public_key().fingerprint(HashAlg::Sha256).to_string(),
            expected: fingerprint(public_key),
        });
    }
    if is_security_key(&sig.signature().algorithm()) {
        // The signature ends with the authenticator's flags byte and a 4-byte counter; bit 0 is
        // "user present". `ssh-keygen -Y verify` requires it (unless allowed_signers says
        // no-touch-required, which a seat cannot).
        let bytes = sig.signature().as_bytes();
        let flags = bytes.len().checked_sub(5).and_then(|i| bytes.get(i));
        if flags.is_none_or(|f| f & 0x01 == 0) {
            return Err(SigError::NoUserPresence);
        }
    }
    Ok(())
}

/// Whether `sig` (already checked by [`check_signer`]) verifies over `message`: for an Ed25519
/// key by [`matches_ed25519`], the key decoded once; for any other through `ssh-key`.
fn matches(public_key: &PublicKey, sig: &SshSig, message: &[u8]) -> bool {
    match public_key.key_data() {
        KeyData::Ed25519(key) => matches_ed25519(public_key, key, sig, message),
        _ => public_key.verify(sig.namespace(), message, sig).is_ok(),
    }
}

/// `ssh-key`'s `PublicKey::verify` for an Ed25519 key, check for check, with the key's point
/// decoded once a process ([`ed25519_point`]) instead of at every signature: the signature's
/// key and namespace are the key's and its own (`PublicKey::verify`), its SSHSIG signed data is
/// made from its namespace, reserved field and hash algorithm (`SshSig::verify`), its signature
/// is an Ed25519 or sk-ssh-ed25519 one of 64 bytes (`ed25519_dalek::Signature::try_from`), and
/// Ed25519 verifies it over those data (`Ed25519PublicKey::verify`: `VerifyingKey::verify`).
fn matches_ed25519(public_key: &PublicKey, key: &ssh_key::public::Ed25519PublicKey, sig: &SshSig, message: &[u8]) -> bool {
    if sig.public_key() != public_key.key_data() {
        return false;
    }
    let Ok(signature) = ed25519_dalek::Signature::try_from(sig.signature()) else { return false };
    let Some(point) = ed25519_point(key.0) else { return false };
    use ed25519_dalek::Verifier;
    point.verify(&sshsig_signed_data(sig, message), &signature).is_ok()
}

/// The data an SSHSIG signature `sig` signs for `message` (PROTOCOL.sshsig): the magic
/// `SSHSIG`, then as SSH strings the namespace, the reserved field, the hash algorithm's name
/// and the message's hash by it; what `ssh-key`'s `SshSig::verify` makes.
fn sshsig_signed_data(sig: &SshSig, message: &[u8]) -> Vec<u8> {
    let hash = sig.hash_alg().digest(message);
    let fields = [sig.namespace().as_bytes(), sig.reserved(), sig.hash_alg().as_str().as_bytes(), &hash];
    let mut data = Vec::with_capacity(6 + fields.iter().map(|f| 4 + f.len()).sum::<usize>());
    data.extend_from_slice(b"SSHSIG");
    for field in fields {
        // Every field is far shorter than 4 GiB (a namespace, a hash).
        data.extend_from_slice(&(field.len() as u32).to_be_bytes());
        data.extend_from_slice(field);
    }
    data
}

/// The Ed25519 public key `bytes` as a point (`VerifyingKey::from_bytes`: a decompression, a
/// tenth of a verification), `None` for bytes that are no point; decoded once a process and
/// kept (an audit meets the host's key and each seat's at every signature). At most a few
/// hundred keys are kept; past that the map starts again.
fn ed25519_point(bytes: [u8; 32]) -> Option<ed25519_dalek::VerifyingKey> {
    type Points = std::collections::BTreeMap<[u8; 32], Option<ed25519_dalek::VerifyingKey>>;
    static POINTS: std::sync::Mutex<Points> = std::sync::Mutex::new(Points::new());
    if let Some(point) = POINTS.lock().unwrap_or_else(|e| e.into_inner()).get(&bytes) {
        return *point;
    }
    let point = ed25519_dalek::VerifyingKey::from_bytes(&bytes).ok();
    let mut points = POINTS.lock().unwrap_or_else(|e| e.into_inner());
    if points.len() >= 256 {
        points.clear();
    }
    points.insert(bytes, point);
    point
}

/// [`matches`] of `sig`, parsed from `armored` and already checked by [`check_signer`] (so its
/// key and namespace are those `armored` names), remembered for the process by a SHA-256 of
/// `armored` and `message`: intake checks a mailed order's signature up to three times over the
/// same bytes (where a pasted order starts, which bytes were signed, then the pipeline's own
/// check, as for any submit), the first on the thread that reads messages ahead, and a repeat then
/// costs that digest instead of a verification. The answer is a function of those bytes alone, so
/// none depends on the memo.
fn matches_remembered(public_key: &PublicKey, sig: &SshSig, armored: &str, message: &[u8]) -> bool {
    use sha2::Digest;
    static CHECKED: crate::memo::SharedMemo<[u8; 32], bool> = crate::memo::SharedMemo::new();
    let mut h = sha2::Sha256::new();
    for part in [armored.as_bytes(), message] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    CHECKED.get_or(h.finalize().into(), |_| matches(public_key, sig, message))
}

/// Verifies an armored SSH signature over `message`, as `ssh-keygen -Y verify` does.
///
/// Errors, in this order: [`SigError::BadArmor`] (undecodable block),
/// [`SigError::WrongNamespace`], [`SigError::WrongKey`] (with both fingerprints),
/// [`SigError::BadSignature`] (the message was changed after signing).
pub fn verify(
    public_key: &PublicKey,
    namespace: &str,
    message: &[u8],
    armored: &str,
) -> Result<(), SigError> {
    let (sig, _) = parse_armored(armored)?;
    check_signer(public_key, namespace, &sig)?;
    if matches(public_key, &sig, message) {
        Ok(())
    } else {
        Err(SigError::BadSignature)
    }
}

/// Verifies a signed order file and returns the text that the signature covers.
///
/// The signature is `detached_sig` (the content of `FILE.sig`; the body is then the whole file)
/// or, when that is `None`, an armored block appended to the file (see [`split_appended`]).
/// The signature is checked first over the [`normalize`]d body, then over the raw body bytes
/// exactly as given (a player may have signed an unnormalized file with `ssh-keygen -Y sign`);
/// in the second case [`SignedText::text`] holds those raw bytes and must be UTF-8.
///
/// Errors: [`SigError::NoSignature`], [`SigError::BadArmor`], [`SigError::WrongNamespace`],
/// [`SigError::WrongKey`], [`SigError::TextChanged`] (neither form matches),
/// [`SigError::SignedBytesNotUtf8`] (the raw bytes match but are not UTF-8).
pub fn verify_order_text(
    public_key: &PublicKey,
    namespace: &str,
    raw_file_bytes: &[u8],
    detached_sig: Option<&str>,
) -> Result<SignedText, SigError> {
    let (body, armored) = match detached_sig {
        Some(sig) => (raw_file_bytes, sig.to_owned()),
        None => match split_appended_bytes(raw_file_bytes) {
            (body, Some(block)) => (body, block),
            (_, None) => return Err(SigError::NoSignature),
        },
    };
    let (sig, signature) = parse_armored(&armored)?;
    check_signer(public_key, namespace, &sig)?;
    if let Ok(text) = normalize(body)
        && matches_remembered(public_key, &sig, &armored, text.as_bytes())
    {
        return Ok(SignedText {
            text,
            signature,
            normalized: true,
        });
    }
    if matches_remembered(public_key, &sig, &armored, body) {
        let text = std::str::from_utf8(body)
            .map_err(|e| SigError::SignedBytesNotUtf8 {
                offset: e.valid_up_to(),
            })?
            .to_owned();
        return Ok(SignedText {
            text,
            signature,
            normalized: false,
        });
    }
    Err(SigError::TextChanged)
}

/// Reads a key file as text, at most [`MAX_KEY_FILE_BYTES`] (checked by its length, then by what
/// is read, never holding more). Errors: [`SigError::ReadKey`], [`SigError::KeyTooLarge`].
fn read_key_file(path: &Path) -> Result<String, SigError> {
    use std::io::Read;
    let err = |source| SigError::ReadKey { path: path.to_owned(), source };
    let too_large = |size| SigError::KeyTooLarge { path: path.to_owned(), size };
    // A regular file only, opened without waiting: a FIFO is not waited on (tester9 D5); as
    // `store::open_regular`, which this module does not import (store reports through it).
    let (f, len) = {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(err)?;
        // One `fstat` for the kind and the length.
        let m = f.metadata().map_err(err)?;
        if !m.file_type().is_file() {
            return Err(err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file (a FIFO, a device or a folder); not read")));
        }
        (f, m.len())
    };
    if len > MAX_KEY_FILE_BYTES {
        return Err(too_large(len));
    }
    // Room for the whole file at once (read in one call, not in doubling pieces).
    let mut text = String::with_capacity(len as usize);
    f.take(MAX_KEY_FILE_BYTES + 1).read_to_string(&mut text).map_err(err)?;
    if text.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(too_large(text.len() as u64));
    }
    Ok(text)
}

/// Accepts the key types `ssh-keygen -Y sign` signs with: Ed25519, ECDSA nistp256/384/521, RSA of
/// at least [`MIN_RSA_BITS`] bits, and the FIDO types sk-ssh-ed25519 and sk-ecdsa-sha2-nistp256;
/// `what` names the file or text in the error ([`SigError::UnsupportedKey`], [`SigError::RsaTooSmall`]).
pub fn check_key(key: &KeyData, what: &str) -> Result<(), SigError> {
    match key {
        KeyData::Ed25519(_) | KeyData::Ecdsa(_) | KeyData::SkEd25519(_) | KeyData::SkEcdsaSha2NistP256(_) => Ok(()),
        KeyData::Rsa(rsa) => {
            let bits = rsa_bits(rsa);
            if bits >= MIN_RSA_BITS { Ok(()) } else { Err(SigError::RsaTooSmall { what: what.to_owned(), bits }) }
        }
        other => Err(SigError::UnsupportedKey { what: what.to_owned(), algorithm: other.algorithm().as_str().to_owned() }),
    }
}

/// The size of an RSA key's modulus in bits.
fn rsa_bits(key: &ssh_key::public::RsaPublicKey) -> usize {
    let n = key.n.as_positive_bytes().unwrap_or_default();
    match n.first() {
        Some(&top) => n.len() * 8 - top.leading_zeros() as usize,
        None => 0,
    }
}

/// Whether a key of this algorithm lives on a FIDO security key.
fn is_security_key(algorithm: &Algorithm) -> bool {
    matches!(algorithm, Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256)
}

/// Reads an OpenSSH private key file (as written by `ssh-keygen -t ed25519`, `-t ecdsa` or
/// `-t rsa`), decrypting it with `passphrase` if it is encrypted. A security key's file (it holds
/// only a handle; the token signs) is [`SigError::SecurityKey`]: [`sign_with_ssh_keygen`] signs with it.
///
/// Errors: [`SigError::ReadKey`], [`SigError::ParsePrivateKey`], [`SigError::UnsupportedKey`], [`SigError::RsaTooSmall`],
/// [`SigError::NeedPassphrase`] (encrypted and no passphrase: the message points at
/// [`PASSPHRASE_ENV`]), [`SigError::BadPassphrase`]. A passphrase given for an unencrypted key is
/// ignored.
pub fn load_private_key(path: &Path, passphrase: Option<&str>) -> Result<PrivateKey, SigError> {
    let text = read_key_file(path)?;
    let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()).into();
    if let Some(key) = DECODED.get(&digest) {
        return Ok(key);
    }
    let key = decode_private_key(path, &text, passphrase)?;
    // Without a passphrase only an unencrypted file decodes.
    if passphrase.is_none() {
        DECODED.put(digest, key.clone());
    }
    Ok(key)
}

/// The unencrypted private keys this process decoded, by a SHA-256 of their files' text: intake
/// decodes each order's game's host key on the thread that reads messages ahead, and the receipt
/// is signed with it on the main thread (a decoding checks the key's halves, a scalar
/// multiplication). The keys are in this process's memory anyway.
static DECODED: crate::memo::SharedMemo<[u8; 32], PrivateKey> = crate::memo::SharedMemo::new();

/// [`load_private_key`] of the text read from `path`.
fn decode_private_key(path: &Path, text: &str, passphrase: Option<&str>) -> Result<PrivateKey, SigError> {
    let key = PrivateKey::from_openssh(text).map_err(|e| SigError::ParsePrivateKey {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    check_key(key.public_key().key_data(), &path.display().to_string())?;
    if is_security_key(&key.algorithm()) {
        return Err(SigError::SecurityKey { path: path.to_owned(), algorithm: key.algorithm().as_str().to_owned() });
    }
    if !key.is_encrypted() {
        // Decoded: its halves matched (`ssh-key` compares them), so it signs without a second check.
        mark_checked(&key);
        return Ok(key);
    }
    let Some(passphrase) = passphrase else {
        return Err(SigError::NeedPassphrase {
            path: path.to_owned(),
        });
    };
    key.decrypt(passphrase).map_err(|e| match e {
        ssh_key::Error::Crypto => SigError::BadPassphrase { path: path.to_owned() },
        // Decrypted, but the key inside does not parse (see `load_signing_key`).
        e => SigError::ParsePrivateKey { path: path.to_owned(), reason: e.to_string() },
    })
}

/// A key to sign with, as `pbem sign --key FILE` found it.
#[derive(Debug)]
pub enum SigningKey {
    /// A private key pbem holds (decrypted): it signs itself, byte-identically to ssh-keygen.
    Here(Box<PrivateKey>),
    /// A key only `ssh-keygen -Y sign` can use: a `.pub` file whose private half is in ssh-agent,
    /// a security key's handle file, or an encrypted key whose passphrase ssh-keygen asks for.
    SshKeygen {
        /// The file given to `ssh-keygen -f`.
        path: PathBuf,
        /// The public key, to check the signature ssh-keygen returns.
        public: PublicKey,
    },
}

/// Finds the key `pbem sign --key PATH` names: a private key file is read here ([`load_private_key`],
/// `passphrase` decrypting it); a `.pub` file, a security key, or (when `can_ask`: ssh-agent is
/// running or a terminal can ask for the passphrase) an encrypted key without a passphrase go to
/// `ssh-keygen` ([`SigningKey::SshKeygen`]). A file holding no key at all (the order file given
/// as the key) is [`SigError::ParsePrivateKey`], saying what to give.
pub fn load_signing_key(path: &Path, passphrase: Option<&str>, can_ask: bool) -> Result<SigningKey, SigError> {
    let text = read_key_file(path)?;
    if !text.contains("PRIVATE KEY") {
        if !holds_key_line(&text) {
            // Most often the order file itself, or its .sig, given as the key.
            return Err(SigError::ParsePrivateKey { path: path.to_owned(), reason: "it holds no key at all: give your private key file (e.g. ~/.ssh/id_ed25519), or a .pub file whose private half is in ssh-agent".into() });
        }
        let public = load_public_key(&path.display().to_string())?;
        return Ok(SigningKey::SshKeygen { path: path.to_owned(), public });
    }
    match load_private_key(path, passphrase) {
        Ok(key) => Ok(SigningKey::Here(Box::new(key))),
        Err(SigError::SecurityKey { .. }) => Ok(SigningKey::SshKeygen { path: path.to_owned(), public: public_half(path, &text)? }),
        Err(SigError::NeedPassphrase { .. }) if can_ask => Ok(SigningKey::SshKeygen { path: path.to_owned(), public: public_half(path, &text)? }),
        // The `ssh-key` crate refuses some valid ECDSA keys (a private scalar shorter than the
        // field, about one nistp521 key in two): ssh-keygen signs with them, checked against the
        // `.pub` file ssh-keygen wrote beside.
        Err(e @ SigError::ParsePrivateKey { .. }) => match public_beside(path) {
            Some(public) => Ok(SigningKey::SshKeygen { path: path.to_owned(), public }),
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Whether `text`'s first line that is not blank or a `#` comment looks like an OpenSSH public key
/// line (`TYPE AAAA...`), of any type.
fn holds_key_line(text: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'));
    first.and_then(|l| l.split_whitespace().nth(1)).is_some_and(|b64| b64.starts_with("AAAA"))
}

/// The public key in `PATH.pub`, if that file holds one of an accepted type.
fn public_beside(path: &Path) -> Option<PublicKey> {
    let mut pub_path = path.as_os_str().to_owned();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    pub_path.is_file().then(|| load_public_key(&pub_path.display().to_string()).ok()).flatten()
}

/// The public half of a private key file (stored unencrypted beside the private part).
fn public_half(path: &Path, text: &str) -> Result<PublicKey, SigError> {
    let key = PrivateKey::from_openssh(text).map_err(|e| SigError::ParsePrivateKey { path: path.to_owned(), reason: e.to_string() })?;
    let mut public = key.public_key().clone();
    public.set_comment("");
    Ok(public)
}

/// Signs `message` with `key`: [`sign`] for a key held here, else [`sign_with_ssh_keygen`].
pub fn sign_with(key: &SigningKey, namespace: &str, message: &[u8]) -> Result<String, SigError> {
    match key {
        SigningKey::Here(k) => sign(k, namespace, message),
        SigningKey::SshKeygen { path, public } => sign_with_ssh_keygen(path, public, namespace, message),
    }
}

/// Signs `message` by handing it to `ssh-keygen -Y sign -f KEY -n NAMESPACE` (the message on its
/// standard input, the signature on its standard output: no file is written). ssh-keygen uses
/// ssh-agent when it holds the key, asks a security key for a touch, or asks for a passphrase on
/// the terminal; its messages go to our standard error. The signature is checked against `public`
/// and `message` before it is returned ([`SigError::SshKeygen`] otherwise).
pub fn sign_with_ssh_keygen(path: &Path, public: &PublicKey, namespace: &str, message: &[u8]) -> Result<String, SigError> {
    use std::process::{Command, Stdio};
    let fail = |reason: String| SigError::SshKeygen { path: path.to_owned(), reason };
    let mut command = Command::new("ssh-keygen");
    // A passphrase given in PBEM_PASSPHRASE reaches ssh-keygen through its askpass program: this
    // binary, which prints it ([`answer_askpass`]); ssh-keygen would ask on the terminal for a
    // key it reads itself (PEM, PKCS#8: tester t25f D4a).
    if let (Some(_), Ok(exe)) = (std::env::var_os(PASSPHRASE_ENV), std::env::current_exe()) {
        command.env("SSH_ASKPASS", exe).env("SSH_ASKPASS_REQUIRE", "force").env(ASKPASS_ENV, "1");
    }
    let mut child = command
        .args(["-q", "-Y", "sign", "-n", namespace, "-f"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => fail("ssh-keygen was not found; install OpenSSH (Debian: openssh-client), or give the private key file".into()),
            _ => fail(format!("cannot run ssh-keygen: {e}")),
        })?;
    if let Some(mut input) = child.stdin.take() {
        // A write error means ssh-keygen ended early (no such private key); its exit status says
        // why. Without the guard the write would end pbem by SIGPIPE, with no message of ours
        // (found by CI: a key only in an absent ssh-agent).
        let _guard = PipeErrorsNotFatal::new();
        let _ = input.write_all(message);
    }
    let out = child.wait_with_output().map_err(|e| fail(format!("cannot run ssh-keygen: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!("it failed ({}; its message is above); is the key in ssh-agent (`ssh-add -l`), or the security key plugged in?", out.status)));
    }
    let armored = String::from_utf8(out.stdout).map_err(|_| fail("it printed something that is not a signature".into()))?;
    verify(public, namespace, message, &armored).map_err(|e| fail(format!("its signature does not check: {e}")))?;
    Ok(parse_armored(&armored)?.1)
}

/// Set (to `1`) in the environment of the `ssh-keygen` that [`sign_with_ssh_keygen`] runs with
/// this binary as its askpass program: the binary then only answers the passphrase.
pub const ASKPASS_ENV: &str = "PBEM_ASKPASS";

/// When this process is `ssh-keygen`'s askpass program ([`ASKPASS_ENV`]): prints the passphrase
/// of [`PASSPHRASE_ENV`] and gives the exit status (failure without one); `None` otherwise.
pub fn answer_askpass() -> Option<std::process::ExitCode> {
    std::env::var_os(ASKPASS_ENV).filter(|v| v == "1")?;
    let Some(pass) = std::env::var_os(PASSPHRASE_ENV) else { return Some(std::process::ExitCode::FAILURE) };
    let mut out = std::io::stdout().lock();
    let written = out.write_all(pass.as_encoded_bytes()).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
    Some(if written.is_ok() { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE })
}

/// Parses an OpenSSH public key of an accepted type ([`check_key`]) given as the key line itself (`ssh-ed25519 AAAA...`),
/// never as a file path: what `game.toml` holds. A path there would let the key change with the
/// file it names while `game.toml`, and so the setup hash that receipts pin, stays the same.
///
/// Errors: [`SigError::ParsePublicKey`] (a path, or not a key), [`SigError::UnsupportedKey`], [`SigError::RsaTooSmall`].
pub fn public_key_line(line: &str) -> Result<PublicKey, SigError> {
    let given = line.trim();
    if given.split_whitespace().nth(1).is_none_or(|b64| !b64.starts_with("AAAA")) {
        let shown: String = given.chars().take(60).collect();
        return Err(SigError::ParsePublicKey { what: format!("`{shown}`"), reason: "its second word is not a key (a key starts AAAA); a game file holds the key line itself, not a path to it".into() });
    }
    load_public_key(given)
}

/// Parses an OpenSSH public key of an accepted type ([`check_key`]), given either as the key line itself
/// (`ssh-ed25519 AAAA... comment`) or as the path of a file holding it (e.g. `id_ed25519.pub`).
///
/// The comment is dropped. Blank lines and `#` lines in a file are skipped; the first key line is
/// used. Errors: [`SigError::ParsePublicKey`], [`SigError::Certificate`], [`SigError::ReadKey`], [`SigError::UnsupportedKey`], [`SigError::RsaTooSmall`].
pub fn load_public_key(text_or_path: &str) -> Result<PublicKey, SigError> {
    let given = text_or_path.trim();
    if given.contains("PRIVATE KEY") {
        // Never echo private key material into an error message.
        return Err(SigError::ParsePublicKey {
            what: "the given text".into(),
            reason: "this is a PRIVATE key; give the public key (the .pub file)".into(),
        });
    }
    let looks_like_key = given
        .split_whitespace()
        .nth(1)
        .is_some_and(|b64| b64.starts_with("AAAA"));
    let (text, what) = if looks_like_key {
        (given.to_owned(), format!("`{given}`"))
    } else {
        let path = Path::new(given);
        if !path.exists() {
            let shown: String = given.chars().take(60).collect();
            return Err(SigError::ParsePublicKey {
                what: format!("`{shown}`"),
                reason: "neither a key line nor an existing file".into(),
            });
        }
        let text = read_key_file(path)?;
        if text.contains("PRIVATE KEY") {
            return Err(SigError::ParsePublicKey {
                what: path.display().to_string(),
                reason: "this is a PRIVATE key file; give the public key (the .pub file)".into(),
            });
        }
        (text, path.display().to_string())
    };
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| SigError::ParsePublicKey {
            what: what.clone(),
            reason: "no key line".into(),
        })?;
    if let Some(kind) = line.split_whitespace().next().filter(|k| k.ends_with("-cert-v01@openssh.com")) {
        return Err(SigError::Certificate { what, kind: kind.to_string() });
    }
    let mut key = PublicKey::from_openssh(line).map_err(|e| SigError::ParsePublicKey {
        what: what.clone(),
        reason: e.to_string(),
    })?;
    check_key(key.key_data(), &what)?;
    key.set_comment("");
    Ok(key)
}

/// Makes a new Ed25519 key from 32 bytes of OS randomness (`getrandom`), with `comment`.
///
/// # Panics
/// If the operating system's random number generator is unavailable.
pub fn generate_ed25519(comment: &str) -> PrivateKey {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .expect("the operating system's random number generator is unavailable");
    let mut key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
    seed.fill(0);
    key.set_comment(comment);
    key
}

/// Writes `contents` to `path` atomically (atomic-write-file: a temporary file in the same
/// directory, created with `mode` on Unix and never looser, flushed, then renamed over `path`).
fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), SigError> {
    let err = |source| SigError::WriteKey { path: path.to_owned(), source };
    let mut options = atomic_write_file::AtomicWriteFile::options();
    #[cfg(unix)]
    {
        use atomic_write_file::unix::OpenOptionsExt as _;
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        options.preserve_mode(false);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = options.open(path).map_err(err)?;
    f.write_all(contents).map_err(err)?;
    f.commit().map_err(err)
}

/// Writes `key` as an OpenSSH private key file at `path` (mode 0600) and its public key line
/// (`ssh-ed25519 AAAA... comment` and a newline) at `path.pub` (mode 0644), each atomically.
///
/// Refuses to overwrite either file ([`SigError::KeyExists`]); other failures are
/// [`SigError::WriteKey`]. The files load with `ssh-keygen` and with [`load_private_key`].
pub fn write_private_key(path: &Path, key: &PrivateKey) -> Result<(), SigError> {
    let mut pub_path = path.as_os_str().to_owned();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    for p in [path, pub_path.as_path()] {
        if p.exists() {
            return Err(SigError::KeyExists { path: p.to_owned() });
        }
    }
    let private = key.to_openssh(LineEnding::LF)?;
    let mut public = key.public_key().to_openssh()?;
    public.push('\n');
    write_atomic(path, private.as_bytes(), 0o600)?;
    write_atomic(&pub_path, public.as_bytes(), 0o644)
}

/// The key's fingerprint as `ssh-keygen -l` prints it: `SHA256:` and unpadded base64.
pub fn fingerprint(public_key: &PublicKey) -> String {
    public_key.fingerprint(HashAlg::Sha256).to_string()
}

/// While alive, writing to a pipe whose reader has gone returns an error instead of killing the
/// process. The binary gives SIGPIPE its default action (so `pbem ... | head` ends quietly), but
/// a child that exits before reading all its input (ssh-keygen without the key, a sendmail that
/// refuses a mail) must fail that one call with its message, not end pbem. The previous action
/// is restored on drop. Process-wide: its callers run on one thread.
pub(crate) struct PipeErrorsNotFatal {
    #[cfg(unix)]
    previous: libc::sighandler_t,
}

impl PipeErrorsNotFatal {
    pub(crate) fn new() -> Self {
        // SAFETY: only swaps the disposition of SIGPIPE; no handler code runs.
        #[cfg(unix)]
        return PipeErrorsNotFatal { previous: unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } };
        #[cfg(not(unix))]
        PipeErrorsNotFatal {}
    }
}

impl Drop for PipeErrorsNotFatal {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved in `new`.
        #[cfg(unix)]
        unsafe {
            libc::signal(libc::SIGPIPE, self.previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_with_a_damaged_length_field_is_refused_as_ssh_keygen_refuses_it() {
        // Found by tester16: `ssh-key` decodes an SSHSIG blob whose nested lengths are wrong (the
        // public key's, a field's inside it, the signature's), so such a signature verified here
        // while `ssh-keygen -Y verify` and the Python verifier refused it.
        use base64ct::Encoding;
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&[42; 32]));
        let good = sign(&key, NS_RECORD, b"record\n").unwrap();
        let (_, pem) = parse_armored(&good).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let blob = base64ct::Base64::decode_vec(&b64).unwrap();
        let armor = |b: &[u8]| format!("{ARMOR_BEGIN}\n{}\n{ARMOR_END}\n", base64ct::Base64::encode_string(b));
        assert!(verify(key.public_key(), NS_RECORD, b"record\n", &armor(&blob)).is_ok());
        // Offsets: the public key's length (10..14, its high bytes zero), the key bytes' length
        // inside it (29..33), the signature field's length; and a byte appended.
        let sig_len_at = 14 + 51 + 4 + 11 + 4 + 4 + 6;
        for (at, why) in [(11, "public key field"), (30, "inside the signature's public key"), (sig_len_at + 1, "signature field")] {
            let mut bad = blob.clone();
            bad[at] ^= 0x03;
            match verify(key.public_key(), NS_RECORD, b"record\n", &armor(&bad)) {
                Err(SigError::BadArmor(m)) => assert!(m.contains(why), "{at}: {m}"),
                other => panic!("{at}: {other:?}"),
            }
        }
        let mut longer = blob.clone();
        longer.push(0);
        assert!(matches!(verify(key.public_key(), NS_RECORD, b"record\n", &armor(&longer)), Err(SigError::BadArmor(_))));
    }

    /// The Ed25519 path ([`matches_ed25519`], the key decoded once) judges every signature as
    /// `ssh-key`'s `PublicKey::verify` does: good ones (SHA-512 and SHA-256, a reserved field
    /// signed with it), another key's, another text, each byte of the signature changed, a
    /// signature scalar out of range, a reserved field added after signing, a security key's
    /// signature (its 69 bytes) or the same bytes labelled RSA; each met twice (the key then decoded already).
    #[test]
    fn an_ed25519_signature_is_judged_as_ssh_key_judges_it() {
        let seed = [5u8; 32];
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
        let other = PrivateKey::from(Ed25519Keypair::from_seed(&[6; 32]));
        let public = key.public_key();
        let KeyData::Ed25519(pk) = public.key_data() else { panic!() };
        let good = SshSig::sign(&key, NS_RECORD, HashAlg::Sha512, b"record\n").unwrap();
        let remade = |bytes: Vec<u8>, algorithm: Algorithm| {
            SshSig::new(public.key_data().clone(), NS_RECORD, HashAlg::Sha512, ssh_key::Signature::new(algorithm, bytes).unwrap()).unwrap()
        };
        // An SSHSIG blob with `reserved` in its reserved field, signed over `signed_reserved`.
        let with_reserved = |reserved: &[u8], signed_reserved: &[u8]| {
            let fake = SshSig::new(public.key_data().clone(), NS_RECORD, HashAlg::Sha512, good.signature().clone()).unwrap();
            let mut data = sshsig_signed_data(&fake, b"record\n");
            let at = 6 + 4 + NS_RECORD.len();
            data.splice(at..at + 4, [(signed_reserved.len() as u32).to_be_bytes().to_vec(), signed_reserved.to_vec()].concat());
            let secret = ed25519_dalek::hazmat::ExpandedSecretKey::from(&seed);
            let point = ed25519_dalek::VerifyingKey::from_bytes(&pk.0).unwrap();
            let raw = ed25519_dalek::hazmat::raw_sign::<sha2::Sha512>(&secret, &data, &point).to_bytes();
            let string = |b: &[u8]| [(b.len() as u32).to_be_bytes().to_vec(), b.to_vec()].concat();
            let key_blob = string(&[string(b"ssh-ed25519"), string(&pk.0)].concat());
            let sig_blob = string(&[string(b"ssh-ed25519"), string(&raw)].concat());
            let blob = [b"SSHSIG".to_vec(), 1u32.to_be_bytes().to_vec(), key_blob, string(NS_RECORD.as_bytes()), string(reserved), string(b"sha512"), sig_blob].concat();
            let b64 = <base64ct::Base64 as base64ct::Encoding>::encode_string(&blob);
            parse_armored(&format!("{ARMOR_BEGIN}\n{b64}\n{ARMOR_END}\n")).unwrap().0
        };
        let mut sigs = vec![
            (good.clone(), true),
            (SshSig::sign(&key, NS_RECORD, HashAlg::Sha256, b"record\n").unwrap(), true),
            (with_reserved(b"later", b"later"), true),
            (with_reserved(b"later", b""), false),
            (SshSig::sign(&other, NS_RECORD, HashAlg::Sha512, b"record\n").unwrap(), false),
            (SshSig::sign(&key, NS_RECORD, HashAlg::Sha512, b"record!\n").unwrap(), false),
            (remade(good.signature_bytes().to_vec(), Algorithm::Rsa { hash: Some(HashAlg::Sha512) }), false),
            (remade([good.signature_bytes(), &[1, 0, 0, 0, 0]].concat(), Algorithm::SkEd25519), false),
        ];
        let mut high = good.signature_bytes().to_vec();
        high[63] |= 0xf0;
        sigs.push((remade(high, Algorithm::Ed25519), false));
        for i in 0..64 {
            let mut bytes = good.signature_bytes().to_vec();
            bytes[i] ^= 0x40;
            sigs.push((remade(bytes, Algorithm::Ed25519), false));
        }
        for _ in 0..2 {
            for (i, (sig, want)) in sigs.iter().enumerate() {
                let by_ssh_key = public.verify(sig.namespace(), b"record\n", sig).is_ok();
                assert_eq!((matches(public, sig, b"record\n"), by_ssh_key), (*want, *want), "signature {i}");
            }
        }
    }

    #[test]
    fn an_ed25519_key_signs_the_same_bytes_after_its_first_checked_signature() {
        let key = PrivateKey::from(Ed25519Keypair::from_seed(&[42; 32]));
        let reference = SshSig::sign(&key, NS_RECORD, HashAlg::Sha512, b"record\n").unwrap().to_pem(LineEnding::LF).unwrap();
        let first = sign(&key, NS_RECORD, b"record\n").unwrap();
        let again = sign(&key, NS_RECORD, b"record\n").unwrap();
        assert_eq!((first.as_str(), again.as_str()), (reference.as_str(), reference.as_str()));
        let other = sign(&key, NS_RECEIPT, b"receipt\n").unwrap();
        assert_eq!(other, SshSig::sign(&key, NS_RECEIPT, HashAlg::Sha512, b"receipt\n").unwrap().to_pem(LineEnding::LF).unwrap());
        // A key whose public half is not its secret's is refused every time, even though a key
        // with the same secret signed before.
        let mut pair = Ed25519Keypair::from_seed(&[42; 32]);
        pair.public = Ed25519Keypair::from_seed(&[7; 32]).public;
        let bad = PrivateKey::from(pair);
        assert!(sign(&bad, NS_RECORD, b"record\n").is_err());
        assert!(sign(&bad, NS_RECORD, b"record\n").is_err());
    }

    #[test]
    fn normalize_strips_bom_crlf_cr_and_trailing_whitespace() {
        let got = normalize(b"\xEF\xBB\xBFmove A1 \t\r\nhold B2\rsupport C3  \n").unwrap();
        assert_eq!(got, "move A1\nhold B2\nsupport C3\n");
    }

    #[test]
    fn normalize_drops_trailing_blank_lines_and_adds_final_newline() {
        assert_eq!(normalize(b"a\n\n \t\n\r\n\n").unwrap(), "a\n");
        assert_eq!(normalize(b"a").unwrap(), "a\n");
        assert_eq!(normalize(b"\n \n\na\n\n b\n").unwrap(), "a\n\n b\n");
    }

    #[test]
    fn normalize_is_idempotent() {
        let once = normalize(b"x \r\n\r\ny\t\r\n\r\n").unwrap();
        assert_eq!(normalize(once.as_bytes()).unwrap(), once);
    }

    /// The shortcut for a text already normalized is taken exactly when the full work gives the
    /// text back, and gives what the full work gives: every text of up to 5 characters from a few
    /// that matter.
    #[test]
    fn a_text_is_given_back_as_it_is_exactly_when_it_is_normalized() {
        let alphabet = ["a", "\n", " ", "\t", "\r", "\u{FEFF}", "\u{A0}"];
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = texts.iter().flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}"))).collect();
            texts.extend(longer);
        }
        for t in &texts {
            let slow = normalize_in_full(t);
            assert_eq!(is_normalized(t), slow.as_deref() == Some(t.as_str()), "{t:?}");
            assert_eq!(normalize(t.as_bytes()).ok(), slow, "{t:?}");
        }
    }

    /// [`normalize`] without its shortcut.
    fn normalize_in_full(text: &str) -> Option<String> {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text).replace("\r\n", "\n").replace('\r', "\n");
        let mut lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches([' ', '\t'])).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let first = lines.iter().position(|l| !l.is_empty())?;
        Some(lines[first..].join("\n") + "\n")
    }

    #[test]
    fn normalize_rejects_empty_and_blank() {
        for input in [&b""[..], b"\n", b" \t\r\n\n", b"\xEF\xBB\xBF"] {
            assert!(
                matches!(normalize(input), Err(SigError::Empty)),
                "{input:?}"
            );
        }
        assert_eq!(normalize(b"").unwrap_err().to_string(), "the text is empty");
    }

    #[test]
    fn normalize_reports_offset_of_invalid_utf8() {
        let err = normalize(b"ok\nbad \xFF here").unwrap_err();
        assert!(matches!(err, SigError::NotUtf8 { offset: 7 }), "{err:?}");
        assert!(err.to_string().contains("UTF-8") && err.to_string().contains("offset 7"));
    }

    const BLOCK: &str = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n";

    #[test]
    fn split_without_block_is_all_body() {
        assert_eq!(split_appended("a\nb\n"), ("a\nb\n".to_owned(), None));
    }

    #[test]
    fn split_appended_block() {
        let (body, block) = split_appended(&format!("orders\n{BLOCK}"));
        assert_eq!(body, "orders\n");
        assert_eq!(block.as_deref(), Some(BLOCK));
    }

    #[test]
    fn split_cleans_mangled_block_and_keeps_body_bytes() {
        let text = "orders \r\n\r\n-----BEGIN SSH SIGNATURE----- \r\nU1NIU0lH\t\r\n-----END SSH SIGNATURE-----\r\n\r\n-- \r\nsent from my phone\r\n";
        let (body, block) = split_appended(text);
        assert_eq!(body, "orders \r\n\r\n");
        assert_eq!(block.as_deref(), Some(BLOCK));
    }

    #[test]
    fn split_block_after_body_without_final_newline() {
        let (body, block) = split_appended(&format!("orders{BLOCK}"));
        assert_eq!(body, "orders");
        assert_eq!(block.as_deref(), Some(BLOCK));
    }

    #[test]
    fn split_uses_last_block() {
        let (body, block) = split_appended(&format!("a\n{BLOCK}b\n{BLOCK}"));
        assert_eq!(body, format!("a\n{BLOCK}b\n"));
        assert_eq!(block.as_deref(), Some(BLOCK));
    }

    #[test]
    fn a_comment_naming_the_armor_starts_no_block() {
        let text = "I = \"stay\"\n# -----BEGIN SSH SIGNATURE-----\n  #-----BEGIN SSH SIGNATURE-----\n";
        assert_eq!(split_appended(text), (text.to_owned(), None));
        let (body, block) = split_appended(&format!("{text}> {BLOCK}"));
        assert_eq!((body.as_str(), block.as_deref()), (format!("{text}> ").as_str(), Some(BLOCK)));
    }

    #[test]
    fn split_cut_off_block_is_reported_as_malformed() {
        let (body, block) = split_appended("a\n-----BEGIN SSH SIGNATURE-----\nU1NI\n");
        assert_eq!(body, "a\n");
        let err = parse_armored(&block.unwrap()).unwrap_err();
        assert!(err.to_string().contains("cut off"), "{err}");
    }

    #[test]
    fn sign_verify_roundtrip_and_rejections() {
        let key = generate_ed25519("host");
        let other = generate_ed25519("other");
        let sig = sign(&key, NS_RECEIPT, b"receipt\n").unwrap();
        assert!(sig.starts_with(ARMOR_BEGIN) && sig.ends_with("-----END SSH SIGNATURE-----\n"));
        verify(key.public_key(), NS_RECEIPT, b"receipt\n", &sig).unwrap();
        assert!(matches!(
            verify(key.public_key(), NS_RECEIPT, b"receipt!\n", &sig),
            Err(SigError::BadSignature)
        ));
        assert!(matches!(
            verify(key.public_key(), NS_RECORD, b"receipt\n", &sig),
            Err(SigError::WrongNamespace { .. })
        ));
        let err = verify(other.public_key(), NS_RECEIPT, b"receipt\n", &sig).unwrap_err();
        assert!(
            err.to_string().contains(&fingerprint(key.public_key())),
            "{err}"
        );
    }

    #[test]
    fn verify_tolerates_rewrapped_crlf_armor() {
        let key = generate_ed25519("p");
        let sig = sign(&key, NS_ORDERS, b"x\n").unwrap();
        let b64: String = sig.lines().filter(|l| !l.starts_with("-----")).collect();
        let rewrapped: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let mangled = format!(
            "{ARMOR_BEGIN}  \r\n{}\r\n{ARMOR_END}\r\n",
            rewrapped.join(" \r\n")
        );
        verify(key.public_key(), NS_ORDERS, b"x\n", &mangled).unwrap();
    }

    #[test]
    fn non_ascii_anywhere_in_the_armor_is_an_error_not_a_panic() {
        let key = generate_ed25519("p");
        let sig = sign(&key, NS_ORDERS, b"x\n").unwrap();
        let start = ARMOR_BEGIN.len() + 1;
        let end = sig.find(ARMOR_END).unwrap();
        for at in start..end {
            for c in ['\u{e9}', '\u{2014}', '\u{1F600}'] {
                let mut bad = sig.clone();
                bad.insert(at, c);
                let err = verify(key.public_key(), NS_ORDERS, b"x\n", &bad).unwrap_err();
                assert!(err.to_string().contains("not base64"), "{err}");
                let mut file = b"x\n".to_vec();
                file.extend_from_slice(bad.as_bytes());
                assert!(matches!(verify_order_text(key.public_key(), NS_ORDERS, &file, None), Err(SigError::BadArmor(_))));
            }
        }
    }

    #[test]
    fn order_text_prefers_normalized_then_raw() {
        let key = generate_ed25519("p");
        let raw = b"move  \r\nhold\r\n";
        let norm = normalize(raw).unwrap();
        let by_norm = sign(&key, NS_ORDERS, norm.as_bytes()).unwrap();
        let got = verify_order_text(key.public_key(), NS_ORDERS, raw, Some(&by_norm)).unwrap();
        assert_eq!((got.text.as_str(), got.normalized), (norm.as_str(), true));
        assert_eq!(got.signature, by_norm);

        let by_raw = sign(&key, NS_ORDERS, raw).unwrap();
        let got = verify_order_text(key.public_key(), NS_ORDERS, raw, Some(&by_raw)).unwrap();
        assert_eq!((got.text.as_bytes(), got.normalized), (&raw[..], false));

        let mut appended = raw.to_vec();
        appended.extend_from_slice(by_raw.as_bytes());
        let got = verify_order_text(key.public_key(), NS_ORDERS, &appended, None).unwrap();
        assert_eq!((got.text.as_bytes(), got.normalized), (&raw[..], false));

        assert!(matches!(
            verify_order_text(
                key.public_key(),
                NS_ORDERS,
                b"move\r\nhold!\r\n",
                Some(&by_raw)
            ),
            Err(SigError::TextChanged)
        ));
        assert!(matches!(
            verify_order_text(key.public_key(), NS_ORDERS, raw, None),
            Err(SigError::NoSignature)
        ));
    }

    #[test]
    fn order_text_raw_bytes_must_be_utf8() {
        let key = generate_ed25519("p");
        let raw = b"move \xFF\n";
        let sig = sign(&key, NS_ORDERS, raw).unwrap();
        let err = verify_order_text(key.public_key(), NS_ORDERS, raw, Some(&sig)).unwrap_err();
        assert!(
            matches!(err, SigError::SignedBytesNotUtf8 { offset: 5 }),
            "{err:?}"
        );
    }

    #[test]
    fn public_key_line_parses_without_comment() {
        let key = generate_ed25519("alice@example");
        let line = key.public_key().to_openssh().unwrap();
        let parsed = load_public_key(&format!("  {line}\n")).unwrap();
        assert_eq!(parsed.key_data(), key.public_key().key_data());
        assert_eq!(parsed.comment(), "");
        assert!(load_public_key("ssh-ed25519 AAAAnotbase64").is_err());
        assert!(load_public_key("/nonexistent/key.pub").is_err());
    }
}
