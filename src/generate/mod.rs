//! `dei generate`: the built-in candidate generator.

pub mod llm;
pub mod schematic;
