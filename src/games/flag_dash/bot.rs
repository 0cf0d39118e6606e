//! The built-in player (for `pbem demo` and random-play tests): always a legal order. For each move
//! it tries every card (and card pair for a combo token) with each character it may move, by
//! carrying the move out on a copy of the board as if nobody else moved, scores the result
//! (carry the opposing flag home, else close in on it; collect character flags; keep the defender
//! near its own flag) and plans the best card with the two best alternatives as fallbacks.

use super::engine::{How, Trial, begin_move, carry_on, carry_out, end_move};
use super::asked::reset_only;
use super::forms::{default_plan, default_tries};
use super::layout::{Dir, Rect, Sq, Team, Teams};
use super::orders::{FillKey, Parsed, Step, Try, check_card_order, fill_in, fill_key, parse, parse_try, plan_orders, plan_passes, try_with};
use super::state::{Card, Character, Effect, FlagAt, Mode, MovePlan, Plan, Seat, Stage, State, Token};
use crate::game::{OrderProblem, Orders};

/// A source of bot randomness: a value in `0..n`.
pub type Rng<'a> = &'a mut dyn FnMut(u32) -> u32;

fn dist_to(q: Sq, r: &Rect) -> i32 {
    let dc = if q.c < r.c[0] { r.c[0] - q.c } else { (q.c - r.c[1]).max(0) };
    let dr = if q.r < r.r[0] { r.r[0] - q.r } else { (q.r - r.r[1]).max(0) };
    dc + dr
}

/// How good `s` is for `team` (higher is better).
pub fn score(s: &State, team: Team) -> i32 {
    if let Some(o) = &s.outcome {
        return if o.winner.as_deref() == Some(team.key()) { 100_000 } else { -100_000 };
    }
    let opp = team.other();
    let mut v = 0;
    match s.carrier(opp) {
        Some(i) => v += 300 - 12 * dist_to(s.chars[i].at, s.layout.territory.get(team)),
        None => {
            let f = s.flag_space(opp);
            let d = s.chars.iter().filter(|c| c.team == team && c.is_runner()).map(|c| c.at.dist(f)).min().unwrap_or(0);
            v -= 6 * d;
        }
    }
    // The team's own flag, looked up once (not once a defender).
    let own = s.flag_space(team);
    for c in s.chars.iter().filter(|c| c.team == team) {
        v += 25 * c.holds.len() as i32 + 2 * c.boosts as i32;
        if !c.is_runner() {
            v -= 2 * c.at.dist(own);
        }
    }
    if let Some(i) = s.carrier(team) {
        v -= 200 - 10 * dist_to(s.chars[i].at, s.layout.territory.get(opp));
    }
    v
}

struct Cand {
    mp: MovePlan,
    score: i32,
    /// The places in the list tried of the (up to three) best alternatives, best first.
    tries: [usize; 3],
    /// How many of `tries` there are.
    n: usize,
}

/// One alternative the player tries: the character it selects, its written step if any (what
/// [`parse_try`] reads from its text: one boost or tunnel step) and what its text writes after the
/// character's name (the text itself is made only for the alternatives a plan keeps, see
/// [`Variant::text`]).
struct Variant {
    who: usize,
    /// At most one written step (held in place, not in a list of its own).
    step: Option<Step>,
    /// The text after the name: nothing, `": boost DIR"` or `": tunnel SQ"` (at most
    /// `": tunnel (off the board)"`, 24 bytes), its first `tail_len` bytes.
    tail: [u8; 32],
    tail_len: usize,
}

impl Variant {
    /// Alternative `step` of character `who`, whose text ends in `tail` after the name.
    fn new(who: usize, step: Option<Step>, tail: std::fmt::Arguments) -> Self {
        use std::io::Write;
        let mut buf = [0; 32];
        let mut room = &mut buf[..];
        room.write_fmt(tail).expect("a variant's text after the name fits 32 bytes");
        let tail_len = 32 - room.len();
        Variant { who, step, tail: buf, tail_len }
    }

    /// The written steps: none, or the one boost or tunnel step.
    fn steps(&self) -> &[Step] {
        self.step.as_slice()
    }

    /// The text after the name.
    fn tail(&self) -> &[u8] {
        &self.tail[..self.tail_len]
    }

