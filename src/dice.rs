//! Deterministic randomness for one step: a ChaCha20 stream seeded by the step seed, with our own
//! unbiased draws, and the log of events (every roll included) that resolution produces.

use std::collections::{BTreeMap, VecDeque};

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One roll or draw, as it appears in the event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roll {
    /// Number of faces (a d6 has 6); the value is in `1..=sides`.
    pub sides: u32,
    /// The face rolled, `1..=sides`.
    pub value: u32,
}

/// Something that happened during resolution, shown in the reports of the roles it is addressed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Roles that may see this event; empty means every role (public).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// Present when the event is a die roll or draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roll: Option<Roll>,
    /// Human-readable sentence, e.g. "Union initiative die: 4".
    pub text: String,
}

impl Event {
    /// True when `role` may see this event.
    pub fn visible_to(&self, role: &str) -> bool {
        self.to.is_empty() || self.to.iter().any(|r| r == role)
    }
}

/// The resolution context handed to a game: the seeded generator and the event log.
///
/// Algorithm (SPEC.md "Dice"): the generator is `ChaCha20Rng::from_seed(step_seed)`; a value in
/// `0..n` is drawn by taking `x = next_u32()` and rejecting it while `x >= 2^32 - (2^32 mod n)`, then
/// returning `x mod n`. Any language with ChaCha20 can re-derive every roll.
pub struct Ctx {
    rng: ChaCha20Rng,
    /// The values rolls and draws return instead of the generator's ([`Ctx::scripted`]).
    script: Option<VecDeque<u32>>,
    events: Vec<Event>,
    /// Keeps no events ([`Ctx::quiet`]).
    quiet: bool,
    /// The report wording of the game resolved ([`Ctx::worded`]; 0 unless set).
    wording: u32,
    /// The seats that sent no orders of the step resolved ([`Ctx::unsent`]; none unless set).
    unsent: BTreeMap<String, String>,
}

impl Ctx {
    /// A context whose generator is seeded with the 32-byte step seed.
    pub fn new(seed: [u8; 32]) -> Self {
        Ctx { rng: ChaCha20Rng::from_seed(seed), script: None, events: Vec::new(), quiet: false, wording: 0, unsent: BTreeMap::new() }
    }

    /// A context like [`Ctx::new`] that keeps no events (nothing is formatted for them): for
    /// `pbem simulate`, which reads only the states. The same values are rolled and drawn.
    pub fn quiet(seed: [u8; 32]) -> Self {
        Ctx { quiet: true, ..Ctx::new(seed) }
    }

    /// This context for a game of report wording `wording` (`game.toml`'s `wording`,
    /// `report::WORDING`): the texts of its events are those of that wording, so a game keeps
    /// the event texts it began with and its records and reports replay byte for byte. Adjudication
    /// and the audit's replay set it; left unset it is 0, the oldest texts (tester16 T16a-7).
    pub fn worded(mut self, wording: u32) -> Self {
        self.wording = wording;
        self
    }

    /// The report wording this context resolves for ([`Ctx::worded`]): a game words an event
    /// anew only for `wording() >=` the wording that changed it.
    pub fn wording(&self) -> u32 {
        self.wording
    }

    /// This context for a step in which the seats of `unsent` sent no orders, each with how the
    /// orders given in their name were made (`"default"` or `"bot"`, as the record's NMR says:
    /// `model::unsent`), so that an event can say an answer was not the seat's. Adjudication and
    /// the audit's replay set it from the same record, like [`Ctx::worded`].
    pub fn unsent(mut self, unsent: BTreeMap<String, String>) -> Self {
        self.unsent = unsent;
        self
    }

    /// How `role`'s orders of this step were made when it sent none (`"default"`, `"bot"`;
    /// [`Ctx::unsent`]), `None` for orders the seat sent.
    pub fn unsent_by(&self, role: &str) -> Option<&str> {
        self.unsent.get(role).map(String::as_str)
    }

    /// True for a [`Ctx::quiet`] context: a game may skip writing the texts of its events.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// A context whose rolls and draws return `values` in order instead of the generator's: a
    /// roll ([`Ctx::roll`], [`Ctx::d6`]) takes the next value as its face (`1..=sides`), a draw
    /// ([`Ctx::draw`], [`Ctx::draw_told`]) as its index (`0..n`), each logged as in play. For rule
    /// tests that decide every die, and for a game's setup, which rolls nothing (an empty script).
    /// [`Ctx::below`] and [`Ctx::next_u32`] still read the generator (seeded with zeros).
    ///
    /// A roll or draw that finds the script used up, or a value out of its range, panics: a
    /// mistake in the test (or a setup that rolls).
    pub fn scripted(values: &[u32]) -> Self {
        Ctx { rng: ChaCha20Rng::from_seed([0; 32]), script: Some(values.iter().copied().collect()), events: Vec::new(), quiet: false, wording: 0, unsent: BTreeMap::new() }
    }

