//! Seats for a new game made in process (tests and `benches/pipeline.rs`): one per role of the
//! game's default setup, each with a key of its own (one key may not hold two sides).

/// A seat for every role of `rules`' default setup, keys from fixed seeds, `ROLE@example.org`.
pub fn seats(rules: &str) -> Vec<pbem::model::Seat> {
    let game = pbem::pipeline::rules(rules).unwrap();
    let roles = game.roles(&game.setup(game.default_scenario(), &Default::default()).unwrap()).unwrap();
    roles
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let key = pbem::pipeline::key_from_seed(&[9 + n as u8; 32], r).public_key().to_openssh().unwrap();
            pbem::model::Seat { role: r.clone(), email: format!("{r}@example.org"), key, time_zone: None }
        })
        .collect()
}
