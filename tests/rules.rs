//! Rule cases as data: every case of `tests/rules/<rules-id>.toml` names the rulebook section and
//! quotes the words it checks, sets up a position, resolves orders and checks what happened, all
//! through the game-agnostic [`DynGame`] (as the DATC cases are run from a file for Diplomacy).
//!
//! A file: `[defaults]` (merged into every case: `options`, `set`, `orders` for the asked roles a
//! case leaves out of its first step) and `[[case]]`s with
//! - `name`, `section` (the rulebook's section), `quote` (its words; with `PBEM_RULEBOOKS=DIR`
//!   set, checked to be in `DIR/<rules-id>.txt`, whitespace collapsed: the rulebooks are not
//!   shipped);
//! - `scenario` (a shipped scenario name), `options`;
//! - `set`: JSON pointers into the state (after setup) and their new values; a path segment
//!   `key[field=value,...]` picks the first element of the array `key` whose fields have those
//!   values (`/chars[name=Green]/at`, `/corps[side=union,id=II]/at`);
//! - `steps`: orders to resolve, one table per step, `role = "TOML orders"` (`"default"`: the game's
//!   default order); every order must pass the check;
//! - `expect`: `events` (each in the events of the steps, whitespace collapsed), `no_events`,
//!   `state` (pointer = value after the steps), `pending` (`"KIND ROLE, ..."` or `"over"`);
//! - `check`: orders checked at the end: `{ role, orders, error = "FIELD", contains = "text of the
//!   message" }` (without `error`: the orders must be legal); `default`: `{ role, orders }`, the default order.

use std::collections::BTreeMap;
use std::path::Path;

