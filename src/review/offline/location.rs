//! Location evidence: does the candidate edit the files or definitions the issue text (or
//! its stack trace) names?

use super::features::Features;
use crate::model::paths::is_test_path;
use std::collections::HashSet;

/// What an issue names, prepared once per issue.
#[derive(Debug, Clone, Default)]
pub struct Mentions {
    text: String,
    idents: HashSet<String>,
}

impl Mentions {
    pub fn new(problem_statement: &str) -> Mentions {
        let idents = problem_statement
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 3)
            .map(str::to_string)
            .collect();
        Mentions {
            text: problem_statement.to_string(),
            idents,
        }
    }

    /// The file is named: its path (also inside a traceback's absolute path), its dotted
    /// module name, or its file name (not for generic names like `__init__.py`).
    pub fn names_file(&self, path: &str) -> bool {
        if path.is_empty() {
            return false;
        }
        if self.text.contains(path) {
            return true;
        }
        let no_ext = path.strip_suffix(".py").unwrap_or(path);
        let dotted = no_ext.replace('/', ".");
        let dotted = dotted.strip_suffix(".__init__").unwrap_or(&dotted);
        if dotted.contains('.') && self.text.contains(dotted) {
            return true;
        }
        let base = path.rsplit('/').next().unwrap_or(path);
        let generic = matches!(
            base,
            "__init__.py" | "utils.py" | "setup.py" | "conftest.py"
        );
        !generic && base.contains('.') && self.idents_or_text(base)
    }

    fn idents_or_text(&self, base: &str) -> bool {
        // A file name with an extension: match on a word boundary in the text.
        self.text.match_indices(base).any(|(pos, _)| {
            let before = self.text[..pos].chars().next_back();
            let after = self.text[pos + base.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    }

    /// The definition is named: the last part of `path::Class.method` appears as a word
    /// (module-level edits, dunder methods and names under 3 characters never count).
    pub fn names_def(&self, qualified: &str) -> bool {
        let def = qualified.rsplit("::").next().unwrap_or(qualified);
        let short = def.rsplit('.').next().unwrap_or(def);
        let dunder = short.starts_with("__") && short.ends_with("__");
        !short.starts_with('<') && !dunder && self.idents.contains(short)
    }
}

/// `(a non-test edited file is named, an edited definition is named)`.
pub fn location(f: &Features, m: &Mentions) -> (bool, bool) {
    let file = f.files.iter().any(|p| !is_test_path(p) && m.names_file(p));
    let def = f
        .defs
        .iter()
        .any(|d| !is_test_path(d.split("::").next().unwrap_or(d)) && m.names_def(d));
    (file, def)
}
