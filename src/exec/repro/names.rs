//! The names an issue's code uses but never imports, and the imports that bind them: what the
//! repository's packages export, its modules, the standard library, conventional aliases.

use crate::localize::search::FileIndex;
use crate::syntax::python;
use std::collections::{BTreeMap, BTreeSet};

/// Names a repository makes available to an issue's code: its top-level packages and modules,
/// and the names its packages export (`from pkg import Name` works).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoNames {
    /// Top-level importable modules and packages (`sympy`, `requests`, `_pytest`, `pytest`).
    pub modules: BTreeSet<String>,
    /// Exported name → the package that exports it (the first package, largest first).
    pub exported: BTreeMap<String, String>,
    /// A module of ready-made symbols the repository's users import letters from (see
    /// [`SYMBOL_MODULES`]), when the repository has one.
    pub symbols: Option<&'static str>,
    /// Public name → the one module of the repository's packages that defines it at top
    /// level (a `def` or `class`), outside tests; `None` when several do.
    pub defined: BTreeMap<String, Option<String>>,
    /// The dotted modules of the packages' library files (`sphinx.ext.napoleon`), outside tests,
    /// but for those whose name their package's `__init__.py` mentions (see
    /// [`bound_by_parent`]).
    pub submodules: BTreeSet<String>,
    /// Public name → the subpackage (`sympy.physics.units`, below a top-level package) whose
    /// `__init__.py` binds it, following star imports as [`exported`](Self::exported) does: the
    /// one that does, or the one that holds all that do ([`outermost`]); `None` when several
    /// unrelated ones do. Users import a domain's names from it (`joule`).
    pub sub_exported: BTreeMap<String, Option<String>>,
}

/// Modules whose users write `x`, `y`, `alpha` without binding them, as the project's own docs
/// do: (file, module). sympy's `sympy.abc` binds every Latin and Greek letter to a Symbol.
const SYMBOL_MODULES: [(&str, &str); 1] = [("sympy/abc.py", "sympy.abc")];

/// Greek letter names as `sympy.abc` spells them (`lamda`: `lambda` is a keyword).
const GREEK: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lamda",
    "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
    "omega",
];

/// A name a symbol module binds: one ASCII letter, or a Greek letter's name.
fn is_symbol_name(name: &str) -> bool {
    (name.len() == 1 && name.chars().all(|c| c.is_ascii_alphabetic())) || GREEK.contains(&name)
}

const NOT_PACKAGES: [&str; 12] = [
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "bench",
    "scripts",
    "build",
    "tools",
];

impl RepoNames {
    /// From the repository's Python files at the base commit: packages are `p/__init__.py`
    /// (also under `src/`, `lib/`), modules are top-level `.py` files (not `setup.py`,
    /// `conftest.py`); a package exports what its `__init__.py` binds at any depth of star
    /// imports (`from .core import *`), up to three levels, private names left out.
    pub fn from_repo(files: &FileIndex) -> RepoNames {
        let mut names = RepoNames::default();
        let mut packages: Vec<(usize, String, String)> = Vec::new(); // (files, name, init path)
        for p in files.paths() {
            let rel = p
                .strip_prefix("src/")
                .or_else(|| p.strip_prefix("lib/"))
                .unwrap_or(p);
            let prefix = &p[..p.len() - rel.len()];
            match rel.split_once('/') {
                Some((pkg, "__init__.py")) if !NOT_PACKAGES.contains(&pkg) => {
                    let size = files
                        .paths()
                        .filter(|q| q.starts_with(&format!("{prefix}{pkg}/")))
                        .count();
                    packages.push((size, pkg.to_string(), p.to_string()));
                    names.modules.insert(pkg.to_string());
                }
                None if rel.ends_with(".py") => {
                    let stem = rel.trim_end_matches(".py");
                    if !matches!(stem, "setup" | "conftest" | "noxfile" | "fabfile")
                        && is_identifier(stem)
                    {
                        names.modules.insert(stem.to_string());
                    }
                }
                _ => {}
            }
        }
        names.symbols = SYMBOL_MODULES
            .iter()
            .find(|(file, _)| files.get(file).is_some())
            .map(|(_, module)| *module);
        for p in files.paths() {
            let Some(module) = library_module(p, &names.modules) else {
                continue;
            };
            if !bound_by_parent(files, p, &module) {
                names.submodules.insert(module.clone());
            }
            let Some(f) = files.get(p) else { continue };
            for name in top_level_defs(&f.text) {
                if name.starts_with('_') {
                    continue;
                }
                names
                    .defined
                    .entry(name.to_string())
                    .and_modify(|m| {
                        if m.as_deref() != Some(module.as_str()) {
                            *m = None;
                        }
                    })
                    .or_insert_with(|| Some(module.clone()));
            }
        }
        let mut binders: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in files.paths().filter(|p| p.ends_with("/__init__.py")) {
            let Some(module) = library_module(p, &names.modules).filter(|m| m.contains('.')) else {
                continue;
            };
            let mut seen = BTreeSet::new();
            let mut found = BTreeSet::new();
            module_names(files, p, 0, &mut seen, &mut found);
            for name in found {
                binders.entry(name).or_default().push(module.clone());
            }
        }
        names.sub_exported = binders
            .into_iter()
            .map(|(name, modules)| (name, outermost(&modules)))
            .collect();
        packages.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, pkg, init) in packages {
            let mut seen = BTreeSet::new();
            let mut found = BTreeSet::new();
            module_names(files, &init, 0, &mut seen, &mut found);
            for n in found {
                names.exported.entry(n).or_insert_with(|| pkg.clone());
            }
        }
        names
    }
}

