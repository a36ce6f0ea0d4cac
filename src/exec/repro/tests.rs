//! Tests of the reproduction: the issue's code, its names, projects and the script.

use super::names::library_module;
use super::project::{file_name_line, pylint_script};
use super::script::{wrap, Drawn};
use super::text::inline_expressions;
use super::*;
use crate::exec::outcome::REPRO_MARK;
use crate::model::repo::shell_words;

const SPHINX_ISSUE: &str = "**To Reproduce**\n\n```\n# example.py\nvar: String\n```\n```\n# index.rst\n.. automodule:: example\n   :members:\n```\nand in\n\n**docs/../conf.py**:\n```\nautodoc_type_aliases = {'String': 'example.MyString'}\n```\n`conf.py`:\n```python\nautodoc_type_aliases = {'String': 'example.MyString'}\n```\n- Sphinx extensions: sphinx.ext.autodoc, sphinx.ext.napoleon\n";

#[test]
fn without_code_the_expressions_an_issue_writes_inline() {
    let issue = "Using SymPy 1.5.1, evaluate `0**-oo` produces `0`, and `r.text` or\n`next(resp.iter_content(16*1024))` fail; `Symbol` is fine.\n```\n`Rational(1, 2)` inside a fence\n```\n";
    let found: Vec<String> = inline_expressions(issue).into_iter().map(|e| e.0).collect();
    assert_eq!(found, ["0**-oo", "next(resp.iter_content(16*1024))"]);
    let mut names = names();
    names.exported.insert("oo".into(), "sympy".into());
    let r = reproduction(issue, &names).unwrap();
    // `resp` is bound nowhere: that expression is left out.
    assert_eq!(r.code, "from sympy import oo\n0**-oo");
    assert_eq!(r.sources, vec![(Source::Inline, 1)]);
    // With code in the issue, inline expressions are not read.
    let with_block = format!("{issue}```python\nx = 1\n```\n");
    assert!(!reproduction(&with_block, &names)
        .unwrap()
        .code
        .contains("oo"));
}

#[test]
fn an_issues_sphinx_project_is_its_named_blocks() {
    let files = sphinx_project(SPHINX_ISSUE).unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    // Named by a first line or by the line before the fence; `..` is no file name.
    assert_eq!(names, ["example.py", "index.rst", "conf.py"]);
    assert_eq!(files[0].1, "var: String\n");
    assert_eq!(
        files[2].1,
        "autodoc_type_aliases = {'String': 'example.MyString'}\n"
    );
    // No root document, no project.
    assert!(sphinx_project("```\n# example.py\nx = 1\n```\n").is_none());
    for (line, want) in [
        ("# conf.py", Some("conf.py")),
        (".. index.rst", Some("index.rst")),
        ("**docs/index.rst**:", Some("docs/index.rst")),
        (
            "`_templates/autosummary/module.rst`:",
            Some("_templates/autosummary/module.rst"),
        ),
        ("# in conf.py", Some("conf.py")),
        ("Simple `helloworld.py`", Some("helloworld.py")),
        ("# Set up the project", None),
        ("/etc/conf.py", None),
        ("then run it as python3 example.py", None),
        ("example.py is", None),
    ] {
        assert_eq!(file_name_line(line), want, "{line}");
    }
}

#[test]
fn in_a_sphinx_repository_the_project_is_built() {
    let mut names = names();
    assert!(reproduction(SPHINX_ISSUE, &names).is_some_and(|r| !r.script.contains("_dei_build")));
    names.modules.insert("sphinx".into());
    let r = reproduction(SPHINX_ISSUE, &names).unwrap();
    assert_eq!(r.statements, 1);
    assert!(
        r.code.starts_with("# example.py\nvar: String\n"),
        "{}",
        r.code
    );
    // The conf.py dei writes loads the extensions the issue names, documents undocumented
    // members too (sphinx-8627's functions have no docstrings, and its issue shows them), then
    // holds the issue's.
    assert!(
        r.script.contains("extensions = [\\\"sphinx.ext.autodoc\\\", \\\"sphinx.ext.napoleon\\\"]\\nmaster_doc = 'index'\\nautodoc_default_options = {'members': True, 'undoc-members': True}\\nautodoc_type_aliases"),
        "{}",
        r.script
    );
    assert!(
        r.script.contains("_dei_build([\"-b\", \"text\""),
        "{}",
        r.script
    );
    assert!(r
        .script
        .contains("\"index.rst\": \".. automodule:: example\\n   :members:\\n\""));
}

#[test]
fn the_pylint_command_an_issue_runs_over_the_files_it_shows() {
    let issue = "pylint 2.12.2 is installed.\n```python\n# YES: yes\n# ???: no\n```\n`pylint test.py --notes=\"YES,???\"` will return a warning.\n.pylintrc:\n```ini\n[MASTER]\nnotes=YES\n```\n";
    let args = pylint_command(issue).unwrap();
    assert_eq!(
        args,
        ["test.py", "--notes=YES,???"],
        "the version line is no command"
    );
    let (script, files) = pylint_script(issue, &args);
    assert_eq!(
        files,
        [
            (".pylintrc".to_string(), "[MASTER]\nnotes=YES\n".to_string()),
            ("test.py".to_string(), "# YES: yes\n# ???: no\n".to_string()),
        ]
    );
    assert!(
        script.contains("_dei_run([\"test.py\", \"--notes=YES,???\"])"),
        "{script}"
    );
    // A command that pipes into another is not run; nor is a line only naming pylint.
    assert!(pylint_command("$ pylint a.py | grep W0511\nabout pylint itself\n").is_none());
    assert_eq!(pylint_command("```\n$ pylint -Q\n```").unwrap(), ["-Q"]);
    let mut names = names();
    assert!(reproduction(issue, &names).is_none_or(|r| !r.script.contains("_dei_run")));
    names.modules.insert("pylint".into());
    assert!(reproduction(issue, &names).is_some_and(|r| r.script.contains("_dei_run")));
}