    /// The alternative as the plan writes it, e.g. `"Green: boost n"`.
    fn text(&self, s: &State) -> String {
        let mut t = s.chars[self.who].name.clone();
        t.push_str(std::str::from_utf8(self.tail()).expect("the tail is written as text"));
        t
    }

    /// The order of the two alternatives' texts (as `String`s compare), without making them.
    fn cmp_text(&self, other: &Variant, s: &State) -> std::cmp::Ordering {
        let (a, b) = (s.chars[self.who].name.as_bytes(), s.chars[other.who].name.as_bytes());
        a.iter().chain(self.tail()).cmp(b.iter().chain(other.tail()))
    }
}

/// Candidate alternatives for character `who`, added to `v`: plain, with one boost first, and
/// through each tunnel.
fn variants(s: &State, who: usize, v: &mut Vec<Variant>) {
    let c = &s.chars[who];
    v.push(Variant::new(who, None, format_args!("")));
    if c.boosts > 0 {
        for d in Dir::ALL {
            v.push(Variant::new(who, Some(Step::Boost(d)), format_args!(": boost {}", d.key())));
        }
    }
    if s.tunnels.contains(&c.at) {
        for t in s.tunnels.iter().filter(|t| **t != c.at) {
            v.push(Variant::new(who, Some(Step::Tunnel { to: *t, bump: None }), format_args!(": tunnel {t}")));
        }
    }
}

/// What the cards of a move may change besides the pieces' spaces, boosts, lying team flags and
/// the outcome: character flags and who carries a team flag (only a Flag card collects or passes
/// character flags, takes or gives a team flag), tunnels (only a Dig card places or removes one)
/// and traps other than by taking them away (only a Trap card places one; without it a move only
/// removes traps, a picked-up or escaped one, so the list is shorter when it changed). A try of a
/// move that may not is put back without comparing them.
#[derive(Clone, Copy)]
struct Touches {
    holds: bool,
    tunnels: bool,
    traps: bool,
}

impl Touches {
    /// Anything (a board whose last move is not known).
    const ALL: Touches = Touches { holds: true, tunnels: true, traps: true };

    /// What the cards of move plan `mp` may change: character flags and carriers with a Flag card,
    /// tunnels with a Dig card, traps placed with a Trap card.
    fn of(mp: &MovePlan) -> Touches {
        let uses = |c: Card| mp.card == c || mp.combo == Some(c) || mp.copy == Some(c);
        Touches { holds: uses(Card::Flag), tunnels: uses(Card::Dig), traps: uses(Card::Trap) }
    }

    /// What card `c` alone may change (no Copy: a Copy's card is its copied one).
    fn of_card(c: Card) -> Touches {
        Touches { holds: c == Card::Flag, tunnels: c == Card::Dig, traps: c == Card::Trap }
    }
}

/// Whether team flag `x` (on a tried board) is where `y` (on the board it was copied from) is; a
/// carried flag has the same carrier unless `carriers` (a Flag card) may have changed it.
fn same_flag(x: &FlagAt, y: &FlagAt, carriers: bool) -> bool {
    match (x, y) {
        (FlagAt::Space(p), FlagAt::Space(q)) => p == q,
        (FlagAt::Carried(m), FlagAt::Carried(n)) => !carriers || m == n,
        _ => false,
    }
}

/// A board to try many moves on: a copy of `base`, put back after each try (only what carrying
/// out a move changes), so that a try costs no copy of the whole state. The copy is the plan's,
/// kept for each of its moves.
struct Scratch<'a> {
    base: &'a State,
    work: &'a mut State,
    /// The (empty, [`Trial`]) lines of the last try, kept for their room.
    lines: Vec<String>,
    /// Each alternative tried (by its place in the list tried) as last filled in: for moves of
    /// which [`FillKey`], and whether it could be. Every card with one token fills alike, so each
    /// is filled once a move, not once a card.
    read: Reads,
    /// For a combo token: a copy of `base` made the board after an alternative's played card,
    /// from which each combo card is tried ([`Scratch::combo_scores`]); `None` for other tokens.
    mid: Option<&'a mut State>,
}

