//! Players' text reports: one template environment (embedded `templates/`, overridable from a
//! folder) and the one function that builds what a role may see after a record.

use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::game::DynGame;
use crate::model::{GameFile, Opening, Record};
use crate::orderfile::{self, Header};

/// A template environment: the embedded templates, each replaced by a file of the same relative
/// name in `override_dir` when given. Undefined variables are errors (strict).
pub fn environment(override_dir: Option<&Path>) -> Result<Environment<'static>> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("valid syntax config"),
    );
    minijinja_embed::load_templates!(&mut env);
    if let Some(dir) = override_dir {
        add_dir(&mut env, dir, dir)?;
    }
    Ok(env)
}

fn add_dir(env: &mut Environment<'static>, base: &Path, dir: &Path) -> Result<()> {
    for name in crate::store::list(dir)? {
        let path = dir.join(&name);
        if path.is_dir() {
            add_dir(env, base, &path)?;
        } else if name.ends_with(".txt") {
            let rel = path.strip_prefix(base).expect("under base").to_string_lossy().replace('\\', "/");
            let src = crate::store::read_text(&path)?;
            env.add_template_owned(rel, src).map_err(|e| Error::input(&path, e.to_string()))?;
        }
    }
    Ok(())
}

/// The order form for `role` in the step `opening` asks, with `nonce` (empty in reports).
/// Comments: the prompt, the game's help on legal choices; body: the game's default (legal) order.
pub fn order_form(game: &dyn DynGame, gf: &GameFile, opening: &Opening, state: &str, role: &str, nonce: &str) -> Result<Option<String>> {
    let Some(ask) = opening.asks.iter().find(|a| a.role == role) else { return Ok(None) };
    let mut comments = vec![
        format!("{}: order form for {role}, step {} ({})", game.title(), opening.step, ask.kind),
        format!("Deadline: {}", opening.deadline),
        String::new(),
    ];
    comments.extend(ask.prompt.lines().map(str::to_string));
    comments.push(String::new());
    comments.extend(game.form_help(state, role)?);
    comments.push(String::new());
    comments.push("Leave [pbem] as it is. `pbem sign` puts fresh randomness of your own".into());
    comments.push("in the nonce; signing with ssh-keygen instead, put your own 64 random".into());
    comments.push("hex digits there (openssl rand -hex 32).".into());
    let header = Header {
        game: gf.id.clone(),
        step: opening.step,
        role: role.to_string(),
        host_seed_commitment: opening.host_seed_commitment.clone(),
        nonce: nonce.to_string(),
    };
    let orders = game.default_order(state, role)?;
    Ok(Some(orderfile::form_text(&header, &comments, &orders)))
}

#[derive(Serialize)]
struct ReceiptLine {
    role: String,
    seq: Option<u64>,
    commitment: Option<String>,
}

/// Renders `role`'s report after `record`, from the state after it and the step's full event list
/// (`events`: the record holds only the public ones; the others come from resolving or replaying
/// the step). Deterministic: the form inside has an empty nonce.
pub fn render(
    env: &Environment<'_>,
    game: &dyn DynGame,
    gf: &GameFile,
    record: &Record,
    events: &[crate::dice::Event],
    state: &str,
    role: &str,
) -> Result<String> {
    let view = game.view(state, role)?;
    let events: Vec<String> = events
        .iter()
        .filter(|e| e.visible_to(role))
        .map(|e| e.text.clone())
        .collect();
    let receipts: Vec<ReceiptLine> = record
        .resolution
        .iter()
        .flat_map(|r| r.orders.iter())
        .map(|o| ReceiptLine { role: o.role.clone(), seq: o.seq, commitment: o.commitment.clone() })
        .collect();
    let form = match &record.opening {
        Some(op) => order_form(game, gf, op, state, role, "")?,
        None => None,
    };
    use minijinja::Value;
    let ctx = minijinja::context! {
        title => game.title(),
        rules => game.rules(),
        game => &gf.id,
        role => role,
        index => record.index,
        resolution => record.resolution.as_ref().map(|r| minijinja::context! {
            step => r.step, resolved => &r.resolved, host_seed => &r.host_seed, seed => &r.seed,
        }),
        events => events,
        receipts => Value::from(minijinja::value::Serde(receipts)),
        view => Value::from(minijinja::value::Serde(view)),
        opening => Value::from(minijinja::value::Serde(&record.opening)),
        outcome => Value::from(minijinja::value::Serde(&record.outcome)),
        form => form,
    };
    let tmpl = env.get_template("report.txt").map_err(|e| Error::Usage(format!("template: {e}")))?;
    tmpl.render(ctx).map_err(|e| Error::Usage(format!("report template for {}: {e:#}", game.rules())))
}

static OVERRIDE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// Sets the process-wide template override folder (the CLI's `--templates`), once.
pub fn set_override(dir: Option<std::path::PathBuf>) {
    let _ = OVERRIDE.set(dir);
}

/// The override folder set by [`set_override`], if any.
pub fn override_dir() -> Option<&'static Path> {
    OVERRIDE.get().and_then(|o| o.as_deref())
}
