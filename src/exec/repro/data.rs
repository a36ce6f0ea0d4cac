//! Files the issue's code reads, as the issue shows them: a reporter who writes "create this
//! file, then run" shows the file in a shell (`cat > test.qdp` with its lines after it, `echo …
//! > data.txt`) or in a block named after it (`config.toml:` above a fence). The code then
//! opens it by name (`Table.read('test.qdp', format='ascii.qdp')`); without the file every
//! run stops at the same `FileNotFoundError`, with every candidate alike.

use super::project::{line_before_fence, py_literal, relative_path};
use super::text::{blocks, Source};
use crate::model::repo::shell_words;

/// Lines that end a file typed into `cat > NAME` without a here-document marker: the end of
/// input as reporters write it.
const END_OF_INPUT: [&str; 6] = ["EOF", "<EOF>", "^D", "<Ctrl-D>", "<ctrl-d>", "<CTRL-D>"];

/// The files `code` reads that the issue shows: (name, text), in the order shown, a name
/// once. Only names `code` writes as a string literal (`'test.qdp'`), so an issue whose code
/// opens nothing it shows gets no files written.
pub(super) fn data_files(issue: &str, code: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    let lines: Vec<&str> = issue.lines().collect();
    for b in blocks(issue)
        .into_iter()
        .filter(|b| b.source == Source::Fenced)
    {
        let found = shell_files(&b.text).into_iter().chain(
            // A block named by the line before its fence (`test.qdp:`).
            line_before_fence(&lines, &b)
                .and_then(data_name_line)
                .map(|n| (n, format!("{}\n", b.text.trim_end()))),
        );
        for (name, text) in found {
            if !files.iter().any(|(n, _)| *n == name) && names_literal(code, &name) {
                files.push((name, text));
            }
        }
    }
    files
}

/// Python lines that write `files` (name, text) in the working folder before the issue's code
/// runs, folders as needed; a file the tree already has is left as it is (the issue's
/// `setup.cfg` never replaces the repository's). Empty without files.
pub(super) fn writer(files: &[(String, String)]) -> String {
    files_writer(
        "Files the issue shows its code reading, written as it shows them.",
        files,
    )
}

/// [`writer`] for the files an agent's script reads that its own candidate creates beside it
/// (SWE-agent's `replicate_issue.py` loading its `config.toml`): every tree's run of the
/// script starts with them, so only the code under it differs.
pub(super) fn companion_writer(files: &[(String, String)]) -> String {
    files_writer(
        "Files the script reads, written as its author's candidate creates them.",
        files,
    )
}

fn files_writer(comment: &str, files: &[(String, String)]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let list: String = files
        .iter()
        .map(|(n, t)| format!("    ({}, {}),\n", py_literal(n), py_literal(t)))
        .collect();
    format!(
        r#"# {comment}
for _dei_name, _dei_text in [
{list}]:
    if not _dei_os.path.exists(_dei_name):
        if _dei_os.path.dirname(_dei_name) and not _dei_os.path.isdir(_dei_os.path.dirname(_dei_name)):
            _dei_os.makedirs(_dei_os.path.dirname(_dei_name))
        with open(_dei_name, "w") as _dei_f:
            _dei_f.write(_dei_text)
"#
    )
}

/// `files` as the code they come before is shown: each under a `# name (written before the
/// {what} runs)` line.
pub(super) fn shown_before(files: &[(String, String)], what: &str) -> String {
    files
        .iter()
        .map(|(n, t)| format!("# {n} (written before the {what} runs)\n{t}"))
        .collect()
}

/// Whether `code` holds `name` as a whole string literal (`'test.qdp'`, `"test.qdp"`).
pub(super) fn names_literal(code: &str, name: &str) -> bool {
    ['\'', '"']
        .iter()
        .any(|q| code.contains(&format!("{q}{name}{q}")))
}

/// A relative file name: letters, digits, `._-/`, with an extension, no `..` and no empty
/// part.
fn file_name(t: &str) -> Option<String> {
    let ok = !t.is_empty()
        && t.rsplit('/')
            .next()
            .is_some_and(|base| base.contains('.') && !base.starts_with('.'))
        && relative_path(t);
    ok.then(|| t.to_string())
}

