//! Location evidence: does the candidate edit the files or definitions the issue text (or
//! its stack trace) names? What the issue names is read by the one issue parser,
//! [`IssueRefs`] ([`IssueRefs::names_file`], [`IssueRefs::names_def`]).

use super::features::Features;
use crate::localize::issue::IssueRefs;
use crate::model::paths::is_test_path;

/// `(a non-test edited file is named, an edited definition is named)`.
pub fn location(f: &Features, refs: &IssueRefs) -> (bool, bool) {
    let file = f
        .files
        .iter()
        .any(|p| !is_test_path(p) && refs.names_file(p));
    let def = f
        .defs
        .iter()
        .any(|d| !is_test_path(d.split("::").next().unwrap_or(d)) && refs.names_def(d));
    (file, def)
}
