//! The localizer's evidence, as two tables of signals: [`FILE`] (one value per repository
//! file) and [`FUNCTION`] (one value per definition of the best files). A signal is a row: its
//! name, what it measures, and the function that computes its column; its weight is the entry
//! of that name in `weights.json` ([`Weights`]). Adding a signal is adding a row (and its
//! weight); the names, the weight vectors and the JSON form follow from the tables.
//!
//! A file's score is the weighted sum of its row ([`FileSignals::scores`]; tests, docs and
//! examples are then multiplied by `test_factor`), a definition's likewise ([`dot`]).

mod file;
mod function;

use super::index::FileIndex;
use super::search::{FileHit, FuncHit, LocateOptions};
#[cfg(doc)]
use super::weights::Weights;
use crate::model::paths::is_auxiliary;

/// One file-level signal.
pub struct FileSignal {
    /// Its name, and the name of its weight.
    pub name: &'static str,
    /// What it measures (normalised to 0..1 unless said).
    pub about: &'static str,
    /// Computed even when its weight is 0, before the other signals (which may read it): it
    /// is cheap, and its evidence is reported with every file.
    pub always: bool,
    /// Fill column `k` of the signals (and the evidence notes).
    compute: fn(&file::Input, &mut FileSignals, usize),
}

/// One function-level signal.
pub struct FunctionSignal {
    /// Its name, and the name of its weight.
    pub name: &'static str,
    /// What it measures (normalised to 0..1 unless said).
    pub about: &'static str,
    /// Fill column `k` of the signals.
    compute: fn(&function::Input, &mut FunctionSignals, usize),
}

/// The file-level signals.
pub const FILE: &[FileSignal] = &[
    FileSignal {
        name: "bm25",
        about: "BM25 of the issue's terms over the file's identifiers (title words count `title` \
                times, `<details>` dumps `details`, adjacent words joined `compound`), \
                normalised to the best file",
        always: true,
        compute: file::bm25,
    },
    FileSignal {
        name: "path_bm25",
        about: "BM25 of the issue over the file's path alone, normalised",
        always: true,
        compute: file::path_bm25,
    },
    FileSignal {
        name: "def_mention",
        about: "definitions the issue names, each by its inverse file frequency",
        always: true,
        compute: file::def_mention,
    },
    FileSignal {
        name: "path_mention",
        about: "the file's path named in the issue",
        always: true,
        compute: file::path_mention,
    },
    FileSignal {
        name: "module_mention",
        about: "the file's dotted module named in the issue",
        always: true,
        compute: file::module_mention,
    },
    FileSignal {
        name: "frame",
        about: "a traceback frame in the file (the innermost repository frame counts fully)",
        always: true,
        compute: file::frame,
    },
    FileSignal {
        name: "code_line",
        about: "code lines quoted in the issue that the file holds, by rarity (saturating)",
        always: false,
        compute: file::code_line,
    },
    FileSignal {
        name: "history",
        about: "files changed by past commits whose messages resemble the issue (needs the \
                history: `FileIndex::with_history`)",
        always: false,
        compute: file::history,
    },
    FileSignal {
        name: "test_link",
        about: "the best BM25 of the test files that test this file (`tests/test_mod.py` → \
                `mod.py`): tests hold usage much like the issue's examples",
        always: false,
        compute: file::test_link,
    },
    FileSignal {
        name: "churn",
        about: "how often past commits changed the file (log-scaled): files fixed often are \
                fixed again (needs the history)",
        always: false,
        compute: file::churn,
    },
    FileSignal {
        name: "chunk_bm25",
        about: "the best BM25 of the issue over one definition of the file (a `def`/`class` \
                chunk), normalised to the best file: one matching function in a large file is \
                not diluted",
        always: false,
        compute: file::chunk_bm25,
    },
    FileSignal {
        name: "import_neighbour",
        about: "imported by a file the issue points at explicitly (a definition it names, its \
                path or module, a traceback frame): that evidence times this file's `bm25`; \
                the fix often lies in what the named entry point calls",
        always: false,
        compute: file::import_neighbour,
    },
    FileSignal {
        name: "title_bm25",
        about: "BM25 of the issue's title alone over the file, normalised: the title names the \
                problem in a few words, which a long body dilutes",
        always: false,
        compute: file::title_bm25,
    },
];

/// The function-level signals.
pub const FUNCTION: &[FunctionSignal] = &[
    FunctionSignal {
        name: "fn_bm25",
        about: "BM25 of the issue over the definition's own code, name and docstring, normalised",
        compute: function::bm25,
    },
    FunctionSignal {
        name: "fn_file",
        about: "its file's score, relative to the best file's",
        compute: function::file,
    },
    FunctionSignal {
        name: "fn_code_line",
        about: "code lines quoted in the issue that the definition holds (saturating)",
        compute: function::code_line,
    },
    FunctionSignal {
        name: "fn_class_mention",
        about: "the issue names the definition's class (`PolyFit` for `PolyFit.__call__`)",
        compute: function::class_mention,
    },
    FunctionSignal {
        name: "fn_mention",
        about: "the issue names the definition",
        compute: function::mention,
    },
    FunctionSignal {
        name: "fn_part_mention",
        about: "otherwise, a class the issue names is a part of its name (`_print_Sum`)",
        compute: function::part_mention,
    },
    FunctionSignal {
        name: "fn_frame",
        about: "a traceback frame inside the definition (the innermost counts fully)",
        compute: function::frame,
    },
    FunctionSignal {
        name: "fn_uses_mention",
        about: "identifiers the issue names that the definition's own code uses, each by its \
                rarity among the ranked definitions, normalised",
        compute: function::uses_mention,
    },
    FunctionSignal {
        name: "fn_class",
        about: "the definition is a class (its own lines: header, docstring, attributes); a fix \
                edits methods far more often, so its weight is usually negative",
        compute: function::class,
    },
    FunctionSignal {
        name: "fn_name_match",
        about: "how much of the definition's own name the issue's words cover, each name part \
                by its rarity among the ranked names, compared by English stem (`__iter__` ← \
                \"iterating\")",
        compute: function::name_match,
    },
    FunctionSignal {
        name: "fn_title_bm25",
        about: "BM25 of the issue's title alone over the definition, normalised",
        compute: function::title_bm25,
    },
];