impl<'a> Scratch<'a> {
    /// `work` (a copy of `base` but perhaps for what carrying out a move and counting its cards
    /// as played change) is put back as `base` is.
    /// `mid` (for a combo token; the same) likewise.
    fn new(base: &'a State, work: &'a mut State, mut mid: Option<&'a mut State>, variants: usize) -> Self {
        for w in std::iter::once(&mut *work).chain(mid.as_deref_mut()) {
            if w.played != base.played {
                w.played.clone_from(&base.played);
            }
            put_back(w, base, Touches::ALL);
        }
        // This thread's lists from the last scratch (see `ROOM`), each alternative not yet read.
        let (mut lines, mut read) = ROOM.take();
        lines.clear();
        read.truncate(variants);
        read.iter_mut().for_each(|r| r.0 = None);
        read.resize_with(variants, || (None, Try { who: 0, steps: Vec::new(), chase: Vec::new(), no_card: false }, false));
        Scratch { base, work, lines, read, mid }
    }

    /// Whether alternative `v` (place `k` in the list tried) of `mp` can be read: its card steps
    /// filled in (once a [`FillKey`]) and, with a combo card, in an order the rules allow.
    fn reads(&mut self, role: &str, mp: &MovePlan, k: usize, v: &Variant) -> bool {
        let key = fill_key(mp);
        let (at, t, filled) = &mut self.read[k];
        if *at != Some(key) {
            *filled = fill_in(mp, v.who, v.steps(), t).is_ok();
            *at = Some(key);
        }
        // Without a combo card the filled steps (the written boosts and tunnels, then the card's
        // resolutions in a row) always pass the card-order check: it is made only with one. With
        // one but no Copy they pass too: a combo token resolves its played card once (no repeats
        // to come between), and only a Copy must follow the card it copies. So every combo card
        // of a played card reads alike (`combo_scores` reads one for all).
        let read = if !*filled { Err(String::new()) } else if mp.combo.is_some() && mp.copy.is_some() { check_card_order(mp, &t.steps) } else { Ok(()) };
        debug_assert_eq!(read.is_ok(), *filled && check_card_order(mp, &t.steps).is_ok(), "a move without combo passes the card-order check");
        debug_assert_eq!(read.is_ok().then(|| t.clone()), parse_try(self.base, role, mp, &v.text(self.base)).ok(), "the variant reads as written");
        read.is_ok()
    }

    /// The [`score`] of the board after `role` carries out alternative `v` (place `k` in the list
    /// tried) of `mp` (as if nobody else moved); `None` when it cannot be carried out.
    fn score(&mut self, role: &str, mp: &MovePlan, k: usize, v: &Variant, team: Team) -> Option<i32> {
        if !self.reads(role, mp, k, v) {
            return None;
        }
        let t = &self.read[k].1;
        self.lines.clear();
        let _trial = Trial::begin();
        let done = carry_out(self.work, role, mp, t, false, false, &mut self.lines).is_ok();
        let sc = done.then(|| score(self.work, team));
        self.reset(Touches::of(mp));
        sc
    }