use pbem::dice::Ctx;
use pbem::game::{DynGame, Orders, Pending};
use serde::Deserialize;
use serde_json::Value as Json;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Defaults {
    #[serde(default)]
    options: BTreeMap<String, String>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
    #[serde(default)]
    orders: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Check {
    role: String,
    orders: String,
    error: Option<String>,
    #[serde(default)]
    contains: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultOrder {
    role: String,
    orders: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    no_events: Vec<String>,
    #[serde(default)]
    state: BTreeMap<String, toml::Value>,
    pending: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    section: String,
    quote: String,
    scenario: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, String>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
    #[serde(default)]
    steps: Vec<BTreeMap<String, String>>,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    check: Vec<Check>,
    #[serde(default)]
    default: Vec<DefaultOrder>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Defaults,
    case: Vec<Case>,
}

/// Whitespace collapsed, so wrapped report lines still match.
fn flat(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The value at `path` (JSON pointer with `key[field=value]` segments), created if missing.
fn at<'a>(v: &'a mut Json, path: &str) -> Result<&'a mut Json, String> {
    let mut cur = v;
    for seg in path.split('/').skip(1) {
        let (key, pick) = match seg.split_once('[') {
            Some((k, rest)) => (k, Some(rest.trim_end_matches(']'))),
            None => (seg, None),
        };
        cur = match cur {
            Json::Array(a) => a.get_mut(key.parse::<usize>().map_err(|_| format!("{path}: {key} is not an index"))?).ok_or(format!("{path}: no {key}"))?,
            Json::Object(o) => o.entry(key.to_string()).or_insert(Json::Null),
            _ => return Err(format!("{path}: {key} is not inside an object or array")),
        };
        if let Some(p) = pick {
            let mut conds = Vec::new();
            for c in p.split(',') {
                conds.push(c.split_once('=').ok_or(format!("{path}: [{p}] is not field=value[,field=value]"))?);
            }
            let arr = cur.as_array_mut().ok_or(format!("{path}: {key} is not an array"))?;
            let fits = |e: &Json| conds.iter().all(|(f, want)| e.get(*f).and_then(Json::as_str) == Some(*want));
            cur = arr.iter_mut().find(|e| fits(e)).ok_or(format!("{path}: no {key} with {p}"))?;
        }
    }
    Ok(cur)
}

fn orders(text: &str) -> Result<Orders, String> {
    toml::from_str(text).map_err(|e| format!("orders {text:?}: {e}"))
}

fn pending_text(p: &Pending) -> String {
    match p {
        Pending::Over(_) => "over".into(),
        Pending::Orders(asks) => asks.iter().map(|a| format!("{} {}", a.kind, a.role)).collect::<Vec<_>>().join(", "),
    }
}

/// Runs one case; `Err` says what differs.
fn run(game: &dyn DynGame, rulebook: &str, defaults: &Defaults, c: &Case) -> Result<(), String> {
    let e = &c.expect;
    if e.events.is_empty() && e.no_events.is_empty() && e.state.is_empty() && e.pending.is_none() && c.check.is_empty() && c.default.is_empty() {
        return Err("the case checks nothing".into());
    }
    if c.quote.trim().is_empty() || c.section.trim().is_empty() {
        return Err("a case names its section and quotes the rulebook".into());
    }
    if !rulebook.is_empty() && !flat(rulebook).contains(&flat(&c.quote)) {
        return Err(format!("the quote is not in the rulebook: {:?}", c.quote));
    }
    let scenario = match &c.scenario {
        None => game.default_scenario(),
        Some(n) => game.scenarios().iter().find(|x| x.0 == n).ok_or(format!("no scenario {n}"))?.1,
    };
    let mut options = defaults.options.clone();
    options.extend(c.options.clone());
    let mut state: Json = serde_json::from_str(&game.setup(scenario, &options).map_err(|e| format!("setup: {e}"))?).expect("state is JSON");
    let mut set = defaults.set.clone();
    set.extend(c.set.clone());
    for (path, v) in &set {
        *at(&mut state, path)? = serde_json::to_value(v).expect("TOML to JSON");
    }
    let mut text = serde_json::to_string_pretty(&state).expect("JSON");
    let mut events = Vec::new();
    for (k, step) in c.steps.iter().enumerate() {
        let mut step = step.clone();
        if k == 0 {
            let asked = match game.pending(&text).map_err(|e| e.to_string())? {
                Pending::Orders(asks) => asks.into_iter().map(|a| a.role).collect(),
                Pending::Over(_) => Vec::new(),
            };
            for (r, o) in defaults.orders.iter().filter(|(r, _)| asked.contains(r)) {
                step.entry(r.clone()).or_insert(o.clone());
            }
        }
        let mut map = BTreeMap::new();
        for (role, o) in &step {
            let o = if o == "default" { game.default_order(&text, role).map_err(|e| e.to_string())? } else { orders(o)? };
            if let Err(p) = game.check_order(&text, role, &o).map_err(|e| e.to_string())? {
                return Err(format!("step {}: {role}'s orders are refused: {p:?}", k + 1));
            }
            map.insert(role.clone(), o);
        }
        let mut ctx = Ctx::new([0; 32]);
        text = game.resolve(&text, &map, &mut ctx).map_err(|e| format!("step {}: {e}", k + 1))?;
        events.extend(ctx.events().iter().map(|e| e.text.clone()));
    }
    let all = flat(&events.join("\n"));
    for e in &c.expect.events {
        if !all.contains(&flat(e)) {
            return Err(format!("no event {e:?} in:\n{}", events.join("\n")));
        }
    }
    for e in &c.expect.no_events {
        if all.contains(&flat(e)) {
            return Err(format!("an event {e:?} in:\n{}", events.join("\n")));
        }
    }
    let mut after: Json = serde_json::from_str(&text).expect("state is JSON");
    for (path, want) in &c.expect.state {
        let want = serde_json::to_value(want).expect("TOML to JSON");
        let got = at(&mut after, path)?.clone();
        if got != want {
            return Err(format!("{path} is {got}, expected {want}; events:\n{}", events.join("\n")));
        }
    }
    if let Some(want) = &c.expect.pending {
        let got = pending_text(&game.pending(&text).map_err(|e| e.to_string())?);
        if &got != want {
            return Err(format!("pending is {got:?}, expected {want:?}"));
        }
    }
    for ch in &c.check {
        let got = game.check_order(&text, &ch.role, &orders(&ch.orders)?).map_err(|e| e.to_string())?;
        match (got, ch.error.as_deref()) {
            (Ok(()), None) => {}
            (Ok(()), Some(f)) => return Err(format!("{:?} of {} passes the check; expected an error on {f:?}", ch.orders, ch.role)),
            (Err(p), Some(f)) if p.iter().any(|x| x.field == f && x.message.contains(&ch.contains)) => {}
            (Err(p), f) => return Err(format!("{:?} of {}: expected {f:?} with {:?}, got {p:?}", ch.orders, ch.role, ch.contains)),
        }
    }
    for d in &c.default {
        let got = game.default_order(&text, &d.role).map_err(|e| e.to_string())?;
        if got != orders(&d.orders)? {
            return Err(format!("the default order of {} is {got:?}", d.role));
        }
    }
    Ok(())
}

/// Every case of every game with a file in `tests/rules/`.
#[test]
fn rule_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let mut n = 0;
    for game in pbem::games::ALL {
        let path = dir.join("tests/rules").join(format!("{}.toml", game.rules()));
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let file: File = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rulebook = match std::env::var_os("PBEM_RULEBOOKS") {
            Some(d) => std::fs::read_to_string(Path::new(&d).join(format!("{}.txt", game.rules()))).unwrap_or_else(|e| panic!("PBEM_RULEBOOKS: {e}")),
            None => String::new(),
        };
        for c in &file.case {
            n += 1;
            if let Err(e) = run(*game, &rulebook, &file.defaults, c) {
                failures.push(format!("{} case {:?} ({}): {e}", path.display(), c.name, c.section));
            }
        }
    }
    assert!(n > 0, "no rule cases found");
    assert!(failures.is_empty(), "{} of {n} rule cases fail:\n\n{}", failures.len(), failures.join("\n\n"));
}
