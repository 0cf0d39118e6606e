//! The million-input run (issue 8, point 3): `cargo bench --bench fuzz [-- COUNT [SEED]]` throws
//! COUNT (default 1,000,000) deterministically mutated inputs (ChaCha20 from SEED, default 8) at
//! the order parser, the armor parser with signature checking, mail extraction and (one input in
//! four, as a signed seat may send anything) every game's order check, each under
//! `catch_unwind`; prints inputs per second and the panic count, and exits 1 on any panic (with
//! the first few panicking inputs written to `target/fuzz-panics/`). Not part of `cargo test`.

#[path = "../tests/fuzz/targets.rs"]
mod targets;

use std::time::Instant;

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use targets::Dice;

struct Chacha(ChaCha20Rng);

impl Dice for Chacha {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the numbers are the only other arguments.
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    // Under `cargo test` (no `--bench`) a short smoke run keeps the benchmark building and working.
    let full = std::env::args().any(|a| a == "--bench");
    let count = args.first().copied().unwrap_or(if full { 1_000_000 } else { 200 });
    let seed = args.get(1).copied().unwrap_or(8);
    // Panics are counted, not printed one by one.
    std::panic::set_hook(Box::new(|_| {}));
    let seeds = targets::seeds();
    let game_seeds = targets::game_seeds();
    let key = targets::key().public_key().clone();
    let mut dice = Chacha(ChaCha20Rng::seed_from_u64(seed));
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join("fuzz-panics");
    let (mut panics, mut silent, mut bytes) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    for i in 0..count {
        // Mostly a few mutations (near-valid inputs reach deepest), sometimes many.
        let n = if dice.below(8) == 0 { 1 + dice.below(64) } else { 1 + dice.below(4) };
        // One input in four is a seat's [orders] for a game's order check (a player may sign
        // anything), mutated as bytes or as values; the others go to the file and mail parsers.
        let (input, result) = if i % 4 == 3 {
            let g = &game_seeds[dice.below(game_seeds.len())];
            let input = if dice.below(2) == 0 { targets::mutate(&g.text, &seeds, n, &mut dice) } else { targets::mutate_orders(g, n, &mut dice) };
            let r = targets::no_panic_game(g, &input);
            (input, r)
        } else {
            let (_, input) = &seeds[dice.below(seeds.len())];
            let input = targets::mutate(input, &seeds, n, &mut dice);
            let r = targets::no_panic(&input, &key);
            (input, r)
        };
        bytes += input.len() as u64;
        if let Err(why) = result {
            if why.contains("without a message") { silent += 1 } else { panics += 1 }
            if panics + silent <= 10 {
                std::fs::create_dir_all(&out).ok();
                std::fs::write(out.join(format!("input-{i}.bin")), &input).ok();
                eprintln!("input {i}: {why} (written to {})", out.join(format!("input-{i}.bin")).display());
            }
        }
        if (i + 1) % 100_000 == 0 {
            eprintln!("{} inputs, {panics} panics, {:.0} inputs/s", i + 1, (i + 1) as f64 / start.elapsed().as_secs_f64());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "fuzz: {count} inputs (seed {seed}, {:.0} bytes on average) in {secs:.1} s: {:.0} inputs/s; panics: {panics}; errors without a message: {silent}",
        bytes as f64 / count.max(1) as f64,
        count as f64 / secs
    );
    if panics + silent > 0 {
        std::process::exit(1);
    }
}