    /// [`Scratch::score`] of each alternative in `tried` with played card `card` and each combo
    /// card of `combos` (a combo token's moves; no Copy among them), into `out` (combo card by
    /// combo card, each alternative in turn). Each alternative's written steps and played card
    /// are carried out once, and each combo card from the board they leave (Priority Tokens,
    /// Combo: one card, then the other; the played card's resolution does not depend on which
    /// card follows it): most of a combo move's work is not done again for each combo card.
    #[allow(clippy::too_many_arguments)]
    fn combo_scores(&mut self, role: &str, token: Token, card: Card, combos: &[Card], tried: &[Variant], team: Team, out: &mut Vec<Option<i32>>) {
        out.clear();
        out.resize(combos.len() * tried.len(), None);
        let mp = |c: Card| MovePlan { card, token, combo: Some(c), copy: None, tries: Vec::new(), spy_on: None };
        let _trial = Trial::begin();
        for (k, v) in tried.iter().enumerate() {
            // Every combo card reads alike (no Copy among them, see `reads`): one read for all.
            if !self.reads(role, &mp(combos[0]), k, v) {
                continue;
            }
            debug_assert!(combos.iter().all(|&c| self.reads(role, &mp(c), k, v)), "every combo card reads alike");
            let readable = 0..combos.len();
            let first_mp = mp(combos[0]);
            let t = &self.read[k].1;
            let split = t.steps.iter().position(|x| matches!(x, Step::Combo(_))).expect("a combo move has its combo step");
            self.lines.clear();
            let how = How { role, mp: &first_mp, t, lenient: false, worded: false };
            let before = begin_move(self.work, &first_mp, t, &mut self.lines).and_then(|mut at| Ok((carry_on(self.work, &how, &mut at, split, &mut self.lines)?, at)));
            match before {
                Err(_) => {}
                Ok((true, _)) => {
                    // The played card ended the move (a win, or trapped): every combo card alike.
                    let sc = score(self.work, team);
                    readable.for_each(|j| out[j * tried.len() + k] = Some(sc));
                }
                Ok((false, at)) => {
                    let mid = self.mid.as_deref_mut().expect("a combo token's scratch has its middle board");
                    put_back(mid, self.work, Touches::ALL);
                    for j in readable {
                        let (mpj, mut atj) = (mp(combos[j]), at);
                        let how = How { mp: &mpj, ..how };
                        let done = carry_on(self.work, &how, &mut atj, t.steps.len(), &mut self.lines).map(|stop| if !stop { end_move(self.work, &mpj, t, &mut self.lines) });
                        out[j * tried.len() + k] = done.is_ok().then(|| score(self.work, team));
                        put_back(self.work, mid, Touches::of_card(combos[j]));
                    }
                }
            }
            self.reset(Touches::ALL);
        }
    }

    /// Leaves the work board as it is after `role` carries out alternative `v` of `mp` and the
    /// move's cards count as played; `None` when it cannot be carried out.
    fn after(mut self, role: &str, mp: &MovePlan, v: &Variant) -> Option<()> {
        let t = try_with(mp, v.who, v.steps()).ok()?;
        let _trial = Trial::begin();
        carry_out(self.work, role, mp, &t, false, false, &mut self.lines).ok()?;
        let played = self.work.played.entry(role.to_string()).or_default();
        played.push(mp.card);
        played.extend(mp.combo);
        Some(())
    }

    /// Puts the board back as `base` is after a move that may change what `may` says.
    fn reset(&mut self, may: Touches) {
        put_back(self.work, self.base, may);
    }
}

impl Drop for Scratch<'_> {
    /// Keeps the lists for this thread's next scratch (see `ROOM`).
    fn drop(&mut self) {
        ROOM.set((std::mem::take(&mut self.lines), std::mem::take(&mut self.read)));
    }
}

/// The filled alternatives of a [`Scratch`] (see its `read`).
type Reads = Vec<(Option<FillKey>, Try, bool)>;

