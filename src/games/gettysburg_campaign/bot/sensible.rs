//! The `sensible` built-in players (the default): each plays for the rulebook's aim (§4: the
//! Confederates score 6 points of towns by the end of turn 9, the Union stops them).
//!
//! The Confederate player moves a corps every round it can gain by it: toward the richest unscored
//! town it can reach (points discounted by distance, a town another corps is nearer to counting
//! half), attacking defenders only with fair odds (computed from §9's fire), and plays Lee when two
//! moves gain clearly more than one (or in the last turn). The Union player finds the unscored
//! towns Confederate corps can reach within three moves, keeps or sends enough strength to each
//! (the most urgent first, the nearest free corps), defends towns worth points and any town it
//! holds in strength, and sends beaten Confederates toward towns that score nothing. A little
//! randomness breaks ties, drawn only from the given source.

use std::collections::BTreeMap;

use toml::Value;

mod threat;

use super::{plan_value, shuffled, steps_left, strs, Rng};
use crate::game::Orders;
use crate::games::gettysburg_campaign::engine::{Direct, VacateChoice};
use crate::games::gettysburg_campaign::forms::default_order;
use crate::games::gettysburg_campaign::orders::{movable, Parsed, StandingUpdate};
use crate::games::gettysburg_campaign::rules::{self, FirePlan};
use crate::games::gettysburg_campaign::scenario::{army_key, Scenario};
use crate::games::gettysburg_campaign::side::Side;
use crate::games::gettysburg_campaign::state::{Command, FirePolicy, Location, Question, Stage, Standing, State};

/// Worth lost per road of distance to a target town.
const DISTANCE_DISCOUNT: f64 = 0.75;
/// The least chance of success for which a Confederate corps attacks defenders.
const ATTACK_ODDS: f64 = 0.45;
/// What playing the army commander costs before the last turn (he can be played only once).
const ARMY_COMMANDER_COST: f64 = 0.6;

/// Points `town` would still give the Confederates.
fn unscored(s: &State, town: &str) -> u32 {
    if s.scored.iter().any(|t| t == town) { 0 } else { s.scenario.points(town) }
}

/// Total strength of `side`'s corps in `town`.
fn strength_at(s: &State, side: Side, town: &str) -> u32 {
    s.strength(&s.in_town(side, town))
}

/// The chances of 0, 1, 2, ... hits of a firing (one more hit per die showing 6).
fn hit_chances(plan: FirePlan) -> Vec<f64> {
    let mut d = vec![0.0; plan.automatic as usize];
    let mut sixes = vec![1.0];
    for _ in 0..plan.dice {
        let mut next = vec![0.0; sixes.len() + 1];
        for (k, p) in sixes.iter().enumerate() {
            next[k] += p * 5.0 / 6.0;
            next[k + 1] += p / 6.0;
        }
        sixes = next;
    }
    d.extend(sixes);
    d
}

/// The chance that `attacker` hits beat `defender` hits by at least `margin`.
fn beats(attacker: &[f64], defender: &[f64], margin: i64) -> f64 {
    let mut p = 0.0;
    for (a, pa) in attacker.iter().enumerate() {
        for (d, pd) in defender.iter().enumerate() {
            if a as i64 - d as i64 >= margin {
                p += pa * pd;
            }
        }
    }
    p
}

/// The chance that an attack of `att` strength along one road makes `def` strength retreat (§9,
/// the plain rule of fire). Each is worked out once per thread (by the divisors and strengths).
fn attack_chance(s: &State, att: u32, def: u32) -> f64 {
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::BTreeMap<[u32; 4], f64>> = Default::default();
    }
    let (ad, dd) = (s.scenario.attack_divisor(1), s.scenario.rules.defender_divisor);
    let work = || {
        let plain = |x: u32, div: u32| FirePlan { automatic: x / div, dice: x % div };
        beats(&hit_chances(plain(att, ad)), &hit_chances(plain(def, dd)), 1)
    };
    KNOWN.with_borrow_mut(|k| *k.entry([ad, dd, att, def]).or_insert_with(work))
}

