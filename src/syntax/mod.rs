//! Tree-sitter views of Python code: definitions and their spans ([`python`]), and the
//! schematics (classes, signatures, docstrings) that outline a file ([`schematic`]).
//! Imports only [`crate::model`].

pub mod python;
pub mod schematic;