/// A short line that names a file, as code or bold, with a colon after (`test.qdp:`,
/// ``Contents of `data.csv`:``): at most four words, the last the name.
fn data_name_line(line: &str) -> Option<String> {
    let t = line.trim().trim_end_matches(':');
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.is_empty() || words.len() > 4 || !line.trim_end().ends_with(':') {
        return None;
    }
    let last = words[words.len() - 1]
        .trim_end_matches(':')
        .trim_matches(|c| c == '`' || c == '*' || c == '"' || c == '\'');
    file_name(last)
}

/// A shell prompt a reporter's line may start with (`$ `, `> `, `% `), stripped.
fn unprompted(line: &str) -> &str {
    let t = line.trim_start();
    for p in ["$", ">", "%"] {
        if let Some(rest) = t.strip_prefix(p) {
            if rest.starts_with(' ') {
                return rest.trim_start();
            }
        }
    }
    t
}

/// The files a shell session in `text` writes: `cat > NAME` (or `cat >NAME`, `cat <<EOF >
/// NAME`, `cat > NAME <<'EOF'`) with the lines typed after it, up to its here-document's marker
/// or, without one, an end of input ([`END_OF_INPUT`]), a blank line or the end of the block;
/// `echo WORDS > NAME` and `>> NAME`, a line each, appended in order.
fn shell_files(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut files: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = unprompted(lines[i]);
        i += 1;
        if let Some((name, marker)) = cat_command(line) {
            let mut body = String::new();
            while i < lines.len() {
                let l = lines[i];
                let t = l.trim();
                let ends = match &marker {
                    Some(m) => t == m,
                    None => END_OF_INPUT.contains(&t) || t.is_empty(),
                };
                i += 1;
                if ends {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            files.retain(|(n, _)| *n != name);
            files.push((name, body));
        } else if let Some((name, text, append)) = echo_command(line) {
            match files.iter_mut().find(|(n, _)| *n == name) {
                Some((_, body)) if append => body.push_str(&text),
                Some((_, body)) => *body = text,
                None => files.push((name, text)),
            }
        }
    }
    files
}

/// `cat > NAME`, with a here-document's marker when it has one: (name, marker).
fn cat_command(line: &str) -> Option<(String, Option<String>)> {
    let rest = line.strip_prefix("cat")?;
    if !rest.starts_with([' ', '>']) || rest.contains('|') {
        return None;
    }
    let (mut name, mut marker) = (None, None);
    let mut words = rest.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(m) = w.strip_prefix("<<") {
            let m = m.trim_start_matches('-');
            let m = if m.is_empty() { words.next()? } else { m };
            marker = Some(m.trim_matches(|c| c == '\'' || c == '"').to_string());
        } else if let Some(n) = w.strip_prefix('>') {
            if n.starts_with('>') {
                return None; // `cat >> NAME`: appends to a file the issue does not show
            }
            let n = if n.is_empty() { words.next()? } else { n };
            name = Some(file_name(n)?);
        } else {
            return None; // `cat a b > c`, flags: not a file typed in
        }
    }
    Some((name?, marker.filter(|m| !m.is_empty())))
}

/// `echo WORDS > NAME` or `>> NAME` (Windows' `echo x>NAME` too): (name, the text `echo`
/// writes, whether it appends). The words are joined as the shell passes them, with a newline
/// after; `-n` leaves the newline out and `-e` reads backslash escapes (`\n`, `\t`, `\\`),
/// as a reporter writes a whole `conf.py` line by line (`echo -e 'rst_prolog = """\n…' >>
/// docs/conf.py`).
fn echo_command(line: &str) -> Option<(String, String, bool)> {
    let rest = line.strip_prefix("echo ")?;
    let at = rest.rfind('>')?;
    let append = rest[..at].ends_with('>');
    let words = &rest[..if append { at - 1 } else { at }];
    let name = file_name(rest[at + 1..].trim())?;
    let mut words = shell_words(words.trim())?;
    let (mut escapes, mut newline) = (false, true);
    while let Some(flags) = words.first().and_then(|w| w.strip_prefix('-')) {
        if flags.is_empty() || !flags.chars().all(|c| matches!(c, 'e' | 'n' | 'E')) {
            break;
        }
        for c in flags.chars() {
            match c {
                'e' => escapes = true,
                'E' => escapes = false,
                _ => newline = false,
            }
        }
        words.remove(0);
    }
    let mut text = words.join(" ");
    if escapes {
        text = echo_escapes(&text);
    }
    if newline {
        text.push('\n');
    }
    Some((name, text, append))
}

