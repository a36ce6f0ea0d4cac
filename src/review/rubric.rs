//! Rubrics: which mistakes cost a candidate how much, as a Markdown file shown to the model.
//!
//! A rubric is free text plus items, one a line, `- severe: ...`, `- major: ...` or
//! `- minor: ...`. The default one ships in `rubrics/default.md`; `--rubric FILE` picks another.

use anyhow::{bail, Context as _};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The rubric shipped with dei.
pub const DEFAULT: &str = include_str!("../../rubrics/default.md");

/// How much a mistake costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Severe,
    Major,
    Minor,
}

impl Severity {
    fn parse(s: &str) -> Option<Severity> {
        match s.trim().to_ascii_lowercase().as_str() {
            "severe" | "critical" => Some(Severity::Severe),
            "major" | "moderate" => Some(Severity::Major),
            "minor" => Some(Severity::Minor),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub severity: Severity,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rubric {
    /// Where it came from (`<default>` for the built-in one).
    pub source: PathBuf,
    /// The whole file, as the model reads it.
    pub text: String,
    pub items: Vec<Item>,
}

impl Rubric {
    pub fn default_rubric() -> Rubric {
        Rubric::parse(DEFAULT, Path::new("<default>")).expect("the built-in rubric parses")
    }

    pub fn load(path: &Path) -> anyhow::Result<Rubric> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read rubric {}", path.display()))?;
        Rubric::parse(&text, path)
    }

    /// Parse rubric text; `source` names it in errors.
    pub fn parse(text: &str, source: &Path) -> anyhow::Result<Rubric> {
        let mut items = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("- ") else {
                continue;
            };
            let Some((word, what)) = rest.split_once(':') else {
                continue;
            };
            if word.contains(' ') || word.is_empty() {
                continue;
            }
            match Severity::parse(word) {
                Some(severity) if !what.trim().is_empty() => items.push(Item { severity, text: what.trim().to_string() }),
                Some(_) => bail!("{}:{}: rubric item `{}` says nothing after the colon", source.display(), i + 1, word),
                None => bail!(
                    "{}:{}: unknown severity `{}`; write `- severe: ...`, `- major: ...` or `- minor: ...`",
                    source.display(),
                    i + 1,
                    word
                ),
            }
        }
        if items.is_empty() {
            bail!(
                "{}: the rubric has no items; add lines like `- severe: edits the wrong place` (see rubrics/default.md)",
                source.display()
            );
        }
        Ok(Rubric {
            source: source.to_path_buf(),
            text: text.trim().to_string(),
            items,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rubric_has_all_severities() {
        let r = Rubric::default_rubric();
        for s in [Severity::Severe, Severity::Major, Severity::Minor] {
            assert!(r.items.iter().any(|i| i.severity == s), "{s:?}");
        }
        assert!(r
            .items
            .iter()
            .any(|i| i.severity == Severity::Severe && i.text.contains("wrong place")));
    }

    #[test]
    fn bad_severity_names_the_line() {
        let e = Rubric::parse("# r\n\n- awful: x\n", Path::new("r.md"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.md:3") && e.contains("awful"), "{e}");
        assert!(Rubric::parse("nothing here\n", Path::new("r.md")).is_err());
    }
}