thread_local! {
    /// The lists of the last [`Scratch`] on this thread (its lines and filled alternatives), kept
    /// for their room: each alternative's steps are filled into the list of the last scratch's
    /// alternative in its place, not into a new one (a scratch a move, two moves a plan).
    static ROOM: std::cell::Cell<(Vec<String>, Reads)> = const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// Makes `w` as `b` is after a move on `w` that may change what `may` says: the pieces, flags,
/// tunnels, traps, outcome and trail (nothing else of `w` may differ from `b`).
fn put_back(w: &mut State, b: &State, may: Touches) {
    for (x, y) in w.chars.iter_mut().zip(&b.chars) {
        (x.at, x.boosts, x.flags_left, x.trapped, x.supply) = (y.at, y.boosts, y.flags_left, y.trapped, y.supply);
        if may.holds && x.holds != y.holds {
            x.holds.clone_from(&y.holds);
        }
    }
    if Team::ALL.into_iter().any(|t| !same_flag(w.flags.get(t), b.flags.get(t), may.holds)) {
        w.flags = b.flags.clone();
    }
    if may.tunnels && w.tunnels != b.tunnels {
        w.tunnels.clone_from(&b.tunnels);
    }
    if if may.traps { w.traps != b.traps } else { w.traps.len() != b.traps.len() } {
        w.traps.clone_from(&b.traps);
    }
    if w.outcome.is_some() || b.outcome.is_some() {
        w.outcome.clone_from(&b.outcome);
    }
    w.trail.truncate(b.trail.len());
    debug_assert!(*w == *b, "a tried move changed the board beyond what put_back puts back");
}

/// The best move with `token` from `s`, not using `used` cards; `work` (a copy of `s` but perhaps
/// for an earlier move's changes, see [`Scratch::new`]) is left as the board after it. `mid`: a
/// third such board, for a combo token ([`Scratch::combo_scores`]).
fn best_move(s: &State, work: &mut State, mid: Option<&mut State>, role: &str, token: Token, used: &[Card], rng: Rng) -> Option<MovePlan> {
    let seat = s.seat(role)?;
    let team = seat.team;
    let free: Vec<Card> = seat.cards.iter().copied().filter(|c| !used.contains(c)).collect();
    let mut shapes: Vec<(Card, Option<Card>)> = Vec::with_capacity(free.len() * free.len());
    for &a in &free {
        if token.effect() == Effect::Combo {
            for &b in &free {
                if a != b && a != Card::Copy && b != Card::Copy {
                    shapes.push((a, Some(b)));
                }
            }
        } else {
            shapes.push((a, None));
        }
    }
    let mut best: Option<Cand> = None;
    let mut tried: Vec<Variant> = Vec::new();
    for who in s.movable_iter(role) {
        variants(s, who, &mut tried);
    }
    // Each alternative's place when the list is sorted by text (ties of score go by text: the
    // same order, without comparing texts for each card).
    let mut by_text: Vec<usize> = (0..tried.len()).collect();
    by_text.sort_by(|&a, &b| tried[a].cmp_text(&tried[b], s));
    debug_assert!(by_text.windows(2).all(|w| tried[w[0]].text(s) <= tried[w[1]].text(s)), "sorted as the texts sort");
    let mut rank = vec![0; tried.len()];
    for (r, &k) in by_text.iter().enumerate() {
        rank[k] = r;
    }
    let mut scratch = Scratch::new(s, work, mid.filter(|_| token.effect() == Effect::Combo), tried.len());
    // A combo token's scores for one played card, each combo card's in turn (`combo_scores`).
    let (mut table, mut table_of, mut combos): (Vec<Option<i32>>, Option<Card>, Vec<Card>) = (Vec::new(), None, Vec::new());
    // Kept for their room: every card tried scores into the same list.
    let mut scored: Vec<(i32, usize)> = Vec::with_capacity(tried.len());
    let played: &[Card] = s.played.get(role).map_or(&[], Vec::as_slice);
    for (card, combo) in shapes {
        // A Copy card is tried as a copy of each card played this round (not a Copy); another once.
        let copies: Vec<Option<Card>> = if card == Card::Copy { played.iter().filter(|c| **c != Card::Copy).map(|c| Some(*c)).collect() } else { Vec::new() };
        for copy in copies.into_iter().chain((card != Card::Copy).then_some(None)) {
            let mp = MovePlan { card, token, combo, copy, tries: Vec::new(), spy_on: None };
            // Score and place in `tried`, best first (ties: by text).
            scored.clear();
            if let Some(b) = combo && table_of != Some(card) {
                combos.clear();
                combos.extend(free.iter().copied().filter(|&x| x != card && x != Card::Copy));
                scratch.combo_scores(role, token, card, &combos, &tried, team, &mut table);
                table_of = Some(card);
                debug_assert!(combos.contains(&b), "the combo cards of a played card are its shapes'");
            }
            let j = combo.and_then(|b| combos.iter().position(|&x| x == b));
            for (k, v) in tried.iter().enumerate() {
                let sc = match j {
                    Some(j) => table[j * tried.len() + k],
                    None => scratch.score(role, &mp, k, v, team),
                };
                debug_assert!(j.is_none() || sc == scratch.score(role, &mp, k, v, team), "a combo move scores as carried out whole");
                if let Some(sc) = sc {
                    scored.push((sc + rng(4) as i32, k));
                }
            }
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(rank[a.1].cmp(&rank[b.1])));
            let Some(&(top, _)) = scored.first() else { continue };
            if best.as_ref().is_none_or(|b| top > b.score) {
                let mut tries = [0; 3];
                let n = scored.len().min(3);
                for (t, x) in tries.iter_mut().zip(&scored) {
                    *t = x.1;
                }
                best = Some(Cand { mp, score: top, tries, n });
            }
        }
    }
    let Cand { mp, tries, n, .. } = best?;
    let plan = MovePlan { tries: tries[..n].iter().map(|&k| tried[k].text(s)).collect(), ..mp };
    scratch.after(role, &plan, &tried[tries[0]])?;
    Some(plan)
}

