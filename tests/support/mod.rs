//! Helpers the CLI test files share: the binary under test and keys made by the real `ssh-keygen`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin_cmd;

/// The `pbem` binary under test.
pub fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

/// A fresh Ed25519 key pair `dir/name` (and `name.pub`) made by `ssh-keygen`, without passphrase.
pub fn keygen(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(name);
    let st = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"]).arg(&key).status().unwrap();
    assert!(st.success());
    key
}
