//! `dei generate`: the built-in candidate generator.

pub mod bm25;
pub mod diff;
pub mod edit;
pub mod llm;
pub mod localize;
pub mod schematic;
pub mod validate;
