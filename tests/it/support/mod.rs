//! Helpers shared by the integration tests.

pub mod common;
pub mod exec;
pub mod llm_mock;
pub mod scale_util;
