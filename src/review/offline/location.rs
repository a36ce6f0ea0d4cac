//! Location evidence: does the candidate edit the files or definitions the issue text (or
//! its stack trace) names? What the issue names is read by the one issue parser,
//! [`IssueRefs`] ([`IssueRefs::names_file`], [`IssueRefs::names_def`]).
//!
//! A definition counts only inside a file the issue names too. A definition is matched by its
//! short name against every word of the issue, and short names recur across a code base
//! (`doit`, `eval`, `refine`, `sign`): the word alone does not say which definition the reporter
//! means, while the file it is named with does.

use super::features::Features;
use crate::localize::issue::IssueRefs;
use crate::model::paths::is_test_path;

/// `(a non-test edited file is named, an edited definition is named in a file that is named)`.
pub fn location(f: &Features, refs: &IssueRefs) -> (bool, bool) {
    let named = |p: &str| !is_test_path(p) && refs.names_file(p);
    let file = f.files.iter().any(|p| named(p));
    let def = f.defs.iter().any(|d| {
        let path = d.split("::").next().unwrap_or(d);
        named(path) && refs.names_def(d)
    });
    (file, def)
}