#[test]
fn shell_words_as_a_shell_splits_them() {
    assert_eq!(
        shell_words(r#"test.py --msg-template='{{ "Category": "{category}" }}' -x "a \"b\" \c" d"#)
            .unwrap(),
        [
            "test.py",
            r#"--msg-template={{ "Category": "{category}" }}"#,
            "-x",
            r#"a "b" \c"#,
            "d"
        ]
    );
    assert!(shell_words("unclosed 'quote").is_none());
}

#[test]
fn the_issues_pytest_flags_that_change_what_a_run_shows() {
    let issue = "Run it:\n```\n$ pytest -rs --runxfail test_it.py\n$ python -m pytest -sv --tb=short --pdb -n 4 x.py | tee log\n```\nWith `pytest --runxfail` the location is wrong. pytest 5.4 prints --fixtures.\n";
    assert_eq!(
        pytest_flags(issue),
        vec!["--runxfail", "-sv", "--tb=short"],
        "-rs is asked anyway; --pdb, -n and what follows a pipe are not kept; a word after \"pytest\" in prose is no flag"
    );
    assert!(pytest_flags("no command here --runxfail").is_empty());
}

#[test]
fn an_issues_test_file_runs_with_pytest_and_two_named_ones_as_a_project() {
    let one = "```python\nimport pytest\n\n@pytest.mark.skip\ndef test_a():\n    assert 0\n```\nThen `pytest -rs --runxfail` shows the wrong location.\n";
    let r = reproduction(one, &names()).unwrap();
    assert!(
        r.script.contains("\"-rfEsxX\", \"--runxfail\"])"),
        "{}",
        r.script
    );
    // Two test files sharing a global's name (pytest-7373's `test_module_1.py` and
    // `test_module_2.py`): one module would merge them. Named, they are written as two files
    // and pytest runs both, in the order shown, with the issue's flags.
    let two = "test_1.py:\n```python\nskip = True\ndef test_a():\n    assert 0\n```\ntest_2.py:\n```python\nskip = False\ndef test_b():\n    assert 0\n```\nRun `pytest --runxfail test_1.py test_2.py`.\n";
    let r = reproduction(two, &names()).unwrap();
    assert!(
        r.script
            .contains("\"test_2.py\": \"skip = False\\ndef test_b():\\n    assert 0\\n\","),
        "{}",
        r.script
    );
    assert!(
        r.script.contains("_dei_pytest.main([\"test_1.py\", \"test_2.py\", \"--rootdir\", _dei_dir, \"-c\", \"/dev/null\", \"-p\", \"no:cacheprovider\", \"-rfEsxX\", \"--runxfail\"])"),
        "{}",
        r.script
    );
    assert_eq!(r.statements, 1);
    // A settings file the issue shows is the one pytest reads.
    let ini = format!("{two}pytest.ini:\n```ini\n[pytest]\nxfail_strict = true\n```\n");
    let r = reproduction(&ini, &names()).unwrap();
    assert!(
        r.script.contains("\"-c\", \"pytest.ini\", \"-p\""),
        "{}",
        r.script
    );
    // Unnamed, they still run as one script that runs no test.
    let unnamed = two.replace("test_1.py:\n", "").replace("test_2.py:\n", "");
    let r = reproduction(&unnamed, &names()).unwrap();
    assert!(!r.script.contains("_dei_pytest"), "{}", r.script);
    // A named test file beside a file it does not run (pytest-7220's noxfile.py).
    let (files, tests) = pytest_project(
        "test_x.py:\n```python\ndef test_a():\n    pass\n```\nnoxfile.py:\n```python\nimport nox\n```\n",
    )
    .unwrap();
    assert_eq!((files.len(), tests), (2, vec!["test_x.py".to_string()]));
    // One named test file alone, or named files none of which is a test: no project.
    assert!(pytest_project("test_x.py:\n```python\ndef test_a():\n    pass\n```\n").is_none());
    assert!(
        pytest_project("a.py:\n```python\nx = 1\n```\nb.py:\n```python\ny = 2\n```\n").is_none()
    );
}

#[test]
fn code_that_defines_tests_runs_them_with_pytest() {
    let test = "import pytest\n\n@pytest.mark.skip\ndef test_skip_location():\n    assert 0\n";
    let Wrapped {
        script,
        statements: n,
        imports,
    } = wrap(
        test,
        Some(&["--runxfail".to_string()]),
        &[],
        Drawn::Repr,
        "",
    )
    .unwrap();
    assert_eq!(n, 2);
    assert_eq!(imports, [1]);
    assert!(script.contains("if __name__ == \"__main__\":"), "{script}");
    assert!(
        script.contains("_dei_pytest.main([__file__, \"--rootdir\", _dei_os.getcwd(), \"-c\", \"/dev/null\", \"-p\", \"no:cacheprovider\", \"-rfEsxX\", \"--runxfail\"])"),
        "{script}"
    );
    for code in [
        "class TestIt:\n    def test_a(self):\n        pass\n",
        "async def test_a():\n    pass\n",
    ] {
        let script = wrap(code, Some(&[]), &[], Drawn::Repr, "").unwrap().script;
        assert!(script.contains("_dei_pytest.main"), "{code}");
    }
    // Code that defines no test, or only calls one, runs as a script.
    for code in [
        "def helper():\n    pass\nhelper()\n",
        "test_it()\n",
        "testing = 1\n",
    ] {
        let script = wrap(code, Some(&[]), &[], Drawn::Repr, "").unwrap().script;
        assert!(!script.contains("pytest"), "{code}");
        assert!(
            script.ends_with("_dei_sys.exit(1 if _dei_first else 0)\n"),
            "{script}"
        );
    }
}

fn names() -> RepoNames {
    let files = FileIndex::from_pairs(vec![
        (
            "sympy/__init__.py".into(),
            "from .core import *\nfrom .printing import ccode, latex\n__version__ = '1.1'\n".into(),
        ),
        (
            "sympy/core/__init__.py".into(),
            "from .symbol import Symbol, symbols\nfrom .numbers import Rational\n".into(),
        ),
        (
            "sympy/core/symbol.py".into(),
            "class Symbol:\n    pass\ndef symbols(s):\n    pass\n".into(),
        ),
        (
            "sympy/core/numbers.py".into(),
            "class Rational:\n    pass\n".into(),
        ),
        (
            "sympy/printing/__init__.py".into(),
            "from .ccode import ccode\n".into(),
        ),
        (
            "sympy/printing/ccode.py".into(),
            "def ccode(e):\n    pass\ndef _private():\n    pass\n".into(),
        ),
        ("setup.py".into(), "import setuptools\n".into()),
        ("isympy.py".into(), "def main():\n    pass\n".into()),
        ("doc/conf.py".into(), "x = 1\n".into()),
        ("sympy/abc.py".into(), "from sympy import symbols\n".into()),
    ]);
    RepoNames::from_repo(&files)
}

#[test]
fn agent_scripts_are_new_root_files_named_like_reproductions() {
    use crate::model::{Applies, FileView, PatchView};
    let repo = FileIndex::from_pairs(vec![("isympy.py".into(), "x = 1\n".into())]);
    let file = |path: &str, before: Option<&str>, after: &str| FileView {
        path: path.into(),
        before: before.map(str::to_string),
        after: Some(after.into()),
        hunks: vec![],
        changed_before: vec![],
        changed_after: vec![],
        hunk_info: vec![],
        error: None,
    };
    let view = |files: Vec<FileView>| PatchView {
        applies: Applies::Clean,
        files,
        error: None,
        lines_added: 1,
        lines_removed: 0,
    };
    let b = view(vec![
        file("test_bug.py", None, "def test_x():\n    pass\n"),
        file("reproduce_bug.py", None, "print(1)\n"),
        // Not a reproduction by its name, nested, or already in the repository.
        file("check_version.py", None, "print(2)\n"),
        file("sympy/reproduce.py", None, "print(3)\n"),
        file("isympy.py", Some("x = 1\n"), "print(4)\n"),
    ]);
    // The same script as agent b's comes once, under the first agent in order.
    let a = view(vec![file("replicate_issue.py", None, "print(1)\n")]);
    let c = view(vec![file("issue.py", None, "print(5)\n")]);
    let got = agent_scripts(&[("b", &b), ("c", &c), ("a", &a)], &repo);
    let got: Vec<(&str, &str)> = got
        .iter()
        .map(|s| (s.agent.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("a", "replicate_issue.py"),
            ("c", "issue.py"),
            ("b", "test_bug.py")
        ]
    );
    let s = &agent_scripts(&[("c", &c)], &repo)[0];
    assert!(s.script.contains("_dei_show(print(5))") || s.script.contains("print(5)"));
    assert!(s.script.contains(REPRO_MARK));

    // The files a script names that its own candidate creates at the root (SWE-agent's
    // `config.toml` beside `replicate_issue.py`) are written before it runs, in every tree;
    // a file it does not name, one in a folder, and the repository's own are not.
    let loads = "import tomllib\nprint(tomllib.load(open('config.toml', 'rb')), 'isympy.py', \"notes.txt\")\n";
    let d = view(vec![
        file("replicate_issue.py", None, loads),
        file("config.toml", None, "a = 1\n"),
        file("other.toml", None, "b = 2\n"),
        file("notes.txt", None, "seen\n"),
        file("isympy.py", Some("x = 1\n"), "x = 2\n"),
    ]);
    let s = &agent_scripts(&[("d", &d)], &repo)[0];
    assert!(
        s.script.contains(
            "    (\"config.toml\", \"a = 1\\n\"),\n    (\"notes.txt\", \"seen\\n\"),\n]:"
        ),
        "{}",
        s.script
    );
    assert!(!s.script.contains("other.toml") && !s.script.contains("x = 2"));
    // Its code, as shown, lists them first.
    assert!(
        s.code
            .starts_with("# config.toml (written before the script runs)\na = 1\n# notes.txt"),
        "{}",
        s.code
    );
    assert!(s.code.ends_with(loads));
    // It writes them before the script's first statement.
    assert!(s.script.find("config.toml") < s.script.find("_dei_fail(1"));
    // Without such a file, nothing is written.
    assert!(!agent_scripts(&[("c", &c)], &repo)[0]
        .script
        .contains("Files the script reads"));
}

#[test]
fn repository_names_follow_star_imports() {
    let n = names();
    assert!(n.modules.contains("sympy") && n.modules.contains("isympy"));
    assert!(!n.modules.contains("setup"));
    assert_eq!(n.exported.get("Symbol").map(String::as_str), Some("sympy"));
    assert_eq!(n.exported.get("ccode").map(String::as_str), Some("sympy"));
    assert!(!n.exported.contains_key("_private"));
}

/// sympy-11400-like: a `>>>` session outside a fence, with outputs.
#[test]
fn doctest_session_loses_prompts_and_outputs_and_gains_imports() {
    let issue = "ccode(sinc(x)) doesn't work\n\n```\n>>> x = symbols('x')\n>>> ccode(sinc(x))\n'// Not supported in C:\\n// sinc\\nsinc(x)'\n>>> for i in range(2):\n...     print(i)\n...\n0\n1\n```\n\nI think it should return something else.\n";
    let r = reproduction(issue, &names()).expect("code found");
    assert_eq!(r.code, "from sympy import symbols\nfrom sympy import ccode\nx = symbols('x')\nccode(sinc(x))\nfor i in range(2):\n    print(i)");
    assert!(
        r.imports_added.iter().all(|i| !i.contains("sinc")),
        "sinc is not exported: {:?}",
        r.imports_added
    );
    assert_eq!(r.statements, 5);
    assert!(
        r.script.contains("    _dei_show(ccode(sinc(x)))\n"),
        "{}",
        r.script
    );
    assert!(!r.script.contains("sinc(x)'"), "output dropped");
}

/// sympy-20442: prompts typed without their space (`>>>convert_to(…)`), output indented under
/// them; a `>>>>` quote is no prompt.
#[test]
fn a_prompt_without_its_space_is_a_prompt() {
    let issue = "Example:\n```\n>>>convert_to(joule*second,joule)\n    joule**(7/9)\n```\n```\n>>>x = 1\n>>> x\n1\n```\n";
    let (code, src) = issue_code(issue);
    assert_eq!(code, "convert_to(joule*second,joule)\nx = 1\nx");
    assert!(src.iter().all(|s| s.0 == Source::Fenced), "{src:?}");
    let quoted = "Reply:\n\n>>>>x = 1\n";
    assert_eq!(issue_code(quoted).0, "");
}

#[test]
fn ipython_session_and_fenced_script_with_its_traceback() {
    let issue = "In [1]: import requests\n\nIn [2]: r = requests.get('http://x',\n   ...:                  hooks={'response': [f]})\n\nOut[2]: <Response [200]>\n";
    let (code, src) = issue_code(issue);
    assert_eq!(
        code,
        "import requests\nr = requests.get('http://x',\n                 hooks={'response': [f]})"
    );
    assert_eq!(src[0].0, Source::IPython);
    let issue = "Example:\n```python\nimport flask\napp = flask.Flask(__name__)\napp.register_blueprint(bp)\nTraceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nValueError: dotted name\n```\n";
    let (code, _) = issue_code(issue);
    assert_eq!(
        code,
        "import flask\napp = flask.Flask(__name__)\napp.register_blueprint(bp)"
    );
}

#[test]
fn shell_diffs_output_and_prose_are_not_python() {
    for (lang, text) in [
        ("", "$ pip install requests\n$ python t.py"),
        ("bash", "python -m pytest -x"),
        ("", "diff --git a/x.py b/x.py\n@@ -1 +1 @@\n-a\n+b"),
        ("", "--- a/x.py\n+++ b/x.py\n-    return a\n+    return b"),
        (
            "",
            "AttributeError: 'NoneType' object has no attribute 'group'",
        ),
        (
            "",
            "This happens every time I run it and it is very annoying to see.",
        ),
        ("text", "x = 1"),
        ("", "42"),
    ] {
        let b = Block {
            source: Source::Fenced,
            lang: lang.into(),
            line: 1,
            text: text.into(),
            closed: true,
        };
        assert_eq!(block_code(&b), None, "{text}");
    }
}

#[test]
fn indented_snippets_python2_prints_and_traceback_statements() {
    let issue =
        "Run this:\n\n    import requests\n    print requests.get(url).status_code\n\nand see.\n";
    let (code, src) = issue_code(issue);
    assert_eq!(
        code,
        "import requests\nprint(requests.get(url).status_code)"
    );
    assert_eq!(src, vec![(Source::Indented, 3)]);
    // Only a traceback: its top-level user statements.
    let issue = "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n    Permutation([[0, 1], [0, 1]])\n  File \"/usr/lib/python3/site-packages/sympy/combinatorics/permutations.py\", line 900, in __new__\n    raise ValueError('there were repeated elements.')\nValueError: there were repeated elements.\n";
    let (code, src) = issue_code(issue);
    assert_eq!(code, "Permutation([[0, 1], [0, 1]])");
    assert_eq!(src[0].0, Source::Traceback);
    // With other code, tracebacks add nothing.
    let both = format!("```python\nfrom sympy.combinatorics import Permutation\n```\n{issue}");
    assert_eq!(
        issue_code(&both).0,
        "from sympy.combinatorics import Permutation"
    );
}

/// sympy-20442's `joule`: a name one subpackage's `__init__.py` binds (an assignment in a module
/// it imports from, so no module defines it), re-exported by the subpackage holding it, is
/// imported from the outer one; one that two unrelated subpackages bind, or a test package
/// binds, is not; the top level's export wins.
#[test]
fn implied_imports_from_the_one_subpackage_that_exports_a_name() {
    let files = FileIndex::from_pairs(vec![
        (
            "sympy/__init__.py".into(),
            "from .core import Symbol\n".into(),
        ),
        (
            "sympy/core/__init__.py".into(),
            "class Symbol:\n    pass\n".into(),
        ),
        (
            "sympy/physics/units/__init__.py".into(),
            "from .definitions import joule, second, Symbol\nfrom .util import *\n".into(),
        ),
        (
            "sympy/physics/units/util.py".into(),
            "def convert_to(e, u):\n    pass\n".into(),
        ),
        (
            "sympy/physics/units/definitions/__init__.py".into(),
            "from .unit_definitions import joule, second\n".into(),
        ),
        (
            "sympy/physics/units/definitions/unit_definitions.py".into(),
            "joule = 1\nsecond = 2\n".into(),
        ),
        (
            "sympy/physics/mechanics/__init__.py".into(),
            "from .time import second\n".into(),
        ),
        (
            "sympy/physics/tests/__init__.py".into(),
            "from .helpers import helper\n".into(),
        ),
    ]);
    let n = RepoNames::from_repo(&files);
    assert_eq!(
        implied_imports(
            "convert_to(joule*second, joule)\nhelper()\nSymbol('x')\n",
            &n
        ),
        vec![
            "from sympy.physics.units.util import convert_to",
            "from sympy.physics.units import joule",
            "from sympy import Symbol",
        ]
    );
    assert!(implied_imports("from sympy import *\njoule\n", &n).is_empty());
}

/// A name the package does not export, that one library module alone defines at top level,
/// is imported from that module; one that two modules define, a test's, a private
/// module's, or one used after a star import, is not. Letters stay sympy's, `u` included.
#[test]
fn implied_imports_from_the_one_module_that_defines_a_name() {
    let files = FileIndex::from_pairs(vec![
        ("sympy/__init__.py".into(), "from .core import *\n".into()),
        (
            "sympy/core/__init__.py".into(),
            "def S():\n    pass\n".into(),
        ),
        (
            "sympy/utilities/iterables.py".into(),
            "def multiset(s):\n    pass\ndef uniq(s):\n    pass\nclass Both:\n    pass\n".into(),
        ),
        (
            "sympy/polys/misc.py".into(),
            "class Both:\n    pass\n".into(),
        ),
        (
            "sympy/utilities/tests/test_iterables.py".into(),
            "def helper():\n    pass\ndef uniq(s):\n    pass\n".into(),
        ),
        (
            "sympy/_private.py".into(),
            "def hidden():\n    pass\n".into(),
        ),
        ("sympy/abc.py".into(), "u = 1\n".into()),
    ]);
    let n = RepoNames::from_repo(&files);
    assert_eq!(
        implied_imports(
            "multiset('THISTLE')\nuniq(f)\nBoth()\nhelper()\nhidden()\nS()\nu + 1\n",
            &n
        ),
        vec![
            "from sympy.utilities.iterables import multiset",
            "from sympy.utilities.iterables import uniq",
            "from sympy.abc import f",
            "from sympy import S",
            "from sympy.abc import u",
        ]
    );
    assert_eq!(
        implied_imports("from sympy import *\nmultiset('a')\n", &n),
        Vec::<String>::new()
    );
    // Inline code in prose counts only names the packages export.
    assert!(reproduction("Calling `multiset('ab')` is slow.", &n).is_none());
    assert!(reproduction("Calling `S(2) + 1` is slow.", &n).is_some());
    assert_eq!(
        library_module("src/_pytest/python.py", &["_pytest".to_string()].into()),
        Some("_pytest.python".to_string())
    );
    assert_eq!(
        library_module("sympy/core/__init__.py", &["sympy".to_string()].into()),
        Some("sympy.core".to_string())
    );
    assert_eq!(
        library_module("setup.py", &["sympy".to_string()].into()),
        None
    );
}

#[test]
fn implied_imports_skip_bound_names_and_star_imports() {
    let n = names();
    let code = "import os\ndef f(a, b=Rational):\n    return a\nfor k, v in things:\n    pass\nx = Symbol('x')\nnp.array([1])\nsys.exit(0)\nlatex(x)\nisympy.main()\n";
    assert_eq!(
        implied_imports(code, &n),
        vec![
            "from sympy import Rational",
            "from sympy import Symbol",
            "import numpy as np",
            "import sys",
            "from sympy import latex",
            "import isympy"
        ]
    );
    assert!(implied_imports("from sympy import *\nx = Symbol('x')\n", &n).is_empty());
    // Letters the issue never binds come from the symbol module, after a star import too;
    // a bound letter, or a repository without one, gets nothing.
    assert_eq!(
        implied_imports(
            "from sympy import *\ny = 2\nexpand((x + y)**2 * alpha)\n",
            &n
        ),
        vec!["from sympy.abc import x", "from sympy.abc import alpha"]
    );
    let without = RepoNames {
        symbols: None,
        ..n.clone()
    };
    assert!(implied_imports("from sympy import *\nexpand(x)\n", &without).is_empty());
    assert!(implied_imports(
        "class A(Base):\n    def m(self):\n        return self.y\nobj.Symbol = 1\ncall(Symbol=2)\n",
        &n
    )
    .is_empty());
    // seaborn's objects interface by its conventional alias.
    assert_eq!(
        implied_imports("so.Plot([1], [2]).add(so.Line())\n", &n),
        vec!["import seaborn.objects as so"]
    );
}

/// An import binds only what follows it (xarray-4493 uses `xr` in its first block and
/// imports it in its second); an assignment or definition binds wherever it is, and a star
/// import stops export imports only for the uses after it.
#[test]
fn a_name_used_before_the_issue_imports_it_is_imported_first() {
    let n = names();
    assert_eq!(
        implied_imports(
            "foo = xr.DataArray(np.ones(3))\nimport numpy as np\nimport xarray as xr\nxr.Dataset()\n",
            &n
        ),
        vec!["import xarray as xr", "import numpy as np"]
    );
    assert!(implied_imports("import xarray as xr\nxr.Dataset()\n", &n).is_empty());
    assert!(implied_imports("def f():\n    return g()\ndef g():\n    return 1\n", &n).is_empty());
    assert_eq!(
        implied_imports(
            "x = Symbol('x')\nfrom sympy import *\ny = Rational(1, 2)\n",
            &n
        ),
        vec!["from sympy import Symbol"]
    );
}

#[test]
fn statements_with_multiline_strings_are_left_unwrapped() {
    let r = reproduction(
        "```python\ns = '''a\nb'''\nlen(s)\n```",
        &RepoNames::default(),
    )
    .unwrap();
    assert!(
        r.script
            .contains("\ns = '''a\nb'''\ntry:\n    _dei_display(len(s))\n"),
        "{}",
        r.script
    );
}

/// django-11001-like (Trac export): code lines inside prose, with a tab-indented body.
#[test]
fn code_inside_prose_without_markup() {
    let issue = "Description\n\t\nHi.\nThe bug is in SQLCompiler.get_order_by(), around this line:\nwithout_ordering = self.ordering_parts.search(sql).group(1)\nAs a fix:\nsql_oneline = ' '.join(sql.split('\\n'))\ndef render(self, context):\n\turl = self.url(context)\n\treturn url\nOutput:\n    bell(oo)\nif broken:\nThanks.\n";
    let (code, src) = issue_code(issue);
    assert_eq!(
        code,
        "without_ordering = self.ordering_parts.search(sql).group(1)\nsql_oneline = ' '.join(sql.split('\\n'))\ndef render(self, context):\n    url = self.url(context)\n    return url"
    );
    assert_eq!(src, vec![(Source::Loose, 5)]);
}

/// pylint-7080: an `ini` block and a shell block, no Python. The lines of a fenced block
/// are not prose, so `[tool.pylint.MASTER]` is not read as a list display.
#[test]
fn fenced_blocks_of_other_languages_are_not_loose_code() {
    let issue = "Bug\n\n```ini\n[tool.pylint.MASTER]\nignore_paths = [\"^src/gen/.*$\"]\n```\n\n```shell\npylint --recursive=y src/\n```\nThen run(x) fails.\n";
    assert_eq!(issue_code(issue).0, "");
    let outside = format!("{issue}\nresult = compute(3)\n");
    assert_eq!(issue_code(&outside).0, "result = compute(3)");
    assert_eq!(issue_code(&outside).1, vec![(Source::Loose, 13)]);
    // A tilde fence, and a backtick line inside it, do not end it early.
    let tilde = "Bug\n\n~~~toml\n[tool.x]\n```\ny = [1]\n~~~\nz = g(2)\n";
    assert_eq!(issue_code(tilde).0, "z = g(2)");
}

/// What tree-sitter accepts and CPython does not is dropped: an empty block, a label that
/// reads as an annotation, a statement indented at top level, a lone operator.
#[test]
fn statements_cpython_would_refuse_are_dropped() {
    let b = |t: &str| Block {
        source: Source::Fenced,
        lang: "python".into(),
        line: 1,
        text: t.into(),
        closed: true,
    };
    assert_eq!(
        block_code(&b("x = f()\nif not x:\ny = 2\n")).as_deref(),
        Some("x = f()\ny = 2")
    );
    assert_eq!(
        block_code(&b("a = 1\nb = 2\nOutput:\n    bell(oo)\n")).as_deref(),
        Some("a = 1\nb = 2")
    );
    assert_eq!(
        block_code(&b("a = 1\nb = 2\nc = 3\n>\n")).as_deref(),
        Some("a = 1\nb = 2\nc = 3")
    );
    assert_eq!(
        block_code(&b("x: int = 1\n")).as_deref(),
        Some("x: int = 1"),
        "an annotated assignment is code"
    );
    assert_eq!(
        block_code(&b("a = 1\nb = 2\n`a`\n")).as_deref(),
        Some("a = 1\nb = 2"),
        "Python 2 backticks"
    );
}

/// A library's source pasted into the issue (sympy-12454, -13177, -24152): CPython
/// refuses the whole script for a `return` outside a function or a `break` outside a
/// loop, so no statement of the reproduction would run; a label over the lines it names
/// reads as an annotation whose type is on the next line (sympy-22840's `ccode:`).
#[test]
fn statements_that_would_stop_the_script_compiling_are_dropped() {
    let b = |t: &str| Block {
        source: Source::Fenced,
        lang: "python".into(),
        line: 1,
        text: t.into(),
        closed: true,
    };
    let kept = |t: &str| block_code(&b(t));
    assert_eq!(
        kept("a = f(1)\nif a == b:\n    return S.Zero\nprint(a)\n").as_deref(),
        Some("a = f(1)\nprint(a)")
    );
    assert_eq!(
        kept("x = [1]\nfor i in x:\n    print(i)\nbreak\nprint(x)\n").as_deref(),
        Some("x = [1]\nfor i in x:\n    print(i)\nprint(x)")
    );
    assert_eq!(
        kept("s = g(2)\nyield s\nawait s\nprint(s)\n").as_deref(),
        Some("s = g(2)\nprint(s)")
    );
    // Where they belong they stay: in a function, a loop, a lambda; a loop's `break`
    // inside a function, and a `return` in a loop in a function.
    let fine = "def f(x):\n    for i in x:\n        if i:\n            break\n        continue\n    return x\ng = lambda: (yield)\nwhile True:\n    break\nasync def h():\n    await f([])\n";
    assert_eq!(kept(fine).as_deref(), Some(fine.trim_end()));
    // A class body is not a function's: `return` there is refused.
    assert_eq!(
        kept("a = 1\nb = 2\nclass C:\n    return 1\n").as_deref(),
        Some("a = 1\nb = 2")
    );
    assert_eq!(
        kept("a = h(1)\nccode:\n    x0[0] = a[0]\nx1 = a[1]\n").as_deref(),
        Some("a = h(1)\nx1 = a[1]")
    );
}

#[test]
fn no_code_no_reproduction() {
    assert!(reproduction("The docs say X but Y happens. Please fix.", &names()).is_none());
}

/// The script runs: exceptions reported per statement, the session goes on, bare values
/// printed, the summary line last, exit status 1 after a failure.
#[test]
fn the_script_runs_like_a_repl_session() {
    let issue = "```python\n>>> d = {'a': 1}\n>>> d['a']\n1\n>>> d['b']\nKeyError: 'b'\n>>> [k for k in d]\n['a']\n>>> int('x')\n```\n";
    let r = reproduction(issue, &RepoNames::default()).unwrap();
    let Some(out) = run_python("the_script_runs_like_a_repl_session", &r.script, &[]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "1\n[dei-repro] statement 3 raised KeyError: 'b'\n['a']\n[dei-repro] statement 5 raised ValueError: invalid literal for int() with base 10: 'x'\n[dei-repro] first exception: KeyError\n"
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        crate::exec::outcome::final_exception(&stdout).as_deref(),
        Some("KeyError")
    );
}

/// A notebook cell's last value is shown as Jupyter shows it: its LaTeX form printed, its
/// image form computed (an exception there is the statement's). Other bare values, a
/// session's and a `print` call's, are shown by `repr` only.
#[test]
fn a_cells_last_value_is_displayed_like_a_notebook() {
    let issue = "The plot fails:\n```python\nclass P:\n    def __repr__(self):\n        return 'P'\n    def _repr_latex_(self):\n        return '$p$'\n    def _repr_html_(self):\n        import dei_no_such_module\n    def _repr_png_(self):\n        raise TypeError('cannot draw')\nP()\nP()\n```\nIn a shell:\n```\n>>> P()\nP\n```\n```python\nprint(1)\n```\n";
    let r = reproduction(issue, &RepoNames::default()).unwrap();
    assert_eq!(
        r.script.matches("_dei_display(P())").count(),
        1,
        "{}",
        r.script
    );
    assert_eq!(
        r.script.matches("_dei_show(P())").count(),
        2,
        "{}",
        r.script
    );
    assert!(r.script.contains("_dei_show(print(1))"), "{}", r.script);
    // A script with no cell's value to show is as it was.
    let plain = reproduction("```python\n>>> P()\n```\n", &RepoNames::default()).unwrap();
    assert!(!plain.script.contains("_dei_display"), "{}", plain.script);
    let Some(out) = run_python(
        "a_cells_last_value_is_displayed_like_a_notebook",
        &r.script,
        &[],
    ) else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "P\nP\n_repr_latex_:\n$p$\n[dei-repro] statement 3 raised TypeError: cannot draw\nP\n1\n[dei-repro] first exception: TypeError\n"
    );
}