/// What the map alone gives the look-ahead: town names and roads by town index, the roads as
/// town sets, and road distances once asked. Worked out once per scenario on each thread (game
/// after game of `pbem simulate` shares one scenario), read through [`Graph`].
struct MapTables {
    /// Town names in map order.
    names: Vec<String>,
    /// Each town's neighbours, by index, in map order.
    adj: Vec<Vec<usize>>,
    /// Roads from each town to every town, through any town.
    roads: Vec<std::cell::OnceCell<Vec<u32>>>,
    /// The map as town sets, for the Union's threat search.
    bits: threat::Bits,
    /// [`attack_chance`] by attacking strength × `max_def + 1` + defending strength, as worked
    /// out so far on this thread (NaN: not yet); it depends on the scenario alone. Sized by the
    /// strengths of the first state asked (greater ones are looked up in `attack_chance`'s memo).
    odds: Vec<std::cell::Cell<f64>>,
    /// The most defending strength in `odds`: all the Union's in that state.
    max_def: u32,
}

impl MapTables {
    fn new(s: &State) -> Self {
        let towns = &s.scenario.map.towns;
        // Each town's neighbours in map order, as `Scenario::neighbors` lists them.
        let mut adj = vec![Vec::new(); towns.len()];
        for [a, b] in &s.scenario.map.roads {
            if let (Some(i), Some(j)) = (towns.iter().position(|t| t.name == *a), towns.iter().position(|t| t.name == *b)) {
                adj[i].push(j);
                adj[j].push(i);
            }
        }
        adj.iter_mut().for_each(|v: &mut Vec<usize>| {
            v.sort_unstable();
            v.dedup();
        });
        let max_att = s.corps.iter().map(|c| c.strength).max().unwrap_or(0);
        let max_def = s.corps.iter().filter(|c| c.side == Side::Union).map(|c| c.strength).sum::<u32>();
        // A scenario's strengths are the user's numbers: past a table of `ODDS_CELLS` the chances
        // are looked up in `attack_chance`'s own memo instead (no allocation that grows with them).
        let cells = (max_att as usize + 1).saturating_mul(max_def as usize + 1);
        let odds = if cells <= ODDS_CELLS { (0..cells).map(|_| std::cell::Cell::new(f64::NAN)).collect() } else { Vec::new() };
        MapTables {
            odds,
            max_def,
            names: towns.iter().map(|t| t.name.clone()).collect(),
            bits: threat::Bits::new(&adj),
            adj,
            roads: towns.iter().map(|_| Default::default()).collect(),
        }
    }

    /// The tables of `s`'s scenario, remembered on this thread for the last scenario asked (the
    /// memo keeps that scenario alive, so the same address is the same scenario).
    fn of(s: &State) -> std::rc::Rc<MapTables> {
        type Known = Option<(std::sync::Arc<Scenario>, std::rc::Rc<MapTables>)>;
        thread_local! {
            static KNOWN: std::cell::RefCell<Known> = const { std::cell::RefCell::new(None) };
        }
        KNOWN.with_borrow_mut(|k| match k {
            Some((sc, m)) if std::sync::Arc::ptr_eq(sc, &s.scenario) => m.clone(),
            _ => k.insert((s.scenario.clone(), std::rc::Rc::new(MapTables::new(s)))).1.clone(),
        })
    }
}

/// The most pairs of strengths a [`Graph`] keeps attack chances for in a table (8 MB of `f64`;
/// the shipped scenario needs 6 × 21).
const ODDS_CELLS: usize = 1 << 20;

/// The map ([`MapTables`], which a `Graph` reads as its own fields) and the board as it stands,
/// for the look-ahead of both sides (thousands of positions per order), built once per order; it
/// remembers what it has worked out (attack chances, road distances), all of it fixed while the
/// order is chosen.
struct Graph {
    /// The scenario's map.
    map: std::rc::Rc<MapTables>,
    /// Points each town would still give the Confederates ([`unscored`]).
    points: Vec<u32>,
    /// The towns still worth points, as a town set (empty when the map is too big for one word).
    scoring: u64,
    /// Strength of the Union corps in each town ([`strength_at`]).
    union: Vec<u32>,
    /// Roads from each town to every town, through towns free of Union corps.
    free_roads: Vec<std::cell::OnceCell<Vec<u32>>>,
}

impl std::ops::Deref for Graph {
    type Target = MapTables;

    fn deref(&self) -> &MapTables {
        &self.map
    }
}