    /// The scripted values not used yet (empty for a context that is not scripted).
    pub fn script_left(&self) -> Vec<u32> {
        self.script.iter().flatten().copied().collect()
    }

    /// The next scripted value, checked to be in `lo..=hi` (`None`: not scripted, use the
    /// generator); `why` names the roll for the panic of a wrong script.
    fn scripted_value(&mut self, lo: u32, hi: u32, why: impl Fn() -> String) -> Option<u32> {
        let script = self.script.as_mut()?;
        let v = script.pop_front().unwrap_or_else(|| panic!("no scripted value left for: {}", why()));
        assert!((lo..=hi).contains(&v), "scripted value {v} out of {lo}..={hi} for: {}", why());
        Some(v)
    }

    /// The raw next 32-bit output of the generator (not logged; use [`Ctx::roll`] for game dice).
    pub fn next_u32(&mut self) -> u32 {
        self.rng.next_u32()
    }

    /// Unbiased value in `0..n` by rejection sampling; not logged. Panics if `n == 0`.
    pub fn below(&mut self, n: u32) -> u32 {
        assert!(n > 0, "below(0)");
        let n64 = n as u64;
        let zone = (1u64 << 32) - ((1u64 << 32) % n64);
        loop {
            let x = self.rng.next_u32() as u64;
            if x < zone {
                return (x % n64) as u32;
            }
        }
    }

    /// Rolls one die with `sides` faces (`1..=sides`) and logs it as a public event `"{why}: {value}"`.
    pub fn roll(&mut self, sides: u32, why: &str) -> u32 {
        let value = match self.scripted_value(1, sides, || why.to_string()) {
            Some(v) => v,
            None => self.below(sides) + 1,
        };
        if self.quiet {
            return value;
        }
        self.events.push(Event {
            to: Vec::new(),
            roll: Some(Roll { sides, value }),
            text: format!("{why}: rolled {value} (d{sides})"),
        });
        value
    }

    /// Rolls a six-sided die (see [`Ctx::roll`]).
    pub fn d6(&mut self, why: &str) -> u32 {
        self.roll(6, why)
    }

    /// Draws an index in `0..n` (a token from a bag of `n`) and logs it; `what` names the drawn item.
    pub fn draw(&mut self, n: u32, why: &str, what: impl Fn(u32) -> String) -> u32 {
        let i = self.draw_index(n, || why.to_string());
        if self.quiet {
            return i;
        }
        self.events.push(Event {
            to: Vec::new(),
            roll: Some(Roll { sides: n, value: i + 1 }),
            text: format!("{why}: drew {} ({} of {n})", what(i), i + 1),
        });
        i
    }

    /// Draws an index in `0..n` like [`Ctx::draw`], the event's whole text written by `text` from
    /// the index drawn (for a game that tells its draws in sentences of its own).
    pub fn draw_told(&mut self, n: u32, text: impl Fn(u32) -> String) -> u32 {
        let i = self.draw_index(n, || text(0));
        if self.quiet {
            return i;
        }
        self.events.push(Event { to: Vec::new(), roll: Some(Roll { sides: n, value: i + 1 }), text: text(i) });
        i
    }

    /// The index of a draw from `n`: scripted, or from the generator.
    fn draw_index(&mut self, n: u32, why: impl Fn() -> String) -> u32 {
        match self.scripted_value(0, n.saturating_sub(1), why) {
            Some(i) => i,
            None => self.below(n),
        }
    }

    /// Logs a public event.
    pub fn say(&mut self, text: impl Into<String>) {
        if self.quiet {
            return;
        }
        self.events.push(Event { to: Vec::new(), roll: None, text: text.into() });
    }

    /// Logs an event only the given roles may see.
    pub fn tell(&mut self, roles: &[&str], text: impl Into<String>) {
        if self.quiet {
            return;
        }
        self.events.push(Event {
            to: roles.iter().map(|r| r.to_string()).collect(),
            roll: None,
            text: text.into(),
        });
    }

    /// The events logged so far, in order (none for a [`Ctx::quiet`] context).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Consumes the context, returning its event log.
    pub fn into_events(self) -> Vec<Event> {
        self.events
    }
}