/// Pinned, the script prints the same under any hash seed: it starts again under seed 0
/// and seeds `random`; unpinned, a set of strings prints in another order under another
/// seed. NumPy is seeded only for code that draws from it; a tool's script is not pinned.
/// sympy-18532 motivated it: an agent's script printed `expr.atoms()`, a set, alike in both
/// base runs and differently with each candidate.
#[test]
fn a_pinned_reproduction_prints_alike_under_any_hash_seed() {
    let issue =
        "```python\nimport random\nrandom.random()\nlist({'w%d' % i for i in range(30)})\n```\n";
    let r = reproduction(issue, &RepoNames::default()).unwrap();
    let pin = pinned(&r.script).unwrap();
    assert!(!pin.contains("_dei_numpy"), "{pin}");
    let np = reproduction("```python\nnp.random.rand(3)\n```\n", &RepoNames::default()).unwrap();
    assert!(
        pinned(&np.script).is_some_and(|p| p.contains("_dei_numpy.random.seed(0)")),
        "{}",
        np.script
    );
    assert_eq!(pinned("print(1)\n"), None);
    // Pinned once: not again, and said so.
    assert!(is_pinned(&pin) && !is_pinned(&r.script));
    assert_eq!(pinned(&pin), None);
    let run = |script: &str, seed: &str| {
        run_python(
            "a_pinned_reproduction_prints_alike_under_any_hash_seed",
            script,
            &[("PYTHONHASHSEED", seed)],
        )
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let Some(a) = run(&r.script, "1") else {
        return;
    };
    assert_ne!(Some(a), run(&r.script, "2"));
    let p1 = run(&pin, "1").unwrap();
    assert!(
        p1.contains("'w0'") && p1.ends_with("no exception\n"),
        "{p1}"
    );
    assert_eq!(Some(p1), run(&pin, "2"));
}

/// A submodule the code reaches through its package's attributes is imported, as it was in
/// the reporter's session (sphinx-8713's `sphinx.ext.napoleon.NumpyDocstring`), unless the
/// code imports it or its package's `__init__.py` names it (sympy binds `printing.ccode`
/// to a function; importing `printing/ccode.py` would rebind it to the module).
#[test]
fn a_submodule_reached_through_attributes_is_imported() {
    let tree: Vec<(&str, &str)> = vec![
        ("pkg/__init__.py", "from . import printing\n"),
        ("pkg/ext/__init__.py", "\"\"\"Extensions.\"\"\"\n"),
        (
            "pkg/ext/nap/__init__.py",
            "def Doc(s):\n    return 'doc: ' + s\n",
        ),
        ("pkg/printing/__init__.py", "from .ccode import ccode\n"),
        ("pkg/printing/ccode.py", "def ccode(x):\n    return 'c'\n"),
        ("pkg/tests/test_nap.py", "def test():\n    pass\n"),
    ];
    let files = FileIndex::from_pairs(
        tree.iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
    );
    let n = RepoNames::from_repo(&files);
    let code = "import pkg\nprint(pkg.ext.nap.Doc('x'))\nprint(pkg.printing.ccode(1))\n";
    assert_eq!(implied_imports(code, &n), vec!["import pkg.ext.nap"]);
    // Imported by the code itself, reached through a call, or not the repository's.
    for code in [
        "import pkg.ext.nap\npkg.ext.nap.Doc('x')\n",
        "from pkg.ext.nap import Doc\npkg.ext.nap.Doc('x')\n",
        "import pkg\nf().ext.nap.Doc('x')\n",
        "import os\nos.path.join('a')\n",
    ] {
        assert!(
            implied_imports(code, &n).iter().all(|l| !l.contains("nap")),
            "{code}: {:?}",
            implied_imports(code, &n)
        );
    }
    let r = reproduction(&format!("```python\n{code}```\n"), &n).unwrap();
    let Some(out) = run_python_with(
        "a_submodule_reached_through_attributes_is_imported",
        &r.script,
        &[],
        &tree,
    ) else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "doc: x\nc\n[dei-repro] no exception\n",
        "{}",
        r.script
    );
}