impl Graph {
    fn new(s: &State) -> Self {
        let map = MapTables::of(s);
        let towns = &s.scenario.map.towns;
        // [`unscored`] of each town, its points read from the town itself (names are unique).
        let points: Vec<u32> = towns.iter().map(|t| if s.scored.contains(&t.name) { 0 } else { t.points }).collect();
        // [`strength_at`] for the Union in every town, in one pass over the corps.
        let mut union = vec![0; towns.len()];
        for c in s.corps.iter().filter(|c| c.side == Side::Union) {
            if let Location::Town { town } = &c.at && let Some(i) = towns.iter().position(|t| t.name == *town) {
                union[i] += c.strength;
            }
        }
        let scoring = if map.bits.fits() { (0..towns.len()).filter(|&i| points[i] > 0).fold(0u64, |w, i| w | 1 << i) } else { 0 };
        Graph { free_roads: towns.iter().map(|_| Default::default()).collect(), map, points, scoring, union }
    }

    /// [`attack_chance`], each pair of strengths worked out once per thread ([`MapTables`]).
    fn attack_chance(&self, s: &State, att: u32, def: u32) -> f64 {
        let Some(cell) = self.map.odds.get(att as usize * (self.map.max_def as usize + 1) + def as usize).filter(|_| def <= self.map.max_def) else {
            return attack_chance(s, att, def);
        };
        if cell.get().is_nan() {
            cell.set(attack_chance(s, att, def));
        }
        cell.get()
    }

    /// Roads from town `from` to every town, through any town, worked out once.
    fn roads(&self, from: usize) -> &[u32] {
        self.roads[from].get_or_init(|| self.distances(from, &|_| true))
    }

    /// Roads from town `from` to every town through towns free of Union corps, worked out once.
    fn free_roads(&self, from: usize) -> &[u32] {
        self.free_roads[from].get_or_init(|| self.distances(from, &|t| self.union[t] == 0))
    }

    fn distances(&self, from: usize, open: &dyn Fn(usize) -> bool) -> Vec<u32> {
        // Room for every town at once: the queue never grows.
        let (mut d, mut queue) = (Vec::with_capacity(self.adj.len()), std::collections::VecDeque::with_capacity(self.adj.len()));
        self.distances_into(from, open, &mut d, &mut queue);
        d
    }

    /// Roads from town `from` to every town (`u32::MAX` if unreachable), through towns where
    /// `open` is true (`from` and the end towns always count), into `d` (and `queue` as room to
    /// work in).
    fn distances_into(&self, from: usize, open: &dyn Fn(usize) -> bool, d: &mut Vec<u32>, queue: &mut std::collections::VecDeque<usize>) {
        d.clear();
        d.resize(self.adj.len(), u32::MAX);
        queue.clear();
        queue.push_back(from);
        d[from] = 0;
        while let Some(t) = queue.pop_front() {
            if t != from && !open(t) {
                continue;
            }
            for &n in &self.adj[t] {
                if d[n] == u32::MAX {
                    d[n] = d[t] + 1;
                    queue.push_back(n);
                }
            }
        }
    }
}

/// The Confederates' view of the board while one corps plans: the other corps' distances, and the
/// towns the plan has already scored (by town index).
struct Plan<'a> {
    s: &'a State,
    g: &'a Graph,
    corps: usize,
    others: Vec<&'a [u32]>,
    scored: Vec<usize>,
}

impl<'a> Plan<'a> {
    fn new(s: &'a State, g: &'a Graph, corps: usize) -> Self {
        let others = s
            .corps_of(Side::Confederate)
            .into_iter()
            .filter(|&o| o != corps)
            .filter_map(|o| s.town_of(o).map(|t| g.roads(s.scenario.town_rank(t))))
            .collect();
        Plan { s, g, corps, others, scored: Vec::new() }
    }

    fn unscored(&self, town: usize) -> u32 {
        if self.scored.contains(&town) { 0 } else { self.g.points[town] }
    }

    fn can_take(&self, town: usize) -> bool {
        let d = self.g.union[town];
        d == 0 || self.g.attack_chance(self.s, self.s.corps[self.corps].strength, d) >= ATTACK_ODDS
    }