/// `echo -e`'s escapes: `\n`, `\t`, `\\`; any other backslash stays as written.
fn echo_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The files the shell sessions in an issue's fenced blocks write ([`shell_files`]), a name
/// once (the first block that writes it).
pub(super) fn issue_shell_files(issue: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for b in blocks(issue)
        .into_iter()
        .filter(|b| b.source == Source::Fenced)
    {
        for (name, text) in shell_files(&b.text) {
            if !files.iter().any(|(n, _)| *n == name) {
                files.push((name, text));
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// astropy-14365: the file typed into `cat`, ended by `<EOF>`, in the block whose `>>>`
    /// session reads it.
    #[test]
    fn a_file_typed_into_cat_is_the_file_the_code_reads() {
        let issue = "Create a QDP file:\n```\n> cat > test.qdp\nread serr 1 2 \n1 0.5 1 0.5\n<EOF>\n\n > python\n>>> from astropy.table import Table\n>>> Table.read('test.qdp',format='ascii.qdp')\n```\n";
        let code = "from astropy.table import Table\nTable.read('test.qdp',format='ascii.qdp')\n";
        assert_eq!(
            data_files(issue, code),
            vec![("test.qdp".into(), "read serr 1 2 \n1 0.5 1 0.5\n".into())]
        );
        // Code that opens nothing the issue shows gets no file.
        assert!(data_files(issue, "Table.read('other.qdp')\n").is_empty());
    }

    #[test]
    fn here_documents_echo_lines_and_named_blocks() {
        let issue = "```bash\n$ cat <<'END' > a.csv\nx,y\n1,2\nEND\n$ echo one > b.txt\n$ echo 'two  words' >> b.txt\necho def test_tmpdir(tmpdir):>c.py\n```\nThen `d.toml`:\n```toml\n[a]\nb = 1\n```\n```python\nopen('a.csv'); open(\"b.txt\"); open('c.py'); open('d.toml')\n```\n";
        let code = "open('a.csv'); open(\"b.txt\"); open('c.py'); open('d.toml')\n";
        assert_eq!(
            data_files(issue, code),
            vec![
                ("a.csv".into(), "x,y\n1,2\n".into()),
                ("b.txt".into(), "one\ntwo  words\n".into()),
                ("c.py".into(), "def test_tmpdir(tmpdir):\n".into()),
                ("d.toml".into(), "[a]\nb = 1\n".into()),
            ]
        );
    }

    /// sphinx-11445: `echo -e` writes its escapes as the characters they stand for, `-n` no
    /// newline; a word that only looks like a flag is text.
    #[test]
    fn echo_flags_are_read_as_the_shell_reads_them() {
        let block = "$ echo -e 'a\\n=\\n\\tb' > a.rst\n$ echo -n x > b.txt\n$ echo -ne 'y\\\\z' >> b.txt\n$ echo -x 'c\\n' > c.txt\n";
        assert_eq!(
            shell_files(block),
            vec![
                ("a.rst".into(), "a\n=\n\tb\n".into()),
                ("b.txt".into(), "xy\\z".into()),
                ("c.txt".into(), "-x c\\n\n".into()),
            ]
        );
    }

    #[test]
    fn other_shell_lines_write_no_file() {
        for line in [
            "cat a.txt b.txt > c.txt",
            "cat >> log.txt",
            "cat -A x.txt",
            "cat > ../x.txt",
            "cat > /etc/passwd",
            "cat x.txt | grep y",
            "echo $HOME",
            "echo 'unclosed > x.txt",
        ] {
            let issue = format!("```\n{line}\nsome text\n```\n");
            assert!(
                shell_files(&issue.replace("```\n", "")).is_empty(),
                "{line}"
            );
        }
        assert_eq!(
            data_name_line("Here is the file that fails to load when read:"),
            None
        );
        assert_eq!(
            data_name_line("Contents of `data.csv`:"),
            Some("data.csv".into())
        );
    }
}
