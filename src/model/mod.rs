//! The bottom layer: the types every stage shares ([`types`], re-exported here), the issue
//! ([`task`]) and the repository it is fixed in ([`repo`], read from git objects).
//! Nothing here imports another part of the crate.

mod behaviour;
pub mod notify;
pub mod paths;
pub mod repo;
pub mod task;
mod types;

pub use behaviour::{Behaviour, Counted, ExpectedShown, ModelTest, ReproChange, WrittenTally};
pub use types::*;