    /// What standing in `town` promises: the best unscored town reachable through towns free of
    /// Union corps, by points discounted per road (half when another corps is nearer to it).
    fn future(&self, town: usize) -> f64 {
        let d = self.g.free_roads(town);
        let mut best = 0.0f64;
        for i in 0..d.len() {
            let pts = self.unscored(i);
            if pts == 0 || d[i] == u32::MAX || d[i] == 0 || !self.can_take(i) {
                continue;
            }
            let nearer = self.others.iter().any(|o| o[i] < d[i]);
            let v = pts as f64 * DISTANCE_DISCOUNT.powi(d[i] as i32) * if nearer { 0.5 } else { 1.0 };
            best = best.max(v);
        }
        best
    }

    /// The worth of moving into `to` from a town that promises `here` ([`Plan::future`]): its
    /// points now (times the odds of an attack) and what it promises after.
    fn step_value(&self, here: f64, to: usize) -> Option<f64> {
        let def = self.g.union[to];
        if def == 0 {
            return Some(self.unscored(to) as f64 + self.future(to));
        }
        let p = self.g.attack_chance(self.s, self.s.corps[self.corps].strength, def);
        (p >= ATTACK_ODDS).then(|| p * (self.unscored(to) as f64 + self.future(to)) + (1.0 - p) * (here - 0.5))
    }

    /// The best plan of up to `steps` moves from where the corps stands, and its gain over staying.
    fn best(mut self, steps: u32, rng: Rng) -> (Vec<String>, f64) {
        let Some(start) = self.s.town_of(self.corps).map(|t| self.s.scenario.town_rank(t)) else { return (Vec::new(), 0.0) };
        let stay = self.future(start);
        let (mut at, mut plan, mut value) = (start, Vec::new(), stay);
        for step in 0..steps {
            // Nothing is scored yet at the first step: the start promises what staying does.
            let here = if step == 0 { stay } else { self.future(at) };
            let mut best: Option<(f64, usize)> = None;
            for n in shuffled(self.g.adj[at].clone(), rng) {
                if let Some(v) = self.step_value(here, n)
                    && best.as_ref().is_none_or(|(bv, _)| v > *bv)
                {
                    best = Some((v, n));
                }
            }
            let Some((v, n)) = best.filter(|(v, _)| *v > here + 1e-9) else { break };
            let attack = self.g.union[n] > 0;
            value += v - here;
            plan.push(self.g.names[n].clone());
            self.scored.push(n);
            at = n;
            if attack {
                break;
            }
        }
        (plan, value - stay)
    }
}

/// Where every corps stands, by town index (None: eliminated; a corps advancing on a town counts
/// where it came from).
fn positions(s: &State) -> Vec<Option<usize>> {
    (0..s.corps.len())
        .map(|c| match &s.corps[c].at {
            Location::Town { town } => Some(s.scenario.town_rank(town)),
            Location::Advancing { from, .. } => Some(s.scenario.town_rank(from)),
            Location::Eliminated => None,
        })
        .collect()
}

/// A card played and the units it names.
type Play = (Command, Vec<String>);

/// Picks the play with the most gain (ties at random); the army commander costs a little before
/// the last turn, so he is kept for a move that matters.
fn choose_cards(s: &State, side: Side, rng: Rng) -> Vec<Play> {
    let mut best: Option<(f64, Vec<Play>)> = None;
    let all = rules::legal_selections(s, side);
    let start = rng(all.len().max(1) as u32) as usize;
    let graph = std::cell::OnceCell::new();
    let mut search = None;
    for k in 0..all.len() {
        let sel = &all[(start + k) % all.len()];
        let cost = play_cost(s, side, sel);
        // The Union's routes are named only for a play that is kept, and searched only for a
        // gain that could beat the best play's (see [`FLOOR_MARGIN`]).
        let (plans, mut gain) = match side {
            Side::Union => {
                let search = search.get_or_insert_with(|| threat::Search::new(s, graph.get_or_init(|| Graph::new(s))));
                let floor = best.as_ref().map_or(f64::NEG_INFINITY, |b| b.0 + cost - FLOOR_MARGIN);
                let Some(gain) = search.plans_over(sel, floor) else { continue };
                (None, gain)
            }
            Side::Confederate => {
                let mut g = 0.0;
                let mut plans = Vec::new();
                let graph = graph.get_or_init(|| Graph::new(s));
                for x in sel {
                    let (p, gx) = Plan::new(s, graph, x.corps).best(rules::allowed_steps(s, side, sel, x.corps), rng);
                    g += gx;
                    plans.push(p);
                }
                (Some(plans), g)
            }
        };
        if cost > 0.0 {
            gain -= cost;
        }
        if best.as_ref().is_none_or(|(b, _)| gain > *b + 1e-9) {
            let plans = plans.unwrap_or_else(|| search.as_ref().map(threat::Search::names).unwrap_or_default());
            best = Some((gain, sel.iter().cloned().zip(plans).collect()));
        }
    }
    best.map(|(_, p)| p).unwrap_or_default()
}