/// Run `script` with the machine's python3 in a scratch folder, with these variables set;
/// `None`, said as `SKIPPED <test>: …` where a plain `cargo test` shows it (the stderr
/// handle, which the harness does not capture), when there is no python3.
fn run_python(test: &str, script: &str, vars: &[(&str, &str)]) -> Option<std::process::Output> {
    run_python_with(test, script, vars, &[])
}

/// [`run_python`], with these files (relative path, text) written beside the script.
fn run_python_with(
    test: &str,
    script: &str,
    vars: &[(&str, &str)],
    files: &[(&str, &str)],
) -> Option<std::process::Output> {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let path = dir.path().join("repro.py");
    std::fs::write(&path, script).unwrap();
    let out = std::process::Command::new("python3")
        .arg(&path)
        .envs(vars.iter().copied())
        .current_dir(dir.path())
        .output();
    if out.is_err() {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED {test}: no python3 on PATH"
        );
    }
    out.ok()
}

#[test]
fn a_note_after_the_code_on_a_prompt_line_is_cut_and_the_code_kept() {
    // sympy-22005's shape: the second call is the one the issue is about.
    let issue = "```python\n>>> solve((x - 1,), x, y)\nTraceback (most recent call last):\n...\nNotImplementedError:\n>>> solve((y - 1,), x, y)  <--- this is not handled correctly\n[(1,)]\nIn [3]: solve(z)  <== and this\n>>> a  <- 1\n>>> for k in ks:  <-- here\n```\n";
    let r = reproduction(issue, &names()).unwrap();
    let lines: Vec<&str> = r.code.lines().collect();
    assert!(lines.contains(&"solve((y - 1,), x, y)"), "{}", r.code);
    assert!(lines.contains(&"solve(z)"), "{}", r.code);
    // Code that parses with its arrow is code (`a < -1`), kept whole.
    assert!(lines.contains(&"a  <- 1"), "{}", r.code);
    // Where the code before the arrow does not parse alone, the line is left as it is, and
    // dropped as a line that does not parse.
    assert!(
        !r.code.contains("for k") && !r.code.contains("this is"),
        "{}",
        r.code
    );
}

