//! Prompt templates (minijinja): the default set lives in `prompts/` and is built into the
//! binary; `--prompt-dir DIR` replaces any of its files with the file of the same name in DIR.
//! Each stage renders its own templates (`review::prompts`: `system.j2`, `candidate.j2`, `reproduction.j2`,
//! `pointwise.j2`, `listwise.j2`, `pairwise.j2`; `localize::rerank`: `localize_system.j2`,
//! `localize_files.j2`, `localize_functions.j2`; the generator: the set [`GENERATE`], loaded
//! with [`Prompts::generator`]; `exec::llm_repro`: the set [`REPRO_TEST`], loaded with
//! [`Prompts::repro_test`]).

use super::Rendered;
use anyhow::{anyhow, Context as _};
use minijinja::{Environment, UndefinedBehavior};
use std::path::Path;

/// The built-in templates, by file name.
pub const DEFAULTS: [(&str, &str); 9] = [
    ("system.j2", include_str!("../../prompts/system.j2")),
    ("candidate.j2", include_str!("../../prompts/candidate.j2")),
    (
        "reproduction.j2",
        include_str!("../../prompts/reproduction.j2"),
    ),
    ("pointwise.j2", include_str!("../../prompts/pointwise.j2")),
    ("listwise.j2", include_str!("../../prompts/listwise.j2")),
    ("pairwise.j2", include_str!("../../prompts/pairwise.j2")),
    (
        "localize_system.j2",
        include_str!("../../prompts/localize_system.j2"),
    ),
    (
        "localize_files.j2",
        include_str!("../../prompts/localize_files.j2"),
    ),
    (
        "localize_functions.j2",
        include_str!("../../prompts/localize_functions.j2"),
    ),
];

/// The generator's templates (`crate::generate`), by file name: a set of their own, so that the
/// committee's prompt digest does not move when they change.
pub const GENERATE: [(&str, &str); 11] = [
    (
        "generate_system.j2",
        include_str!("../../prompts/generate_system.j2"),
    ),
    (
        "generate_issue.j2",
        include_str!("../../prompts/generate_issue.j2"),
    ),
    (
        "generate_edit_format.j2",
        include_str!("../../prompts/generate_edit_format.j2"),
    ),
    (
        "generate_files.j2",
        include_str!("../../prompts/generate_files.j2"),
    ),
    (
        "generate_targets.j2",
        include_str!("../../prompts/generate_targets.j2"),
    ),
    (
        "generate_rewrite.j2",
        include_str!("../../prompts/generate_rewrite.j2"),
    ),
    (
        "generate_rewrite_retry.j2",
        include_str!("../../prompts/generate_rewrite_retry.j2"),
    ),
    (
        "generate_search_replace.j2",
        include_str!("../../prompts/generate_search_replace.j2"),
    ),
    (
        "generate_edits_retry.j2",
        include_str!("../../prompts/generate_edits_retry.j2"),
    ),
    (
        "generate_explore.j2",
        include_str!("../../prompts/generate_explore.j2"),
    ),
    (
        "generate_fix.j2",
        include_str!("../../prompts/generate_fix.j2"),
    ),
];

/// The templates of the reproduction test a model writes for `dei rank --exec-llm-repro`
/// (`crate::exec::llm_repro`), by file name: a set of their own, so that the committee's prompt
/// digest does not move when they change.
pub const REPRO_TEST: [(&str, &str); 2] = [
    (
        "repro_test_system.j2",
        include_str!("../../prompts/repro_test_system.j2"),
    ),
    ("repro_test.j2", include_str!("../../prompts/repro_test.j2")),
];

/// The loaded template set.
#[derive(Debug, Clone)]
pub struct Prompts {
    env: Environment<'static>,
    /// Where overrides came from, if anywhere.
    pub dir: Option<std::path::PathBuf>,
    /// SHA-256 of every template's text, in name order: two runs with the same digest asked
    /// with the same prompts.
    pub digest: String,
}

impl Prompts {
    /// The built-in set, with any file in `dir` replacing the built-in one of the same name.
    pub fn load(dir: Option<&Path>) -> anyhow::Result<Prompts> {
        Prompts::load_set(dir, &DEFAULTS)
    }

    /// The generator's set ([`GENERATE`]), with any file in `dir` replacing the built-in one.
    pub fn generator(dir: Option<&Path>) -> anyhow::Result<Prompts> {
        Prompts::load_set(dir, &GENERATE)
    }

    /// The reproduction test's set ([`REPRO_TEST`]), with any file in `dir` replacing the
    /// built-in one.
    pub fn repro_test(dir: Option<&Path>) -> anyhow::Result<Prompts> {
        Prompts::load_set(dir, &REPRO_TEST)
    }

    fn load_set(
        dir: Option<&Path>,
        set: &'static [(&'static str, &'static str)],
    ) -> anyhow::Result<Prompts> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        env.set_keep_trailing_newline(true);
        if let Some(d) = dir {
            if !d.is_dir() {
                anyhow::bail!("--prompt-dir {} is not a folder (expected files like pointwise.j2, see prompts/)", d.display());
            }
        }
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        for &(name, text) in set {
            let over = dir.map(|d| d.join(name)).filter(|p| p.is_file());
            let (src, from) = match &over {
                Some(p) => (
                    std::fs::read_to_string(p)
                        .with_context(|| format!("cannot read {}", p.display()))?,
                    p.display().to_string(),
                ),
                None => (text.to_string(), format!("built-in prompts/{name}")),
            };
            sha2::Digest::update(&mut hasher, name.as_bytes());
            sha2::Digest::update(&mut hasher, [0u8]);
            sha2::Digest::update(&mut hasher, src.as_bytes());
            sha2::Digest::update(&mut hasher, [0u8]);
            env.add_template_owned(name, src)
                .map_err(|e| anyhow!("template {from}: {e}"))?;
        }
        let digest = sha2::Digest::finalize(hasher)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Prompts {
            env,
            dir: dir.map(Path::to_path_buf),
            digest,
        })
    }

    /// Render template `name` with the committee's system prompt (`system.j2`).
    pub fn render(&self, name: &str, ctx: minijinja::Value) -> anyhow::Result<Rendered> {
        self.render_with(name, "system.j2", ctx)
    }

    /// Render template `name` with the system prompt `system`.
    pub fn render_with(
        &self,
        name: &str,
        system: &str,
        ctx: minijinja::Value,
    ) -> anyhow::Result<Rendered> {
        let place = |n: &str| match &self.dir {
            Some(d) if d.join(n).is_file() => d.join(n).display().to_string(),
            _ => format!("built-in prompts/{n}"),
        };
        let t = self.env.get_template(name)?;
        let user = t
            .render(&ctx)
            .map_err(|e| anyhow!("cannot render {}: {e:#}", place(name)))?;
        let system = self
            .env
            .get_template(system)?
            .render(&ctx)
            .map_err(|e| anyhow!("cannot render {}: {e:#}", place(system)))?;
        Ok(Rendered {
            system: system.trim().to_string(),
            user: user.trim().to_string(),
        })
    }
}