/// What play `sel` of `side` costs: the army commander before the last turn.
fn play_cost(s: &State, side: Side, sel: &[Command]) -> f64 {
    if rules::plays_army(s, side, sel) && s.turn < s.scenario.rules.last_turn { ARMY_COMMANDER_COST } else { 0.0 }
}

/// How far below the best play's gain so far (plus its own cost) a play's search may give up
/// ([`threat::Search::plans_over`]): a play it gives up gains no more than that floor + 2·10⁻⁹,
/// so less than the best + 10⁻⁹ that [`choose_cards`] asks of a play to be kept, whatever the
/// rounding of the costs.
const FLOOR_MARGIN: f64 = 1e-7;

/// The plan of `side`'s corps `c` with `steps` moves left (asked mid-round).
fn plan_for(s: &State, side: Side, c: usize, steps: u32, rng: Rng) -> Vec<String> {
    match side {
        Side::Confederate => Plan::new(s, &Graph::new(s), c).best(steps, rng).0,
        Side::Union => {
            let cmd = s.this_round.commands.get(side).iter().find(|x| x.corps == c).cloned();
            let Some(x) = cmd else { return Vec::new() };
            let g = Graph::new(s);
            let mut search = threat::Search::new(s, &g);
            search.plans(&[x]);
            search.names().remove(0).into_iter().take(steps as usize).collect()
        }
    }
}

/// Neighbours of `town` in the order `side` sends corps there when it chooses (`own`: vacating its
/// own; else retreating the enemy's): the Confederates toward unscored points, the Union's defeated
/// corps away from them; the Union toward its own corps and points, the Confederates' defeated
/// corps toward towns worth nothing, southward. `live`: by the board now (an answer when asked);
/// else by the map alone (standing orders, which then seldom change).
fn preference(s: &State, side: Side, town: &str, own: bool, live: bool) -> Vec<String> {
    let mut v = s.scenario.neighbors(town);
    v.sort_by_key(|n| {
        let pts = if live { unscored(s, n) } else { s.scenario.points(n) } as i64;
        let at = |x: Side| if live { strength_at(s, x, n) as i64 } else { 0 };
        match (side, own) {
            (Side::Confederate, true) => (-pts, at(Side::Union)),
            (Side::Confederate, false) => (pts, 0),
            (Side::Union, true) => (-at(Side::Union), -pts),
            (Side::Union, false) => (pts, s.scenario.town_rank(n) as i64),
        }
    });
    v
}

/// The standing orders, by the map alone so that they seldom change: the Union defends every town
/// worth points and vacates the others toward its preferred neighbours, the Confederates defend
/// wherever they stand; casualties weakest first; retreats chosen for the enemy; under the
/// optional rule the Union fires by the plain rule and the Confederates are asked (they choose
/// with the defender's hits known). What the map alone decides comes from [`by_map`]. The
/// casualties are corps indices (their ids are copied only when they change).
fn wanted(s: &State, side: Side) -> (std::rc::Rc<Standing>, Vec<usize>, Option<FirePolicy>) {
    let mut casualties = s.corps_of(side);
    casualties.sort_by_key(|&c| (s.corps[c].strength, c));
    let fire = s.optional_fire.then_some(if side == Side::Union { FirePolicy::Never } else { FirePolicy::Ask });
    (by_map(s, side), casualties, fire)
}