/// The first logged roll that is not the next draw of the stream `seed` gives (SPEC.md "Dice": the
/// i-th event with a roll is the i-th draw of the step's stream, a draw of `0..sides` plus one):
/// `(index in events, the value the stream gives there)`, or `None` when every roll is derived.
pub fn first_underived_roll(seed: [u8; 32], events: &[Event]) -> Option<(usize, u32)> {
    let mut ctx = Ctx::new(seed);
    for (i, e) in events.iter().enumerate() {
        if let Some(r) = &e.roll {
            let want = if r.sides == 0 { 0 } else { ctx.below(r.sides) + 1 };
            if want == 0 || r.value != want {
                return Some((i, want));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_context_rolls_the_same_and_keeps_no_events() {
        let (mut loud, mut quiet) = (Ctx::new([3; 32]), Ctx::quiet([3; 32]));
        for c in [&mut loud, &mut quiet] {
            c.say("said");
            c.tell(&["union"], "told");
        }
        assert_eq!(loud.d6("a"), quiet.d6("a"));
        assert_eq!(loud.draw(9, "b", |i| i.to_string()), quiet.draw(9, "b", |i| i.to_string()));
        assert_eq!(loud.draw_told(5, |i| i.to_string()), quiet.draw_told(5, |i| i.to_string()));
        assert_eq!(loud.below(1000), quiet.below(1000));
        assert_eq!(loud.events().len(), 5);
        assert!(quiet.events().is_empty() && quiet.is_quiet() && !loud.is_quiet());
    }

    #[test]
    fn below_is_in_range_and_deterministic() {
        let mut a = Ctx::new([7; 32]);
        let mut b = Ctx::new([7; 32]);
        for n in 1..50 {
            let x = a.below(n);
            assert!(x < n);
            assert_eq!(x, b.below(n));
        }
    }

    // Pinned outputs (SPEC.md "Dice"): ChaCha20 with an all-zero key gives the RFC 8439 keystream
    // 76 b8 e0 ad ... read as little-endian u32 words; d6 rolls by rejection sampling on them.
    #[test]
    fn first_outputs_are_pinned() {
        let mut c = Ctx::new([0; 32]);
        let raw: Vec<u32> = (0..4).map(|_| c.next_u32()).collect();
        assert_eq!(raw, [2917185654, 2419978656, 3848953152, 683509331]);
        let mut c = Ctx::new([0; 32]);
        let d6: Vec<u32> = (0..12).map(|_| c.d6("pin")).collect();
        assert_eq!(d6, [1, 1, 1, 6, 6, 1, 3, 6, 5, 4, 2, 5]);
    }

    #[test]
    fn logged_rolls_and_draws_are_the_streams_draws_in_order() {
        let mut c = Ctx::new([5; 32]);
        c.d6("a");
        c.say("no roll");
        c.tell(&["union"], "private, no roll");
        c.draw(13, "bag", |i| i.to_string());
        c.roll(2, "coin");
        let mut events = c.into_events();
        assert_eq!(first_underived_roll([5; 32], &events), None);
        let r = events[3].roll.as_mut().unwrap();
        r.value = r.value % 13 + 1;
        let want = { let mut o = Ctx::new([5; 32]); o.below(6); o.below(13) + 1 };
        assert_eq!(first_underived_roll([5; 32], &events), Some((3, want)));
        events[3].roll.as_mut().unwrap().sides = 0;
        assert_eq!(first_underived_roll([5; 32], &events), Some((3, 0)));
    }

    #[test]
    fn a_scripted_context_rolls_and_draws_its_values_and_logs_them() {
        let mut c = Ctx::scripted(&[4, 2, 0]);
        assert_eq!(c.d6("initiative"), 4);
        assert_eq!(c.draw(3, "bag", |i| format!("token {i}")), 2);
        assert_eq!(c.script_left(), [0]);
        assert_eq!(c.draw_told(5, |i| format!("pulled {i}")), 0);
        assert!(c.script_left().is_empty());
        let texts: Vec<&str> = c.events().iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["initiative: rolled 4 (d6)", "bag: drew token 2 (3 of 3)", "pulled 0"]);
        assert_eq!(c.events()[0].roll, Some(Roll { sides: 6, value: 4 }));
    }

    #[test]
    #[should_panic(expected = "no scripted value left for: setup")]
    fn a_used_up_script_panics_naming_the_roll() {
        Ctx::scripted(&[]).d6("setup");
    }

    #[test]
    #[should_panic(expected = "scripted value 7 out of 1..=6")]
    fn a_scripted_face_out_of_range_panics() {
        Ctx::scripted(&[7]).d6("x");
    }

    #[test]
    fn rolls_are_logged() {
        let mut c = Ctx::new([0; 32]);
        let v = c.d6("test");
        assert!((1..=6).contains(&v));
        assert_eq!(c.events().len(), 1);
        assert_eq!(c.events()[0].roll, Some(Roll { sides: 6, value: v }));
    }
}
