//! Ranking: the pipeline for one issue ([`pipeline`]: candidates → rebuild → context →
//! review → order), the order itself ([`select`]), how each candidate ran and what the pick
//! rests on ([`health`]), what people and programs read ([`report`]), and whole benchmarks in
//! resumable, sharded runs ([`run`]).

pub mod health;
pub mod pipeline;
pub mod predictions;
pub mod report;
pub mod run;
pub mod select;