#[test]
fn a_module_the_documents_name_in_a_package_moves_into_it_and_nitpicky_follows_the_issue() {
    // sphinx-8627's shape.
    let issue = "Simple `index.rst`\n```\nHello\n=====\n\n.. automodule:: helloworld.helloworld\n.. autoclass:: pkg.sub.Thing\n```\n\nSimple `helloworld.py`\n```\nimport struct\n```\n`sub.py`:\n```\nclass Thing: pass\n```\nCommand line:\n```\npython3 -m sphinx -b html docs/ doc-out -nvWT\n```\n";
    let files = sphinx_project(issue).unwrap();
    let paths: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        paths,
        [
            "index.rst",
            "helloworld/helloworld.py",
            "pkg/sub.py",
            "helloworld/__init__.py",
            "pkg/__init__.py"
        ]
    );
    assert_eq!(files[1].1, "import struct\n");
    let mut names = names();
    names.modules.insert("sphinx".into());
    let r = reproduction(issue, &names).unwrap();
    assert!(
        r.script.contains("\"-E\", \"-n\", _dei_src"),
        "{}",
        r.script
    );
    // Without `-n` on the issue's command line, the build is not nitpicky; a module the
    // documents name at the root stays there.
    let plain = issue
        .replace("-nvWT", "-vWT")
        .replace("helloworld.helloworld", "helloworld");
    let files = sphinx_project(&plain).unwrap();
    assert!(files.iter().any(|(n, _)| n == "helloworld.py"));
    assert!(!files.iter().any(|(n, _)| n.starts_with("helloworld/")));
    let r = reproduction(&plain, &names).unwrap();
    assert!(r.script.contains("\"-E\", _dei_src"), "{}", r.script);
}