thread_local! {
    /// The boards each plan tries its moves on (see [`plan`]; the third for a combo token only),
    /// kept from one plan to the next on this thread for their room: a plan copies the board into
    /// them ([`copy_board`]) rather than making and dropping copies of the whole state (tens of
    /// strings and lists each).
    static BOARDS: std::cell::Cell<Option<Box<(State, State, State)>>> = const { std::cell::Cell::new(None) };
}

/// Makes `d` a copy of `s` without the round's account (`log`, `trail`, which no move reads),
/// reusing `d`'s strings and lists where it has them. Every field is named, so that a field added
/// to [`State`] cannot be left out.
fn copy_board(d: &mut State, s: &State) {
    let State { layout, mode, abilities, out_columns, seats, chars, flags, tunnels, traps, tiebreak, round, stage, plans, played, spied, tie_answers, log: _, trail: _, last_mover, outcome } = s;
    d.layout.clone_from(layout);
    (d.mode, d.abilities, d.tiebreak, d.round, d.last_mover) = (*mode, *abilities, *tiebreak, *round, *last_mover);
    d.out_columns.clone_from(out_columns);
    copy_seats(&mut d.seats, seats);
    copy_chars(&mut d.chars, chars);
    copy_flags(&mut d.flags, flags);
    d.tunnels.clone_from(tunnels);
    d.traps.clone_from(traps);
    d.stage.clone_from(stage);
    d.plans.clone_from(plans);
    d.played.clone_from(played);
    d.spied.clone_from(spied);
    d.tie_answers.clone_from(tie_answers);
    d.log.clear();
    d.trail.clear();
    d.outcome.clone_from(outcome);
}

/// Makes `d` a copy of `s`, reusing the room of `d`'s seats.
fn copy_seats(d: &mut Vec<Seat>, s: &[Seat]) {
    d.truncate(s.len());
    for (x, y) in d.iter_mut().zip(s) {
        let Seat { role, team, number, cards, tokens, discarded } = y;
        x.role.clone_from(role);
        (x.team, x.number) = (*team, *number);
        x.cards.clone_from(cards);
        x.tokens.clone_from(tokens);
        x.discarded.clone_from(discarded);
    }
    let n = d.len();
    d.extend_from_slice(&s[n..]);
}

/// Makes `d` a copy of `s`, reusing the room of `d`'s characters (names, flags held).
fn copy_chars(d: &mut Vec<Character>, s: &[Character]) {
    d.truncate(s.len());
    for (x, y) in d.iter_mut().zip(s) {
        let Character { name, team, seat, at, boosts, flags_left, holds, ability, trapped, supply } = y;
        x.name.clone_from(name);
        x.holds.clone_from(holds);
        (x.team, x.seat, x.at, x.boosts, x.flags_left, x.ability, x.trapped, x.supply) = (*team, *seat, *at, *boosts, *flags_left, *ability, *trapped, *supply);
    }
    let n = d.len();
    d.extend_from_slice(&s[n..]);
}

/// Makes `d` a copy of `s`, reusing a carrier's name where both are carried.
fn copy_flags(d: &mut Teams<FlagAt>, s: &Teams<FlagAt>) {
    for t in Team::ALL {
        match (d.get_mut(t), s.get(t)) {
            (FlagAt::Carried(x), FlagAt::Carried(y)) => x.clone_from(y),
            (x, y) => *x = y.clone(),
        }
    }
}

