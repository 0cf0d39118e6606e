//! Tests of the Gettysburg Campaign rules, examples and random play.

use std::collections::BTreeMap;

use super::*;
use crate::game::{Game, Pending};

#[test]
fn smoke_bot_game() {
    let g = GettysburgCampaign;
    for seed in 0..20u8 {
        let mut s = g.setup(g.default_scenario(), &BTreeMap::new()).unwrap();
        let mut bots = Ctx::new([seed; 32]);
        let mut steps = 0;
        loop {
            let asks = match g.pending(&s) {
                Pending::Over(o) => { println!("seed {seed}: {} after {steps} steps", o.summary); break; }
                Pending::Orders(a) => a,
            };
            let mut orders = BTreeMap::new();
            for a in &asks {
                let o = g.bot_order(&s, &a.role, &mut bots);
                if let Err(e) = g.check_order(&s, &a.role, &o) { panic!("seed {seed} step {steps} {}: {:?}\n{o}", a.kind, e); }
                orders.insert(a.role.clone(), o);
            }
            let mut ctx = Ctx::new([steps as u8; 32]);
            s = g.resolve(&s, &orders, &mut ctx).unwrap();
            if seed == 0 { for e in ctx.events() { println!("  {}", e.text); } }
            steps += 1;
            assert!(steps < 1000);
        }
    }
}