/// sphinx-11445's shape: the documents shown in named blocks and written by `echo -e` too (the
/// blocks win), `rst_prolog` appended to the project's `conf.py` by `echo -e` alone; a file the
/// shell writes outside the project's folder stays out.
#[test]
fn a_conf_py_the_issues_shell_writes_joins_its_sphinx_project() {
    let issue = "```bash\n$ sphinx-quickstart docs\n$ echo -e 'Welcome\\n=======\\n' > docs/index.rst\n$ echo -e 'rst_prolog = \"\"\"\\n.. |psf| replace:: PSF\\n\"\"\"\\n' >> docs/conf.py\n$ echo x > other/notes.txt\n```\n\n`docs/index.rst`:\n\n```rst\nWelcome\n=======\n\n.. toctree::\n\n   mypackage\n```\n";
    let files = sphinx_project(issue).unwrap();
    let paths: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(paths, ["docs/index.rst", "docs/conf.py"]);
    assert!(files[0].1.contains("toctree"), "{}", files[0].1);
    assert_eq!(
        files[1].1,
        "rst_prolog = \"\"\"\n.. |psf| replace:: PSF\n\"\"\"\n\n"
    );
    let mut names = names();
    names.modules.insert("sphinx".into());
    let r = reproduction(issue, &names).unwrap();
    assert!(r.script.contains("rst_prolog"), "{}", r.script);
    assert!(!r.script.contains("templates_path"), "{}", r.script);
    // sphinx-7686's shape: a template shown under `_templates/` is looked for there.
    let with_template = format!(
        "{issue}\n```\n# docs/_templates/autosummary/module.rst\n{{{{ fullname }}}}\n```\n"
    );
    let r = reproduction(&with_template, &names).unwrap();
    assert!(
        r.script.contains("templates_path = ['_templates']"),
        "{}",
        r.script
    );
}

