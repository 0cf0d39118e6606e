//! The hardware's limits that `benches/host.sh` compares pbem's figures with, measured in the
//! same run (`cargo bench --bench limits`): one Ed25519 signature check (SSHSIG, as pbem checks
//! an order or receipt), SHA-256 throughput, and one durable file replacement (write, fsync,
//! rename, fsync of the folder). One `NAME VALUE UNIT` line per limit; medians; no assertions.
//! `cargo test` runs it briefly as a smoke test.

use std::io::Write;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median time of `f` over `runs` runs.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median((0..runs).map(|_| { let t = Instant::now(); f(); t.elapsed() }).collect())
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs each measurement a few times only, in a
    // temporary folder, so the benchmark is kept building and working.
    let bench = std::env::args().any(|a| a == "--bench");
    let n = |runs: usize| if bench { runs } else { 3 };
    let key = pbem::pipeline::key_from_seed(&[7; 32], "limits");
    let msg = b"[pbem]\ngame = \"g\"\nstep = 1\n".repeat(8);
    let sig = key.sign("pbem-orders", ssh_key::HashAlg::Sha512, &msg).unwrap();
    let public = key.public_key().clone();
    let verify = time(n(301), || public.verify("pbem-orders", &msg, &sig).unwrap());
    println!("ed25519_verify {:.1} us", verify.as_secs_f64() * 1e6);

    use sha2::Digest;
    let data = vec![0x5a_u8; 1 << 24];
    let sha = time(n(7), || { std::hint::black_box(sha2::Sha256::digest(&data)); });
    println!("sha256 {:.2} GB/s", data.len() as f64 / sha.as_secs_f64() / 1e9);

    // In the folder the benchmark's roots live in (the same disk), never deleting right before.
    let scratch = tempfile::tempdir().unwrap();
    let base = std::env::var_os("PBEM_BENCH_DIR").filter(|_| bench).map(std::path::PathBuf::from);
    let dir = base.unwrap_or_else(|| scratch.path().to_path_buf()).join("limits");
    std::fs::create_dir_all(&dir).unwrap();
    let folder = std::fs::File::open(&dir).unwrap();
    let mut i = 0;
    let rename = time(n(101), || {
        i += 1;
        let tmp = dir.join(format!(".tmp{i}"));
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(&[b'x'; 600]).unwrap();
        f.sync_all().unwrap();
        std::fs::rename(&tmp, dir.join("file")).unwrap();
        folder.sync_all().unwrap();
    });
    println!("fsync_rename {:.1} us", rename.as_secs_f64() * 1e6);
}