/// The part of [`wanted`] the scenario alone decides (defend, vacate, retreat, combat order),
/// worked out once per scenario and side on each thread: game after game of `pbem simulate` shares
/// one scenario. The memo keeps the scenario it was worked out for alive, so the same address is
/// the same scenario.
fn by_map(s: &State, side: Side) -> std::rc::Rc<Standing> {
    type Known = Vec<(Side, std::sync::Arc<Scenario>, std::rc::Rc<Standing>)>;
    thread_local! {
        static KNOWN: std::cell::RefCell<Known> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let hit = KNOWN.with_borrow(|k| k.iter().find(|(x, sc, _)| *x == side && std::sync::Arc::ptr_eq(sc, &s.scenario)).map(|(_, _, st)| st.clone()));
    if let Some(st) = hit {
        return st;
    }
    let mut st = Standing::default();
    for t in &s.scenario.map.towns {
        if side == Side::Confederate || t.points > 0 {
            st.defend.push(t.name.clone());
        } else {
            st.vacate.insert(t.name.clone(), preference(s, side, &t.name, true, false));
        }
        st.retreat.insert(t.name.clone(), preference(s, side, &t.name, false, false));
    }
    if side == Side::Confederate {
        st.combat_order = s.scenario.map.towns.iter().map(|t| t.name.clone()).collect();
    }
    let st = std::rc::Rc::new(st);
    KNOWN.with_borrow_mut(|k| {
        k.retain(|(x, _, _)| *x != side);
        k.push((side, s.scenario.clone(), st.clone()));
    });
    st
}

/// The `[orders.standing]` changes that turn the stored standing orders into [`wanted`] ones,
/// naming only what changes (tables merge per town; README "Gettysburg Campaign orders"); None if
/// nothing does.
fn standing_update(s: &State, side: Side) -> Option<StandingUpdate> {
    let (old, (new, casualties, fire)) = (s.standing.get(side), wanted(s, side));
    let mut u = by_map_update(old, &new);
    u.casualties = (!old.casualties.iter().eq(casualties.iter().map(|&c| &s.corps[c].id))).then(|| casualties.iter().map(|&c| s.corps[c].id.clone()).collect());
    if old.optional_fire != fire && let Some(f) = fire {
        u.optional_fire = Some(if f == FirePolicy::Never { FirePolicy::Never } else { FirePolicy::Ask });
    }
    (!u.is_empty()).then_some(u)
}

/// The changes of what the map decides ([`by_map`]: defend, vacate, retreat, combat order) that
/// turn the stored standing orders `old` into `new`. Remembered on this thread for the last two
/// pairs asked (one a side; the memo keeps both of a pair alive, so the same addresses are the
/// same orders): the states of one game share their stored orders until an order changes them,
/// and `by_map`'s are shared, so most orders compare no tables (the comparison was ~3% of
/// `pbem simulate`'s Gettysburg games).
fn by_map_update(old: &std::sync::Arc<Standing>, new: &std::rc::Rc<Standing>) -> StandingUpdate {
    type Known = std::collections::VecDeque<(std::sync::Arc<Standing>, std::rc::Rc<Standing>, StandingUpdate)>;
    thread_local! {
        static KNOWN: std::cell::RefCell<Known> = const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
    }
    let same = |(o, n, _): &&(std::sync::Arc<Standing>, std::rc::Rc<Standing>, StandingUpdate)| std::sync::Arc::ptr_eq(o, old) && std::rc::Rc::ptr_eq(n, new);
    if let Some(u) = KNOWN.with_borrow(|k| k.iter().find(same).map(|x| x.2.clone())) {
        return u;
    }
    let u = work_out_by_map_update(old, new);
    KNOWN.with_borrow_mut(|k| {
        if k.len() == 2 {
            k.pop_front();
        }
        k.push_back((old.clone(), new.clone(), u.clone()));
    });
    u
}

/// [`by_map_update`] worked out.
fn work_out_by_map_update(old: &Standing, new: &Standing) -> StandingUpdate {
    let changed = |a: &Vec<String>, b: &Vec<String>| (a != b).then(|| b.clone());
    let mut u = StandingUpdate { defend: changed(&old.defend, &new.defend), combat_order: changed(&old.combat_order, &new.combat_order), ..StandingUpdate::default() };
    // A new defend list drops the stored vacate entries of its towns. (Most orders change no
    // table: that is seen without building the entries.)
    if old.vacate != new.vacate || old.vacate.keys().any(|k| new.defend.contains(k)) {
        let kept: BTreeMap<&String, &Vec<String>> = old.vacate.iter().filter(|(k, _)| !new.defend.contains(k)).collect();
        u.vacate = table_update(kept, &new.vacate);
    }
    if old.retreat != new.retreat {
        u.retreat = table_update(old.retreat.iter().collect(), &new.retreat);
    }
    u
}

/// The entries that turn town table `a` into `b`: each town whose entry differs, and `Town = []`
/// for each town `b` lacks; None if there are none.
fn table_update(a: BTreeMap<&String, &Vec<String>>, b: &BTreeMap<String, Vec<String>>) -> Option<BTreeMap<String, Vec<String>>> {
    let mut entries = BTreeMap::new();
    for (town, dests) in b {
        if a.get(town) != Some(&dests) {
            entries.insert(town.clone(), dests.clone());
        }
    }
    for town in a.keys().filter(|k| !b.contains_key(**k)) {
        entries.insert((*town).clone(), Vec::new());
    }
    (!entries.is_empty()).then_some(entries)
}

/// The firing with the best expected result: as the attacker, knowing the defender's hits, the
/// chance to win (by two counting more) less the chance of losing a corps; else the plain rule.
fn choose_fire(s: &State, strength: u32, divisor: u32, defender_hits: Option<u32>) -> u32 {
    let options = rules::fire_options(strength, divisor, true, s.scenario.rules.optional_fire_max_dice);
    let Some(dh) = defender_hits else { return options[0].automatic };
    let mut def = vec![0.0; dh as usize];
    def.push(1.0);
    let score = |p: &FirePlan| {
        let a = hit_chances(*p);
        beats(&a, &def, 1) + 0.5 * beats(&a, &def, 2) - 0.8 * (1.0 - beats(&a, &def, -1))
    };
    let mut best = options[0];
    for p in &options[1..] {
        if score(p) > score(&best) + 1e-9 {
            best = *p;
        }
    }
    best.automatic
}

/// What the player decided for its pending question, before it is written as an order: the
/// standing-order changes and the answer.
pub(crate) struct Decision {
    standing: Option<StandingUpdate>,
    answer: Answer,
}

/// The answer part of a [`Decision`], by question.
enum Answer {
    /// command: the cards played, each with its corps's planned moves.
    Cards(Vec<Play>),
    /// move: the planned moves of the corps asked.
    Move(usize, Vec<String>),
    /// vacate-or-defend: the town to vacate to, or None to defend (the default order's answer).
    Vacate(Option<String>),
    /// retreat: the town the enemy retreats to, or None for the default order's.
    Retreat(Option<String>),
    /// fire-option: the automatic hits kept.
    Fire(u32),
    /// combat-order, casualty: the default order's answer.
    Default,
}

/// The decision for question `q` put to `side`, drawing from `rng`.
fn decide(s: &State, side: Side, q: &Question, rng: Rng) -> Decision {
    let standing = standing_update(s, side);
    let answer = match q {
        Question::Command { .. } => Answer::Cards(choose_cards(s, side, rng)),
        Question::Move { corps, .. } => Answer::Move(*corps, plan_for(s, side, *corps, steps_left(s, side, *corps), rng)),
        Question::VacateOrDefend { town, mover, options, .. } => {
            let mine = strength_at(s, side, town);
            let hold = mine >= s.corps[*mover].strength || (side == Side::Union && unscored(s, town) > 0);
            Answer::Vacate(if hold { None } else { preference(s, side, town, true, true).into_iter().find(|n| options.contains(n)) })
        }
        Question::Retreat { town, options, .. } => Answer::Retreat(preference(s, side, town, false, true).into_iter().find(|n| options.contains(n))),
        Question::FireOption { strength, divisor, defender_hits, .. } => Answer::Fire(choose_fire(s, *strength, *divisor, *defender_hits)),
        Question::CombatOrder { .. } | Question::Casualty { .. } => Answer::Default,
    };
    Decision { standing, answer }
}

/// A legal order for `side`'s pending question (empty when nothing is asked of it).
pub fn order(s: &State, side: Side, rng: Rng) -> Orders {
    let Some(q) = s.question.clone().filter(|q| q.sides().contains(&side)) else { return Orders::new() };
    let d = decide(s, side, &q, rng);
    let mut o = default_order(s, side);
    if let Some(st) = &d.standing {
        o.insert("standing".into(), Value::Table(st.to_table()));
    }
    match d.answer {
        Answer::Cards(sel) => {
            let army = s.scenario.army(side);
            o.insert("cards".into(), strs(&sel.iter().map(|(x, _)| army.cards[x.card].half(x.upper).to_string()).collect::<Vec<_>>()));
            o.remove(&army_key(&army.army_commander));
            let mut moves = toml::Table::new();
            for (x, p) in &sel {
                if rules::is_army_half(s, side, x.card, x.upper) {
                    o.insert(army_key(&army.army_commander), Value::String(s.corps[x.corps].id.clone()));
                }
                moves.insert(s.corps[x.corps].id.clone(), plan_value(p));
            }
            o.insert("moves".into(), Value::Table(moves));
        }
        Answer::Move(corps, plan) => {
            let mut moves = toml::Table::new();
            moves.insert(s.corps[corps].id.clone(), plan_value(&plan));
            o.insert("moves".into(), Value::Table(moves));
        }
        Answer::Vacate(Some(to)) => {
            o.insert("decision".into(), Value::String("vacate".into()));
            o.insert("vacate_to".into(), Value::String(to));
        }
        Answer::Retreat(Some(to)) => {
            o.insert("retreat_to".into(), Value::String(to));
        }
        Answer::Fire(n) => {
            o.insert("automatic_hits".into(), Value::Integer(n as i64));
        }
        Answer::Vacate(None) | Answer::Retreat(None) | Answer::Default => {}
    }
    o
}

/// [`order`] already checked: what [`crate::games::gettysburg_campaign::orders::parse`] reads
/// from it, built without writing it (`pbem simulate`). None when nothing is asked of `side`.
pub fn checked(s: &State, side: Side, rng: Rng) -> Option<Parsed> {
    let q = s.question.as_ref().filter(|q| q.sides().contains(&side))?;
    let d = decide(s, side, q, rng);
    let stored = s.standing.get(side);
    let (standing, standing_given) = match d.standing {
        Some(u) => (std::sync::Arc::new(u.apply(stored)), true),
        None => (stored.clone(), false),
    };
    let mut p = Parsed { commands: None, plans: BTreeMap::new(), standing, standing_given, direct: None };
    match (d.answer, q) {
        (Answer::Cards(sel), _) => {
            let cmds: Vec<Command> = sel.iter().map(|(x, _)| x.clone()).collect();
            p.plans = movable_plans(s, side, &cmds, sel.into_iter().map(|(x, route)| (x.corps, route)));
            p.commands = Some(cmds);
        }
        (Answer::Move(c, route), _) => {
            let commands = match s.stage {
                Stage::Movement { .. } => s.this_round.commands.get(side).clone(),
                _ => Vec::new(),
            };
            p.plans = movable_plans(s, side, &commands, [(c, route)]);
        }
        (Answer::Vacate(to), Question::VacateOrDefend { town, .. }) => {
            let choice = match to {
                Some(to) => VacateChoice::Vacate(s.in_town(side, town).into_iter().map(|c| (c, to.clone())).collect()),
                None => VacateChoice::Defend,
            };
            p.direct = Some(Direct::Vacate(choice));
        }
        (Answer::Retreat(to), Question::Retreat { corps, options, .. }) => {
            let to = to.unwrap_or_else(|| options[0].clone());
            p.direct = Some(Direct::Retreat(corps.iter().map(|&c| (c, to.clone())).collect()));
        }
        (Answer::Fire(n), _) => p.direct = Some(Direct::Fire(n)),
        (Answer::Default, Question::CombatOrder { towns }) => p.direct = Some(Direct::CombatOrder(towns.clone())),
        (Answer::Default, Question::Casualty { candidates, .. }) => p.direct = Some(Direct::Casualty(rules::weakest(s, candidates))),
        // [`decide`] answers the question asked: no other pair occurs.
        _ => {}
    }
    Some(p)
}

/// The planned routes by corps that the order's check keeps: those of corps that may still move
/// under `commands` ([`movable`]; "stay" for another is accepted and ignored).
fn movable_plans(s: &State, side: Side, commands: &[Command], routes: impl IntoIterator<Item = (usize, Vec<String>)>) -> BTreeMap<usize, Vec<String>> {
    let can = movable(s, side, commands);
    routes.into_iter().filter(|(c, _)| can.iter().any(|(x, _, _)| x == c)).collect()
}