/// How many file-level signals there are.
pub const FILE_SIGNALS: usize = FILE.len();
/// How many function-level signals there are.
pub const FUNCTION_SIGNALS: usize = FUNCTION.len();

/// The names of [`FILE`], in its order.
pub const FILE_NAMES: [&str; FILE_SIGNALS] = {
    let mut out = [""; FILE_SIGNALS];
    let mut k = 0;
    while k < FILE_SIGNALS {
        out[k] = FILE[k].name;
        k += 1;
    }
    out
};

/// The names of [`FUNCTION`], in its order.
pub const FUNCTION_NAMES: [&str; FUNCTION_SIGNALS] = {
    let mut out = [""; FUNCTION_SIGNALS];
    let mut k = 0;
    while k < FUNCTION_SIGNALS {
        out[k] = FUNCTION[k].name;
        k += 1;
    }
    out
};

/// The column of the signal named `name` (at compile time: a wrong name does not build).
const fn slot(names: &[&str], name: &str) -> usize {
    let mut k = 0;
    while k < names.len() {
        let (a, b) = (names[k].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut i = 0;
            while i < a.len() && a[i] == b[i] {
                i += 1;
            }
            if i == a.len() {
                return k;
            }
        }
        k += 1;
    }
    panic!("no signal of that name")
}

/// A row of signals weighted: the sum of `x[k] * w[k]`.
pub fn dot<const N: usize>(x: &[f64; N], w: &[f64; N]) -> f64 {
    x.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// The file-level evidence for one issue, before weighting: one row per repository file.
#[derive(Debug, Clone, Default)]
pub struct FileSignals {
    /// Per file, the signals in [`FILE`] order.
    pub x: Vec<[f64; FILE_SIGNALS]>,
    /// Tests, docs, examples ([`is_auxiliary`]): their score is multiplied by `test_factor`.
    pub aux: Vec<bool>,
    /// Per file, the evidence for reports ("traceback frame", "defines `x`", …).
    pub why: Vec<Vec<String>>,
}

impl FileSignals {
    /// Weighted scores of every file.
    pub fn scores(&self, w: &[f64; FILE_SIGNALS], test_factor: f64) -> Vec<f64> {
        self.x
            .iter()
            .zip(&self.aux)
            .map(|(x, &aux)| {
                let s = dot(x, w);
                if aux {
                    s * test_factor
                } else {
                    s
                }
            })
            .collect()
    }
}

/// The function-level evidence for one issue, before weighting: one row per definition of
/// the best files.
#[derive(Debug, Clone, Default)]
pub struct FunctionSignals {
    /// The definitions, scores not yet set.
    pub hits: Vec<FuncHit>,
    /// Per definition, the signals in [`FUNCTION`] order.
    pub x: Vec<[f64; FUNCTION_SIGNALS]>,
}

/// Every file's signals for an issue: first those computed always, then the others for which
/// `need(k)` is true (the rest are left 0), each in table order.
pub fn file_signals(
    issue: &str,
    repo: &FileIndex,
    opts: &LocateOptions,
    need: impl Fn(usize) -> bool,
) -> FileSignals {
    let input = file::Input::new(issue, repo, opts);
    let n = repo.files.len();
    let mut s = FileSignals {
        x: vec![[0.0f64; FILE_SIGNALS]; n],
        aux: repo.files.iter().map(|f| is_auxiliary(&f.path)).collect(),
        why: vec![Vec::new(); n],
    };
    for always in [true, false] {
        for (k, sig) in FILE.iter().enumerate() {
            if sig.always == always && (always || need(k)) {
                (sig.compute)(&input, &mut s, k);
            }
        }
    }
    s
}

/// Every definition of the first `opts.function_files` files, with its signals; `need(k)`
/// false skips computing signal `k` (left 0).
pub fn function_signals(
    issue: &str,
    repo: &FileIndex,
    files: &[FileHit],
    opts: &LocateOptions,
    need: impl Fn(usize) -> bool,
) -> FunctionSignals {
    let quoted = need(slot(&FUNCTION_NAMES, "fn_code_line"));
    let (input, hits) = function::Input::new(issue, repo, files, opts, quoted);
    let mut s = FunctionSignals {
        x: vec![[0.0; FUNCTION_SIGNALS]; hits.len()],
        hits,
    };
    for (k, sig) in FUNCTION.iter().enumerate() {
        if need(k) {
            (sig.compute)(&input, &mut s, k);
        }
    }
    s
}