/// A whole plan for `role`.
pub fn plan(s: &State, role: &str, rng: Rng) -> Plan {
    let Some(seat) = s.seat(role) else { return default_plan(s, role) };
    let mut toks: Vec<Token> = seat.tokens.iter().copied().filter(|t| *t != Token::Spy).collect();
    let spy = seat.tokens.contains(&Token::Spy) && toks.len() >= 3 && rng(4) == 0;
    let picks: Vec<Token> = if reset_only(s, role) {
        vec![Token::N(7)]
    } else {
        let mut p = Vec::new();
        if spy {
            p.push(Token::Spy);
        }
        while p.len() < 2 {
            // Low tokens a little more often: pick the lower of two random draws.
            let a = rng(toks.len() as u32) as usize;
            let b = rng(toks.len() as u32) as usize;
            p.push(toks.remove(a.min(b)));
        }
        p
    };
    // The board the moves are tried on (this thread's, see `BOARDS`), without the round's account.
    let mut boards = BOARDS.take().unwrap_or_else(|| Box::new((s.clone(), s.clone(), s.clone())));
    let (sim, work, mid) = &mut *boards;
    copy_board(sim, s);
    // The board each move is tried on, put back as `sim` is before each.
    copy_board(work, s);
    // For a combo token, the board after a move's played card (`Scratch::combo_scores`).
    let combo = picks.iter().any(|t| t.effect() == Effect::Combo);
    if combo {
        copy_board(mid, s);
    }
    let mut used: Vec<Card> = Vec::new();
    let mut moves = Vec::new();
    for &t in &picks {
        match best_move(sim, work, combo.then_some(&mut *mid), role, t, &used, rng) {
            Some(mp) => {
                used.push(mp.card);
                used.extend(mp.combo);
                sim.played.clone_from(&work.played);
                copy_chars(&mut sim.chars, &work.chars);
                copy_flags(&mut sim.flags, &work.flags);
                moves.push(mp);
            }
            None => {
                // Nothing works: any unused basic card with the default alternatives (those of
                // every move of the default plan, made only here: most plans never need them).
                let card = Card::BASIC.into_iter().find(|c| !used.contains(c) && *c != Card::Copy).unwrap_or(Card::Forward);
                let combo = (t.effect() == Effect::Combo).then(|| Card::BASIC.into_iter().find(|c| !used.contains(c) && *c != card && *c != Card::Copy)).flatten();
                used.push(card);
                used.extend(combo);
                moves.push(MovePlan { card, token: t, combo, copy: None, tries: default_tries(s, role), spy_on: None });
            }
        }
    }
    BOARDS.set(Some(boards));
    let team = s.team_roles(seat.team);
    let tie_first = match rng(3) {
        0 => None,
        1 => Some(role.to_string()),
        _ => team.iter().find(|r| **r != role).map(|r| r.to_string()),
    }
    // 2-Player Rules (basic): one seat a team, nobody to tie with; the order check refuses any
    // (drawn all the same, so that the other games' choices stay as they were).
    .filter(|_| s.mode != Mode::TwoBasic);
    Plan { moves, tie_first, secret_tunnel: s.layout.secret_tunnel.is_some() }
}

/// The built-in player's order for `role`'s pending ask (always passes the check; falls back to
/// the default order otherwise).
pub fn order(s: &State, role: &str, rng: Rng) -> Orders {
    let o = match s.stage {
        Stage::Plan => plan_orders(&plan(s, role, rng)),
        Stage::Layout => super::forms::default_order(s, role),
        Stage::Move { .. } if super::engine::spy_asked(s).as_deref() == Some(role) => super::forms::default_order(s, role),
        _ => {
            let mut o = super::forms::default_order(s, role);
            if let Some(seat) = s.seat(role) {
                let team = s.team_roles(seat.team);
                let r = team[rng(team.len() as u32) as usize];
                o.insert("first".into(), toml::Value::String(r.to_string()));
            }
            o
        }
    };
    match parse(s, role, &o) {
        Ok(_) => o,
        Err(_) => super::forms::default_order(s, role),
    }
}

/// [`order`] already checked: what [`parse`] makes of it, drawing the same choices from `rng`. A
/// round's plan is checked as typed ([`plan_passes`]), not written as TOML and read back.
///
/// Errors: the problems [`parse`] finds in the order (only where even the default order fails).
pub fn checked(s: &State, role: &str, rng: Rng) -> Result<Parsed, Vec<OrderProblem>> {
    if s.stage != Stage::Plan || s.seat(role).is_none() {
        return parse(s, role, &order(s, role, rng));
    }
    let p = plan(s, role, rng);
    let passes = plan_passes(s, role, &p);
    debug_assert_eq!(passes, parse(s, role, &plan_orders(&p)) == Ok(Parsed::Plan(p.clone())), "plan_passes agrees with parse");
    if passes { Ok(Parsed::Plan(p)) } else { parse(s, role, &super::forms::default_order(s, role)) }
}
