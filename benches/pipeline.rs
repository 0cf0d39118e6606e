//! Benchmarks (run with `cargo bench`): one step's adjudication, a whole demo game, and auditing it.
//! Plain timing over repeated runs, reporting the median; no timed assertions anywhere. `cargo test`
//! runs it once as a smoke test.

use std::time::{Duration, Instant};

use pbem::pipeline::{self, Entropy};

#[path = "../tests/support/seats.rs"]
mod seats;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs each part once, so the benchmark is kept
    // building and working (its figures are then meaningless).
    let runs = if std::env::args().any(|a| a == "--bench") { 7 } else { 1 };
    for game in pbem::games::ALL {
        bench(game.rules(), runs);
    }
}

fn bench(rules: &str, runs: usize) {
    println!("{rules}:");
    let start = pipeline::parse_time("2026-07-01T12:00:00Z").unwrap();

    // A whole demo game (keys, forms, signatures, submit, adjudicate, reports, audit).
    let mut demo = Vec::new();
    let mut steps = 0;
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..runs {
        let dir = tmp.path().join(format!("demo-{rules}-{i}"));
        let t = Instant::now();
        let s = pbem::demo::run(rules, &dir, [i as u8; 32], Default::default(), start).unwrap();
        demo.push(t.elapsed());
        steps = s.steps;
    }
    println!("  demo game ({steps} steps, incl. audit): median {:?}", median(demo));

    // Audit of a whole game.
    let dir = tmp.path().join(format!("demo-{rules}-0"));
    let audits: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            pbem::audit::audit(&dir, None).unwrap();
            t.elapsed()
        })
        .collect();
    println!("  audit of a whole game: median {:?}", median(audits));

    // One step's adjudication: a fresh game, NMR past the deadline for step 1 only.
    let mut one = Vec::new();
    for i in 0..runs {
        let dir = tmp.path().join(format!("one-{rules}-{i}"));
        let seats = seats::seats(rules);
        let new = pipeline::NewGame {
            id: Some(format!("bench-{rules}-{i}")),
            rules: rules.into(),
            scenario: None,
            options: Default::default(),
            seats,
            deadlines: pbem::model::Deadlines { default_hours: 1, ..Default::default() },
            nmr: Default::default(),
            wording: pbem::report::WORDING,
        };
        let mut e = Entropy::seeded([i as u8; 32]);
        pipeline::create(&dir, new, start, &mut e).unwrap();
        // Just after the first deadline: exactly one step is due (the next opens with a new deadline).
        let t = Instant::now();
        let a = pipeline::adjudicate(&dir, start + chrono::Duration::minutes(61), &mut e).unwrap();
        one.push(t.elapsed());
        assert_eq!(a.resolved, vec![1]);
    }
    println!("  adjudicate one step (resolve, state, reports, signed record): median {:?}", median(one));
}
