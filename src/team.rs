//! Talking at the table: the game's press setting (`--option press=none|team|all`), who a seat's
//! teammates are, and the plans teammates may see of each other (Flag Dash).
//!
//! None of this enters the public record or a report file (`pbem audit` replays reports byte for
//! byte from public records, and press and teammates' plans are private): press and plans travel
//! by mail and are listed in the report *mail*, and `pbem report` prints teammates' plans below
//! the report (ARCHITECTURE.md "Press and teams").

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::{pipeline, sig};

pub use crate::options::{JUDGE_OPTIONS, Press, check_options, rules_options};

/// The team of every role of a loaded game, by role (each role its own team unless the game
/// has teams).
pub fn teams(g: &pipeline::Loaded) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for seat in &g.gf.seats {
        out.insert(seat.role.clone(), g.game.team(&g.state, &seat.role)?);
    }
    Ok(out)
}

/// The other roles on `role`'s team, in seat order.
pub fn teammates(g: &pipeline::Loaded, role: &str) -> Result<Vec<String>> {
    let teams = teams(g)?;
    let Some(mine) = teams.get(role) else { return Ok(vec![]) };
    Ok(g.gf.seats.iter().filter(|s| s.role != role && teams.get(&s.role) == Some(mine)).map(|s| s.role.clone()).collect())
}

/// Whether `email` also holds a seat outside `role`'s team: such an address is never sent the
/// plans of `role`'s team (it would show them to the other side).
pub fn on_other_team(g: &pipeline::Loaded, role: &str, email: &str) -> Result<bool> {
    let teams = teams(g)?;
    let mine = teams.get(role);
    Ok(g.gf.seats.iter().any(|s| crate::mail::compose::same_address(&s.email, email) && teams.get(&s.role) != mine))
}

/// One teammate's accepted plan for the open step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The teammate's role.
    pub role: String,
    /// The step.
    pub step: u64,
    /// The receipt number (the newest one counts).
    pub seq: u64,
    /// When it was received (RFC 3339).
    pub received: String,
    /// The order file as accepted, without its signature.
    pub text: String,
}

/// The newest accepted plan of `teammate` for the open step, read from the host's sealed copy
/// (`host/sealed/`): `None` when the game does not let teammates see plans, no step is open, or
/// the teammate has sent nothing for it.
pub fn plan_of(g: &pipeline::Loaded, teammate: &str) -> Result<Option<Plan>> {
    if !g.game.teammates_see_plans() {
        return Ok(None);
    }
    let Some(op) = &g.record.opening else { return Ok(None) };
    let receipts = pipeline::latest_receipts(&g.dir, op.step)?;
    let Some(r) = receipts.get(teammate) else { return Ok(None) };
    let (_, text, _) = pipeline::read_sealed(&g.dir, &g.gf.id, r, pipeline::Recover::Resend)?;
    let (body, _) = sig::split_appended(&text);
    Ok(Some(Plan { role: teammate.to_string(), step: op.step, seq: r.seq, received: r.received.clone(), text: body.to_string() }))
}

/// Every teammate's accepted plan for the open step (see [`plan_of`]), in seat order.
pub fn teammate_plans(dir: &Path, role: &str) -> Result<Vec<Plan>> {
    let g = pipeline::load(dir)?;
    if !g.game.teammates_see_plans() {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    for mate in teammates(&g, role)? {
        out.extend(plan_of(&g, &mate)?);
    }
    Ok(out)
}

/// The text `pbem report` and the plan mail show for teammates' plans.
pub fn plans_text(plans: &[Plan]) -> String {
    let mut s = String::new();
    for p in plans {
        s.push_str(&format!("Your teammate {}'s plan for step {} (receipt {}, received {}):\n\n", p.role, p.step, p.seq, p.received));
        for line in p.text.lines() {
            s.push_str(&format!("    {line}\n"));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn press_words_and_judge_options() {
        assert_eq!(Press::parse("team").unwrap(), Press::Team);
        let e = Press::parse("some").unwrap_err();
        assert!(matches!(&e, crate::error::Error::Setting { setting: crate::error::Setting::Option { key, value }, .. } if key == "press" && value == "some"), "{e:?}");
        let opts: BTreeMap<String, String> = [("press".into(), "none".into()), ("players".into(), "4".into())].into();
        assert_eq!(rules_options(&opts).keys().collect::<Vec<_>>(), ["players"]);
    }
}
