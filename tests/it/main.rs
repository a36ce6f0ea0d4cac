//! All integration tests, in one binary (one link of git2, tree-sitter, tokio and reqwest
//! instead of one per file). Each module is one concern; `support` holds the shared helpers.

mod support;

mod agent_names;
mod context_build;
mod context_history;
mod context_real;
mod context_rerank;
mod eval_scores;
mod exec_env;
mod exec_env_real;
mod exec_evidence_real;
mod exec_llm_repro;
mod exec_rank;
mod exec_sandbox;
mod generate_cli;
mod generate_edit;
mod generate_strategies;
mod generate_validate;
mod hygiene;
mod input_problems;
mod layers;
mod library_quiet;
mod llm_cli;
mod llm_committee;
mod llm_exec;
mod llm_real;
mod llm_server;
mod locate_fuzz;
mod metrics_fixtures;
mod metrics_html;
mod metrics_labels;
mod metrics_real;
mod offline_signals;
mod patch_fuzz;
mod predictions;
mod rank_example;
mod real_requests;
mod scale_hostile;
mod scale_llm_resume;
mod scale_real;
mod scale_repo_cache;
mod scale_resume;
mod scale_shard;
mod trust_failures;
mod trust_reasons;