/// sphinx-8506's shape: reST markup and no code: the markup is the root document of a project
/// that is built; with Python code the code is the reproduction, and outside Sphinx markup
/// alone is none; a block tagged as another language or starting with prose is not markup.
#[test]
fn an_issue_with_only_rest_markup_builds_it_as_a_sphinx_project() {
    let issue = "The docs include this:\n```\n.. option:: [enable=]PATTERN\n\n   Immediately enable events\n```\nSphinx 3.2 complains:\n```\nWarning, treated as error:\n../../docs/qemu.rst.inc:4:Malformed option description '[enable=]PATTERN', should look like \"opt\"\n```\n```rst\nSee :option:`[enable=]PATTERN`.\n```\n```text\n.. note:: not markup here\n```\n";
    let files = sphinx_markup_project(issue).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0],
        (
            "index.rst".to_string(),
            "Example\n=======\n\n.. option:: [enable=]PATTERN\n\n   Immediately enable events\n\nSee :option:`[enable=]PATTERN`.\n".to_string()
        )
    );
    let mut names = names();
    names.modules.insert("sphinx".into());
    let r = reproduction(issue, &names).unwrap();
    assert!(r.script.contains("sphinx.cmd.build"), "{}", r.code);
    assert!(r.code.starts_with("# index.rst\nExample"), "{}", r.code);
    assert_eq!(r.sources, vec![(Source::Fenced, 3)]);
    // Code comes first; outside Sphinx, markup is no reproduction.
    let with_code = format!("{issue}```python\nprint(1)\n```\n");
    assert!(!reproduction(&with_code, &names)
        .unwrap()
        .script
        .contains("sphinx.cmd.build"));
    assert!(reproduction(issue, &self::names()).is_none());
    assert!(sphinx_markup_project("```\nWarning: x\n```\n").is_none());
}

#[test]
fn code_to_document_in_an_autodoc_issue_is_built_as_a_sphinx_project() {
    // sphinx-7738's shape: the module is named by the directive the prose gives.
    let issue = "Attribute `hello_` shows up escaped with napoleon.\n\nempty `__init__.py`\n`a.py` contains\n```python\nclass A:\n    \"\"\"\n    Attributes\n    ----------\n    hello_: int\n        hi\n    \"\"\"\n    pass\n```\nrun `sphinx-quickstart`\nadd `'sphinx.ext.autodoc', 'sphinx.ext.napoleon'` to extensions in conf.py.\nadd `.. autoclass:: a.A` to index.rst\n";
    let files = sphinx_code_project(issue).unwrap();
    assert_eq!(
        files[0],
        (
            "index.rst".to_string(),
            "Example\n=======\n\n.. autoclass:: a.A\n".to_string()
        )
    );
    assert_eq!(files[1].0, "a.py");
    assert!(files[1].1.starts_with("class A:\n"), "{}", files[1].1);
    assert_eq!(
        files.len(),
        2,
        "no settings written inline: no conf.py of its own"
    );
    let mut names = names();
    names.modules.insert("sphinx".into());
    let r = reproduction(issue, &names).unwrap();
    assert!(r.script.contains("_dei_build"), "{}", r.script);
    assert!(
        r.script
            .contains("\\\"sphinx.ext.autodoc\\\", \\\"sphinx.ext.napoleon\\\""),
        "{}",
        r.script
    );
    // sphinx-10451's shape: no directive, a setting written inline; the module is documented
    // whole, its private class and `__init__` too.
    let issue = "Consider this\n```python\nclass _Documented:\n    \"\"\"Class docstring.\"\"\"\n\n    def __init__(self, x: int, *args: int) -> None:\n        \"\"\"Init docstring.\"\"\"\n```\nwhen using the autodoc extension and the setting `autodoc_typehints = \"description\"`.\n\nThe current output is\n```\nClass docstring.\n```\n";
    let files = sphinx_code_project(issue).unwrap();
    assert!(
        files[0].1.contains(
            ".. automodule:: example\n   :private-members:\n   :special-members: __init__\n"
        ),
        "{:?}",
        files[0]
    );
    assert_eq!(files[1].0, "example.py");
    assert_eq!(
        files[2],
        (
            "conf.py".to_string(),
            "autodoc_typehints = \"description\"\n".to_string()
        )
    );
    // Code that runs something is a script, not a module to document; an issue that is not
    // about autodoc gets no project.
    assert!(sphinx_code_project(&issue.replace(
        "\"\"\"Init docstring.\"\"\"\n```",
        "\"\"\"Init docstring.\"\"\"\nprint(_Documented(1))\n```"
    ))
    .is_none());
    assert!(sphinx_code_project(&issue.replace("autodoc", "napoleon")).is_none());
}