/// The names of the `def`, `async def` and `class` statements at column 0 of Python source (a
/// line scan: every library file of the repository is read for them).
fn top_level_defs(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let rest = l
            .strip_prefix("def ")
            .or_else(|| l.strip_prefix("async def "))
            .or_else(|| l.strip_prefix("class "))?
            .trim_start();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// Whether the `__init__.py` of the package holding library file `path` (module `module`)
/// mentions the module's last name: it then imports the module itself (`from .c import x`), or
/// binds the name to something else. sympy's `printing/__init__.py` binds `ccode` to a
/// function, and importing the deprecated `sympy/printing/ccode.py` would rebind it to the
/// module. A word search, not a parse: what it misses is only an import not added.
fn bound_by_parent(files: &FileIndex, path: &str, module: &str) -> bool {
    let Some((_, last)) = module.rsplit_once('.') else {
        return true;
    };
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let dir = if path.ends_with("/__init__.py") {
        dir.rsplit_once('/').map_or("", |(d, _)| d)
    } else {
        dir
    };
    let Some(init) = files.get(&format!("{dir}/__init__.py")) else {
        return true;
    };
    let text: &str = &init.text;
    text.match_indices(last).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + last.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// The dotted module of a library file of one of the repository's packages
/// (`sympy/utilities/iterables.py` → `sympy.utilities.iterables`), or `None` for a file
/// outside them, a test (`tests/`, `testing/`, `test_*.py`, `conftest.py`) or a private module.
pub(super) fn library_module(path: &str, packages: &BTreeSet<String>) -> Option<String> {
    let rel = path
        .strip_prefix("src/")
        .or_else(|| path.strip_prefix("lib/"))
        .unwrap_or(path)
        .strip_suffix(".py")?;
    let mut parts: Vec<&str> = rel.split('/').collect();
    if parts.len() < 2 || !packages.contains(parts[0]) {
        return None;
    }
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    let test = |p: &&str| {
        matches!(*p, "tests" | "test" | "testing" | "conftest" | "benchmarks")
            || p.starts_with("test_")
            || p.starts_with('_')
            || !is_identifier(p)
    };
    if parts[1..].iter().any(test) {
        return None;
    }
    Some(parts.join("."))
}

fn is_identifier(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Of the subpackages that bind a name, the one that holds all the others (`sympy.physics.units`
/// re-exports what `sympy.physics.units.definitions` binds): users import from it. `None` when
/// none holds them all.
fn outermost(modules: &[String]) -> Option<String> {
    let top = modules.iter().min_by_key(|m| m.len())?;
    modules
        .iter()
        .all(|m| m == top || m.starts_with(&format!("{top}.")))
        .then(|| top.clone())
}

/// Public names a module binds at top level, following star imports.
fn module_names(
    files: &FileIndex,
    path: &str,
    depth: usize,
    seen: &mut BTreeSet<String>,
    out: &mut BTreeSet<String>,
) {
    if depth > 3 || !seen.insert(path.to_string()) {
        return;
    }
    let Some(f) = files.get(path) else { return };
    let idx = f.index();
    for d in idx.defs.iter().filter(|d| d.depth == 0) {
        if !d.name.starts_with('_') {
            out.insert(d.name.clone());
        }
    }
    for imp in &idx.imports {
        if imp.alias == "*" {
            let module = resolve_relative(path, &imp.module);
            let base = module.replace('.', "/");
            let prefix = if path.starts_with("src/") {
                "src/"
            } else if path.starts_with("lib/") {
                "lib/"
            } else {
                ""
            };
            for cand in [
                format!("{prefix}{base}.py"),
                format!("{prefix}{base}/__init__.py"),
            ] {
                if files.get(&cand).is_some() {
                    module_names(files, &cand, depth + 1, seen, out);
                }
            }
        } else if !imp.alias.starts_with('_') && is_identifier(&imp.alias) {
            out.insert(imp.alias.clone());
        }
    }
}

/// `from .x import y` in `pkg/a/b.py` → `pkg.a.x` (a `src/` or `lib/` prefix is not a package):
/// the context's [`crate::context::resolve_relative`] over the path without that prefix.
fn resolve_relative(path: &str, module: &str) -> String {
    let path = path
        .strip_prefix("src/")
        .or_else(|| path.strip_prefix("lib/"))
        .unwrap_or(path);
    crate::context::resolve_relative(path, module)
}

/// Conventional aliases an issue uses without importing.
const ALIASES: [(&str, &str); 8] = [
    ("np", "import numpy as np"),
    ("pd", "import pandas as pd"),
    ("plt", "import matplotlib.pyplot as plt"),
    ("mpl", "import matplotlib as mpl"),
    ("xr", "import xarray as xr"),
    ("sns", "import seaborn as sns"),
    ("so", "import seaborn.objects as so"),
    ("u", "from astropy import units as u"),
];

/// Standard-library modules an issue uses without importing.
const STDLIB: [&str; 28] = [
    "os",
    "sys",
    "re",
    "math",
    "pickle",
    "copy",
    "json",
    "warnings",
    "datetime",
    "io",
    "collections",
    "itertools",
    "functools",
    "operator",
    "tempfile",
    "decimal",
    "fractions",
    "time",
    "random",
    "logging",
    "pathlib",
    "textwrap",
    "inspect",
    "types",
    "typing",
    "string",
    "gc",
    "cmath",
];

const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "__import__",
    "__name__",
    "__file__",
    "__doc__",
    "__builtins__",
    "self",
    "cls",
    "True",
    "False",
    "None",
    "NotImplemented",
    "Ellipsis",
    "unicode",
    "long",
    "xrange",
    "basestring",
    "unichr",
    "reduce",
    "exit",
    "quit",
    "copyright",
    "credits",
    "license",
    "display",
];

fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
        || name.ends_with("Error") && name.chars().next().is_some_and(char::is_uppercase) && {
            matches!(
                name,
                "ArithmeticError"
                    | "AssertionError"
                    | "AttributeError"
                    | "BufferError"
                    | "EOFError"
                    | "FloatingPointError"
                    | "ImportError"
                    | "IndexError"
                    | "KeyError"
                    | "LookupError"
                    | "MemoryError"
                    | "NameError"
                    | "NotImplementedError"
                    | "OSError"
                    | "IOError"
                    | "OverflowError"
                    | "RecursionError"
                    | "ReferenceError"
                    | "RuntimeError"
                    | "SyntaxError"
                    | "SystemError"
                    | "TypeError"
                    | "UnboundLocalError"
                    | "UnicodeError"
                    | "UnicodeDecodeError"
                    | "UnicodeEncodeError"
                    | "ValueError"
                    | "ZeroDivisionError"
                    | "ModuleNotFoundError"
                    | "FileNotFoundError"
                    | "PermissionError"
                    | "TimeoutError"
                    | "ConnectionError"
                    | "IndentationError"
                    | "TabError"
                    | "EnvironmentError"
            )
        }
        || matches!(
            name,
            "Exception"
                | "BaseException"
                | "StopIteration"
                | "KeyboardInterrupt"
                | "SystemExit"
                | "GeneratorExit"
                | "Warning"
                | "UserWarning"
                | "DeprecationWarning"
                | "RuntimeWarning"
                | "FutureWarning"
                | "PendingDeprecationWarning"
                | "SyntaxWarning"
                | "ImportWarning"
                | "UnicodeWarning"
                | "BytesWarning"
                | "ResourceWarning"
        )
}

/// Names the code uses but never binds, in order of first use, each with whether a star
/// import comes before that use. Assignments and definitions bind a name wherever they are
/// (a function may use a name bound below it); an import binds only the uses after it, so a
/// name used before the issue imports it (`xr.DataArray` above `import xarray as xr`, two
/// blocks apart) still counts as unbound.
pub(super) fn unbound_names(code: &str) -> Vec<(String, bool)> {
    let Some(tree) = python::parse(code) else {
        return Vec::new();
    };
    let mut bound: BTreeSet<String> = BTreeSet::new();
    // Where each name is first imported, and the first star import.
    let mut imported: BTreeMap<String, usize> = BTreeMap::new();
    let mut used: Vec<(String, usize)> = Vec::new();
    let mut star: Option<usize> = None;
    let txt = |n: tree_sitter::Node| code[n.start_byte()..n.end_byte()].to_string();
    let mut stack = vec![(tree.root_node(), false)];
    while let Some((n, in_params)) = stack.pop() {
        let kind = n.kind();
        let params = in_params || matches!(kind, "parameters" | "lambda_parameters");
        if matches!(
            kind,
            "default_parameter" | "typed_default_parameter" | "typed_parameter"
        ) {
            // The parameter's name is bound; its default value and annotation are uses.
            let mut c = n.walk();
            for k in n.children(&mut c) {
                let is_name = n.child_by_field_name("name") == Some(k)
                    || (kind == "typed_parameter" && k.kind() == "identifier");
                if is_name {
                    bound.insert(txt(k));
                } else {
                    stack.push((k, false));
                }
            }
            continue;
        }
        match kind {
            "assignment" | "for_statement" | "for_in_clause" | "augmented_assignment" => {
                if let Some(l) = n.child_by_field_name("left") {
                    bind_targets(l, code, &mut bound);
                }
            }
            "function_definition" | "class_definition" => {
                if let Some(nm) = n.child_by_field_name("name") {
                    bound.insert(txt(nm));
                }
            }
            "as_pattern" => {
                if let Some(a) = n.child_by_field_name("alias") {
                    bind_targets(a, code, &mut bound);
                }
            }
            "named_expression" => {
                if let Some(nm) = n.child_by_field_name("name") {
                    bound.insert(txt(nm));
                }
            }
            "global_statement" | "nonlocal_statement" => {
                let mut c = n.walk();
                for x in n.named_children(&mut c) {
                    bound.insert(txt(x));
                }
            }
            "import_statement" | "import_from_statement" => {
                let mut c = n.walk();
                let mut any = false;
                for x in n.children_by_field_name("name", &mut c) {
                    any = true;
                    let name = if x.kind() == "aliased_import" {
                        x.child_by_field_name("alias").map(txt).unwrap_or_default()
                    } else if kind == "import_statement" {
                        txt(x).split('.').next().unwrap_or("").to_string()
                    } else {
                        txt(x)
                    };
                    imported.entry(name).or_insert(n.start_byte());
                }
                if !any && kind == "import_from_statement" {
                    star.get_or_insert(n.start_byte());
                }
                continue;
            }
            "identifier" => {
                let skip = n.parent().is_some_and(|p| {
                    (p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(n))
                        || (p.kind() == "keyword_argument"
                            && p.child_by_field_name("name") == Some(n))
                });
                if params {
                    bound.insert(txt(n));
                } else if !skip {
                    let t = txt(n);
                    if !used.iter().any(|(u, _)| *u == t) {
                        used.push((t, n.start_byte()));
                    }
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<_> = n.children(&mut c).collect();
        for k in kids.into_iter().rev() {
            stack.push((k, params));
        }
    }
    used.into_iter()
        .filter(|(u, at)| {
            !bound.contains(u)
                && imported.get(u).is_none_or(|i| i > at)
                && !is_builtin(u)
                && !u.starts_with("_dei")
        })
        .map(|(u, at)| (u, star.is_some_and(|s| s < at)))
        .collect()
}

fn bind_targets(n: tree_sitter::Node, code: &str, bound: &mut BTreeSet<String>) {
    match n.kind() {
        "identifier" => {
            bound.insert(code[n.start_byte()..n.end_byte()].to_string());
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" | "list_splat_pattern" | "tuple"
        | "list" | "expression_list" | "as_pattern_target" => {
            let mut c = n.walk();
            for k in n.named_children(&mut c) {
                bind_targets(k, code, bound);
            }
        }
        _ => {}
    }
}

/// The imports for names the code uses but never binds: a name the repository's packages
/// export (`from pkg import Name`; not when the code already star-imports), a repository
/// module or standard-library module (`import name`), a conventional alias (`np`, `plt`, …),
/// a letter from the repository's symbol module (`from sympy.abc import x`), else a function
/// or class that one library module alone defines (`from sympy.utilities.iterables import
/// multiset`; not when the code star-imports), else a name one subpackage alone exports
/// (`from sympy.physics.units import joule`; likewise). Then each submodule of the repository the code
/// reaches through its package's attributes without importing it (`import sphinx.ext.napoleon`
/// for `sphinx.ext.napoleon.NumpyDocstring`, see [`dotted_submodules`]).
pub fn implied_imports(code: &str, names: &RepoNames) -> Vec<String> {
    imports_for(code, names, true)
}

/// [`implied_imports`], with the last two rules (the one module that defines a name, the one
/// subpackage that exports it) only when `defined` says so.
pub(super) fn imports_for(code: &str, names: &RepoNames, defined: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (u, star) in unbound_names(code) {
        let line = if names.modules.contains(&u) || STDLIB.contains(&u.as_str()) {
            format!("import {u}")
        } else if let (false, Some(pkg)) = (star, names.exported.get(&u)) {
            format!("from {pkg} import {u}")
        } else if let (Some(module), true) = (names.symbols, is_symbol_name(&u)) {
            // Before the aliases: sympy's `u` is a letter, not astropy's units.
            format!("from {module} import {u}")
        } else if let Some((_, imp)) = ALIASES.iter().find(|(a, _)| *a == u) {
            imp.to_string()
        } else if let (true, false, Some(Some(module))) = (defined, star, names.defined.get(&u)) {
            format!("from {module} import {u}")
        } else if let (true, false, Some(Some(module))) =
            (defined, star, names.sub_exported.get(&u))
        {
            format!("from {module} import {u}")
        } else {
            continue;
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    for module in dotted_submodules(code, names) {
        let line = format!("import {module}");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The repository's submodules the code reaches through attributes of its package without
/// importing them: `sphinx.ext.napoleon.NumpyDocstring(…)` after `import sphinx` raises
/// `AttributeError` unless `sphinx.ext.napoleon` was imported, as it was in the session the
/// issue was written in. The longest dotted prefix of an attribute chain that is a library
/// module of the repository's packages, when the code does not import it itself.
fn dotted_submodules(code: &str, names: &RepoNames) -> Vec<String> {
    let Some(tree) = python::parse(code) else {
        return Vec::new();
    };
    let mut imported: BTreeSet<String> = BTreeSet::new();
    let mut chains: Vec<String> = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "import_statement" | "import_from_statement" => {
                let mut c = n.walk();
                for x in n.named_children(&mut c) {
                    let x = if x.kind() == "aliased_import" {
                        x.child_by_field_name("name").unwrap_or(x)
                    } else {
                        x
                    };
                    if x.kind() == "dotted_name" {
                        imported.insert(code[x.start_byte()..x.end_byte()].to_string());
                    }
                }
                continue;
            }
            // The outermost attribute of a chain of names: `a.b.c`, not `f().b`.
            "attribute" if n.parent().is_none_or(|p| p.kind() != "attribute") => {
                let text = &code[n.start_byte()..n.end_byte()];
                if text.split('.').all(is_identifier) {
                    chains.push(text.to_string());
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<_> = n.children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    let mut out: Vec<String> = Vec::new();
    for chain in chains {
        let parts: Vec<&str> = chain.split('.').collect();
        if !names.modules.contains(parts[0]) {
            continue;
        }
        let found = (2..=parts.len())
            .rev()
            .map(|k| parts[..k].join("."))
            .find(|m| names.submodules.contains(m));
        let Some(module) = found else { continue };
        let covered = imported
            .iter()
            .any(|i| *i == module || i.starts_with(&format!("{module}.")));
        if !covered && !out.contains(&module) {
            out.push(module);
        }
    }
    out
}
