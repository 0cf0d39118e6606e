//! `pbem`: a play-by-email turn processor with signed orders, hash commitments and a replayable audit.
//!
//! The core (everything outside [`games`]) never names a game; each game implements [`game::Game`].

pub mod audit;
pub mod cli;
pub mod commit;
pub mod console;
pub mod control;
pub mod demo;
pub mod dice;
pub mod due;
pub mod error;
pub mod game;
pub mod history;
pub mod games;
pub mod mail;
pub mod math;
pub mod memo;
pub mod model;
pub mod nonces;
pub mod options;
pub mod orderfile;
pub mod par;
pub mod picture;
pub mod pipeline;
pub mod progress;
pub mod public;
pub mod report;
pub mod sig;
pub mod simulate;
pub mod site;
pub mod store;
pub mod team;
pub mod template_value;
pub mod text;
pub mod when;