#[test]
fn values_a_session_showed_pretty_printed_are_drawn_so_too() {
    // sympy-20639's shape (`-1___ ╲╱ π`; sympy-14308's `Out[3]:` too): the session's output is
    // a pretty-printed drawing.
    let issue = "```\nIn [52]: Rational(1, 2)\nOut[52]:\n1\n─\n2\n```\n";
    let mut names = names();
    let r = reproduction(issue, &names).unwrap();
    assert!(r.script.contains("_dei_pretty"), "{}", r.script);
    // sympy's `pretty` stands in: a module beside the script.
    let fake = "def pretty(value, use_unicode=False):\n    return 'drawn ' + str(value)\n";
    let local = "class Rational:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n    def __repr__(self):\n        return '%d/%d' % (self.a, self.b)\n";
    let script = r.script.replace(
        "from sympy import Rational",
        "from rational import Rational",
    );
    if let Some(out) = run_python_with(
        "values_a_session_showed_pretty_printed_are_drawn_so_too",
        &script,
        &[],
        &[("sympy.py", fake), ("rational.py", local)],
    ) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("1/2\ndrawn 1/2\n"), "{text}");
    }
    // Without a drawing in the issue, or outside sympy, values are shown by `repr` alone.
    let plain = "```\nIn [52]: Rational(1, 2)\nOut[52]: 1/2\n```\n";
    assert!(!reproduction(plain, &names)
        .unwrap()
        .script
        .contains("_dei_pretty"));
    names.modules.remove("sympy");
    assert!(reproduction(issue, &names).is_none_or(|r| !r.script.contains("_dei_pretty")));
}

#[test]
fn values_a_notebook_rendered_as_latex_are_written_so_too() {
    // sympy-13971's shape: a notebook rendered the value's LaTeX, the code never asks for it.
    let issue = "```\nimport sympy as sp\nn = sp.Symbol('n')\nsp.init_printing()\nsp.SeqFormula(n**2, (n,0,sp.oo))\n```\nThe Jupyter rendering is:\n\n`\\left\\[0, 1, 4, 9, \\ldots\\right\\]`\n";
    let mut names = names();
    let r = reproduction(issue, &names).unwrap();
    assert!(r.script.contains("_dei_latex"), "{}", r.script);
    // sympy's `latex` stands in: a package beside the script.
    let fake = "def latex(value):\n    return r'\\left\\[%d\\right\\]' % value.f\ndef init_printing():\n    pass\ndef Symbol(name):\n    return 3\nclass SeqFormula:\n    def __init__(self, f, r):\n        self.f = f\n    def __repr__(self):\n        return 'SeqFormula(%d)' % self.f\noo = 0\n";
    if let Some(out) = run_python_with(
        "values_a_notebook_rendered_as_latex_are_written_so_too",
        &r.script,
        &[],
        &[("sympy.py", fake)],
    ) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text,
            "SeqFormula(9)\n\\left\\[9\\right\\]\n[dei-repro] no exception\n"
        );
    }
    // The code prints its LaTeX itself, the issue shows none, the code never calls
    // `init_printing`, or the repository is not sympy: values are shown by `repr` alone.
    let asks = issue.replace(
        "sp.SeqFormula(n**2, (n,0,sp.oo))",
        "sp.latex(sp.SeqFormula(n**2, (n,0,sp.oo)))",
    );
    let none = issue.replace("\\left\\[0, 1, 4, 9, \\ldots\\right\\]", "[0, 1, 4, 9]");
    // Code that asks for no rendering (sympy-21171's traceback shows LaTeX its printer wrote).
    let plain = issue.replace("sp.init_printing()\n", "");
    for other in [&asks, &none, &plain] {
        assert!(
            !reproduction(other, &names)
                .unwrap()
                .script
                .contains("_dei_latex"),
            "{other}"
        );
    }
    names.modules.remove("sympy");
    assert!(reproduction(issue, &names).is_none_or(|r| !r.script.contains("_dei_latex")));
}

/// astropy-14365's shape: the file the issue types into `cat` is written before its `>>>`
/// session reads it, so the run reaches the reader's own error instead of stopping at a
/// missing file with every candidate; a file the tree has already is left as it is.
#[test]
fn the_file_the_issue_types_in_is_written_before_its_code_reads_it() {
    let issue = "Create a QDP file:\n```\n> cat > test.qdp\nread serr 1 2 \n1 0.5 1 0.5\n<EOF>\n\n > python\n>>> from qdp import read\n>>> read('test.qdp')\nTraceback (most recent call last):\nValueError: Unrecognized QDP line: read serr 1 2\n>>> open('setup.cfg').read()\n```\nsetup.cfg:\n```ini\n[x]\n```\n";
    let r = reproduction(issue, &RepoNames::default()).unwrap();
    assert!(
        r.code.starts_with(
            "# test.qdp (written before the code runs)\nread serr 1 2 \n1 0.5 1 0.5\n"
        ),
        "{}",
        r.code
    );
    let reader = "def read(name):\n    for line in open(name):\n        if line.split()[0].isupper() or not line[0].isalpha():\n            continue\n        raise ValueError('Unrecognized QDP line: %s' % line.strip())\n    return 'read'\n";
    let Some(out) = run_python_with(
        "the_file_the_issue_types_in_is_written_before_its_code_reads_it",
        &r.script,
        &[],
        &[("qdp.py", reader), ("setup.cfg", "[tree]\n")],
    ) else {
        return;
    };
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[dei-repro] statement 2 raised ValueError: Unrecognized QDP line: read serr 1 2\n'[tree]\\n'\n[dei-repro] first exception: ValueError\n",
        "{}",
        r.script
    );
    // Without the file the same script stops where every candidate would.
    let plain = r.script.replace("test.qdp\", \"read", "gone.qdp\", \"read");
    let out = run_python_with("-", &plain, &[], &[("qdp.py", reader)]).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("raised FileNotFoundError"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The reproduction says which statements are imports (those `dei` adds among them) and which
/// names the code never binds: what tells a library excerpt (flask-4992's `app.config…` with
/// no `app`) from a reproduction once it has run.
#[test]
fn a_reproduction_names_its_imports_and_the_names_it_never_binds() {
    let issue = "```python\napp.config.from_file(\"config.toml\", tomllib.load)\n```\n\n```python\nwith open(os.path.join(app.config.root_path, \"c.toml\"), \"rb\") as file:\n    conf = symbols(file.read())\n```\n";
    let r = reproduction(issue, &names()).unwrap();
    assert_eq!(r.imports_added, ["import os", "from sympy import symbols"]);
    assert_eq!(r.statements, 4);
    assert_eq!(r.import_statements, [1, 2]);
    // `file` and `conf` are bound; `os` and `symbols` imported.
    assert_eq!(r.unbound, ["app", "tomllib"]);
    // After a star import a name may come from it: not counted as the code's own.
    let star = "```python\nfrom sympy import *\nfoo(1)\n```\n";
    let r = reproduction(star, &names()).unwrap();
    assert_eq!(r.import_statements, [1]);
    assert!(r.unbound.is_empty(), "{:?}", r.unbound);
}
