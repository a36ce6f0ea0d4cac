//! Reading the model's reply: a JSON object (structured output, or JSON in a code fence) or
//! tagged sections (`<issue>…</issue>`). A reply that does not yield every required part
//! (e.g. no integer score 1–10) is an error with the reason, never a guessed value.

use super::provider::{Js, Schema};
use crate::model::Stage;
use serde_json::{json, Value};

/// What a call asks the model to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// DEI review of one candidate: five explanations then a score.
    Point,
    /// Pick one of `n` candidates.
    List(usize),
    /// Pick A or B.
    Pair,
    /// Free-form text (the generator's prompts): any non-empty reply, no structured output.
    Text,
}

/// A reply that parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Point {
        explanations: Vec<(Stage, String)>,
        score: u8,
    },
    /// 1-based choice.
    List {
        analysis: String,
        choice: usize,
    },
    Pair {
        analysis: String,
        a_wins: bool,
    },
    /// The whole reply of a [`ReplyKind::Text`] call.
    Text(String),
}

const POINT_FIELDS: [Stage; 5] = [
    Stage::Issue,
    Stage::Context,
    Stage::Location,
    Stage::Patch,
    Stage::Conflicts,
];

/// How much text a structured reply may hold: each free-text field at most `field_chars`
/// characters (`None`: unbounded, for providers whose strict mode takes no length bounds).
/// A token is at least one character, so bounds that add up to less than `--max-tokens` keep
/// a reply from running past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub field_chars: Option<usize>,
}

impl Bounds {
    /// Bounds for `fields` free-text fields sharing a reply of at most `max_tokens` tokens
    /// (64 left for the JSON around them).
    pub fn sharing(max_tokens: u32, fields: usize) -> Bounds {
        let room = (max_tokens as usize).saturating_sub(64).max(fields * 16);
        Bounds {
            field_chars: Some(room / fields.max(1)),
        }
    }
}

fn string_prop(desc: &str, b: Bounds) -> Js {
    match b.field_chars {
        Some(n) => {
            Js::V(json!({"type": "string", "description": desc, "minLength": 1, "maxLength": n}))
        }
        None => Js::V(json!({"type": "string", "description": desc})),
    }
}

/// An object schema with these properties, all required, nothing else allowed.
pub fn object_schema(props: Vec<(&'static str, Js)>) -> Js {
    let required: Vec<&str> = props.iter().map(|p| p.0).collect();
    Js::O(vec![
        ("type", Js::V(json!("object"))),
        ("properties", Js::O(props)),
        ("required", Js::V(json!(required))),
        ("additionalProperties", Js::V(json!(false))),
    ])
}

impl ReplyKind {
    /// Free-text fields of the reply (they share `--max-tokens`).
    pub fn text_fields(self) -> usize {
        match self {
            ReplyKind::Point => 5,
            ReplyKind::List(_) | ReplyKind::Pair => 1,
            ReplyKind::Text => 0,
        }
    }

    /// The structured-output schema, unbounded; `None` for free-form text.
    pub fn schema(self) -> Option<Schema> {
        self.schema_within(Bounds { field_chars: None })
    }

    /// The structured-output schema with its text fields held to `b`; integers always carry
    /// their range, so a grammar-constrained server cannot write a score of 10^15.
    pub fn schema_within(self, b: Bounds) -> Option<Schema> {
        Some(match self {
            ReplyKind::Text => return None,
            ReplyKind::Point => Schema {
                name: "submit_review",
                description: "Submit the review of the candidate patch: explanations in order, then the score.",
                schema: object_schema(vec![
                    ("issue", string_prop("The issue in your own words: what is wrong, where, what is expected.", b)),
                    ("context", string_prop("For each relevant code span: why it matters for the issue.", b)),
                    ("location", string_prop("Is the patch editing the faulty place?", b)),
                    ("patch", string_prop("Does the patch fix the issue, and how?", b)),
                    ("conflicts", string_prop("Does it contradict other relevant code or break callers?", b)),
                    ("score", Js::V(json!({"type": "integer", "description": "1 (certainly wrong) to 10 (certainly right)", "minimum": 1, "maximum": 10}))),
                ]),
            },
            ReplyKind::List(n) => Schema {
                name: "pick_candidate",
                description: "Pick the candidate most likely to resolve the issue.",
                schema: object_schema(vec![
                    ("analysis", string_prop("Compare the candidates.", b)),
                    ("choice", Js::V(json!({"type": "integer", "description": "the candidate's number", "minimum": 1, "maximum": n.max(1)}))),
                ]),
            },
            ReplyKind::Pair => Schema {
                name: "pick_winner",
                description: "Say which of two candidates is more likely to resolve the issue.",
                schema: object_schema(vec![
                    ("analysis", string_prop("Compare the two candidates.", b)),
                    ("winner", Js::V(json!({"type": "string", "enum": ["A", "B"]}))),
                ]),
            },
        })
    }
}

/// A free-form reply's list: the strings of `key` in a JSON reply (a shaped call's), one a line;
/// any other reply as it is. Callers then read it as the plain-text reply it stands for.
pub fn listed(reply: &str, key: &str) -> String {
    match json_object(reply).as_ref().and_then(|m| m.get(key)) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s.clone(),
        _ => reply.to_string(),
    }
}

/// The text of `key` in a JSON reply (a shaped call's), `None` for a reply of another shape.
pub fn json_text(reply: &str, key: &str) -> Option<String> {
    let t = reply.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    json_object(reply)?.get(key)?.as_str().map(str::to_string)
}

/// The schema of a list reply: `key` holds at most `most` strings, each one of `choices` when
/// given (the paths shown), else at most `chars` characters.
pub fn list_schema(
    name: &'static str,
    key: &'static str,
    choices: Option<&[&str]>,
    most: usize,
    chars: usize,
) -> Schema {
    let item = match choices {
        Some(c) => json!({"type": "string", "enum": c}),
        None => json!({"type": "string", "maxLength": chars}),
    };
    Schema {
        name,
        description: "The list asked for, most likely first.",
        schema: object_schema(vec![(
            key,
            Js::V(json!({"type": "array", "items": item, "minItems": 1, "maxItems": most.max(1)})),
        )]),
    }
}

/// Most search/replace edits one shaped reply holds.
pub const MOST_EDITS: usize = 3;

/// The schema of a search/replace reply: up to [`MOST_EDITS`] edits, each a file `path` (one of
/// `paths` when given), the exact `search` lines and their `replace`ment, each text held to
/// `b` (the caller shares `--max-tokens` among the `2 × MOST_EDITS` texts).
pub fn edits_schema(paths: Option<&[&str]>, b: Bounds) -> Schema {
    let path = match paths {
        Some(p) if !p.is_empty() => Js::V(json!({"type": "string", "enum": p})),
        _ => Js::V(json!({"type": "string", "maxLength": 200})),
    };
    let edit = object_schema(vec![
        ("path", path),
        (
            "search",
            string_prop(
                "The exact existing lines, with a few lines around the change.",
                b,
            ),
        ),
        ("replace", string_prop("The new lines.", b)),
    ]);
    Schema {
        name: "submit_edits",
        description: "The search/replace edits that fix the issue.",
        schema: object_schema(vec![(
            "edits",
            Js::O(vec![
                ("type", Js::V(json!("array"))),
                ("items", edit),
                ("minItems", Js::V(json!(1))),
                ("maxItems", Js::V(json!(MOST_EDITS))),
            ]),
        )]),
    }
}

/// A shaped search/replace reply as the search/replace blocks it stands for; `None` for a
/// reply of another shape (read as blocks already).
pub fn edits_as_blocks(reply: &str) -> Option<String> {
    let t = reply.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    let edits = json_object(reply)?.get("edits")?.as_array()?.clone();
    let mut out = String::new();
    for e in &edits {
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        out.push_str(&format!(
            "{}\n<<<<<<< SEARCH\n{}\n=======\n{}\n>>>>>>> REPLACE\n",
            s("path"),
            s("search").trim_end_matches('\n'),
            s("replace").trim_end_matches('\n')
        ));
    }
    Some(out)
}

/// Most definition targets one shaped reply of the hierarchical strategy names.
pub const MOST_TARGETS: usize = 4;

/// Most labels a target enum lists (OpenAI's strict mode takes at most 1000 enum values and,
/// past 250, 15,000 characters of them); beyond either the targets are bounded strings.
const MOST_LABELS: usize = 500;
const MOST_LABEL_CHARS: usize = 15_000;

/// The schema of a definition-target reply: `targets` holds 1 to `most` strings, each one of
/// `labels` (the `path::Qualified.name` and `path:START-END` places the schematics show).
/// Without labels, or with too many for an enum, each target is any string of at most 200
/// characters. (No free `path:START-END` beside the enum: held to a pattern alone, a small
/// model writes ranges past the file's end.)
pub fn targets_schema(labels: &[&str], most: usize) -> Schema {
    let chars: usize = labels.iter().map(|l| l.len()).sum();
    let item = if labels.is_empty() || labels.len() > MOST_LABELS || chars > MOST_LABEL_CHARS {
        json!({"type": "string", "maxLength": 200})
    } else {
        json!({"type": "string", "enum": labels})
    };
    Schema {
        name: "pick_targets",
        description: "The definitions or module-level line ranges to rewrite, smallest first.",
        schema: object_schema(vec![(
            "targets",
            Js::V(json!({"type": "array", "items": item, "minItems": 1, "maxItems": most.max(1)})),
        )]),
    }
}

/// The schema of a rewrite reply: 1 to `targets.len()` rewrites, each naming one of `targets`
/// (the labels shown) and holding its whole new `code`, held to `b` (the caller shares
/// `--max-tokens` among the targets).
pub fn rewrites_schema(targets: &[&str], b: Bounds) -> Schema {
    let rewrite = object_schema(vec![
        ("target", Js::V(json!({"type": "string", "enum": targets}))),
        (
            "code",
            string_prop(
                "The whole new definition (or lines) as Python code, no fence.",
                b,
            ),
        ),
    ]);
    Schema {
        name: "submit_rewrites",
        description: "The rewritten targets that fix the issue.",
        schema: object_schema(vec![(
            "rewrites",
            Js::O(vec![
                ("type", Js::V(json!("array"))),
                ("items", rewrite),
                ("minItems", Js::V(json!(1))),
                ("maxItems", Js::V(json!(targets.len().max(1)))),
            ]),
        )]),
    }
}

/// A shaped rewrite reply as the `### <target>` headings and fenced code blocks it stands for
/// (a fence longer than any run of backticks opening a line of the code; a fence the model put
/// around the code itself is dropped); `None` for a reply of another shape (read as headings
/// and blocks already).
pub fn rewrites_as_blocks(reply: &str) -> Option<String> {
    let t = reply.trim_start();
    if !t.starts_with('{') {
        return None;
    }
    let rewrites = json_object(reply)?.get("rewrites")?.as_array()?.clone();
    let mut out = String::new();
    for r in &rewrites {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let code = unfenced(s("code"));
        let ticks = code
            .lines()
            .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count())
            .max()
            .unwrap_or(0);
        let fence = "`".repeat((ticks + 1).max(3));
        out.push_str(&format!(
            "### {}\n{fence}python\n{}\n{fence}\n\n",
            s("target").trim(),
            code.trim_end_matches('\n')
        ));
    }
    Some(out)
}

/// `code` without a fence around it (```` ```python ```` … ```` ``` ````), as a model told to
/// write fenced blocks may put inside a JSON string.
fn unfenced(code: &str) -> &str {
    let t = code.trim();
    if !t.starts_with("```") {
        return code;
    }
    let Some((_, body)) = t.split_once('\n') else {
        return "";
    };
    let fence = |l: &str| !l.trim().is_empty() && l.trim().chars().all(|c| c == '`');
    match body.rsplit_once('\n') {
        Some((head, last)) if fence(last) => head,
        None if fence(body) => "",
        _ => body.strip_suffix("```").unwrap_or(body),
    }
}

/// Most commands one shaped step of the chain of context holds.
pub const MOST_COMMANDS: usize = 6;

/// The schema of a chain step: 1 to [`MOST_COMMANDS`] command lines (`RETRIEVE …`, `DROP …`,
/// `ANALYSIS: …`), each held to `b` (the caller shares `--max-tokens` among them).
pub fn commands_schema(b: Bounds) -> Schema {
    let command = string_prop(
        "One command line: RETRIEVE class NAME, RETRIEVE function NAME, RETRIEVE file PATH, DROP ID, or ANALYSIS: <root cause and the fix>.",
        b,
    );
    Schema {
        name: "next_commands",
        description: "The next commands of the search for the root cause.",
        schema: object_schema(vec![(
            "commands",
            Js::O(vec![
                ("type", Js::V(json!("array"))),
                ("items", command),
                ("minItems", Js::V(json!(1))),
                ("maxItems", Js::V(json!(MOST_COMMANDS))),
            ]),
        )]),
    }
}

/// The schema of a reply that is one text (`key`), at most `b`'s characters.
pub fn text_schema(name: &'static str, key: &'static str, desc: &str, b: Bounds) -> Schema {
    Schema {
        name,
        description: "The text asked for.",
        schema: object_schema(vec![(key, string_prop(desc, b))]),
    }
}

/// The JSON object in `text`: the whole text, or the outermost `{…}` (e.g. inside a fence).
fn json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let t = text.trim();
    if let Ok(Value::Object(m)) = serde_json::from_str(t) {
        return Some(m);
    }
    let (a, b) = (t.find('{')?, t.rfind('}')?);
    match serde_json::from_str(t.get(a..=b)?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The text of `<tag>…</tag>`; an unclosed last tag runs to the end.
fn tag<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let rest = &text[start..];
    let end = rest.find(&format!("</{name}>")).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn int_from(v: Option<&Value>) -> Result<Option<i64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            None => Err(format!("`{n}` is not an integer")),
        },
        Some(Value::String(s)) => int_from_text(s).map(Some),
        Some(other) => Err(format!("`{other}` is not an integer")),
    }
}

fn int_from_text(s: &str) -> Result<i64, String> {
    let t = s.trim().trim_end_matches('.');
    let t = t.split('/').next().unwrap_or(t).trim();
    t.parse::<i64>().map_err(|_| {
        format!(
            "`{}` is not an integer",
            s.chars().take(40).collect::<String>()
        )
    })
}

fn score_in_range(i: i64) -> Result<u8, String> {
    if (1..=10).contains(&i) {
        Ok(i as u8)
    } else {
        Err(format!("score {i} is outside 1–10"))
    }
}

/// Parse a reply of `kind`; `Err` says what was wrong.
pub fn parse(kind: ReplyKind, text: &str) -> Result<Parsed, String> {
    if text.trim().is_empty() {
        return Err("empty reply".into());
    }
    if text.starts_with("[refused]") {
        return Err(format!(
            "model refused: {}",
            text.chars().skip(10).take(200).collect::<String>()
        ));
    }
    if kind == ReplyKind::Text {
        return Ok(Parsed::Text(text.to_string()));
    }
    let obj = json_object(text);
    let field = |name: &str| -> Option<String> {
        match &obj {
            Some(m) => m.get(name).map(|v| match v {
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            }),
            None => tag(text, name).map(str::to_string),
        }
    };
    let int_field = |name: &str| -> Result<Option<i64>, String> {
        match &obj {
            Some(m) => int_from(m.get(name)),
            None => tag(text, name).map(int_from_text).transpose(),
        }
    };
    match kind {
        ReplyKind::Point => {
            let score = match int_field("score")? {
                Some(s) => score_in_range(s)?,
                None => return Err("no score in reply".into()),
            };
            let explanations: Vec<(Stage, String)> = POINT_FIELDS
                .iter()
                .filter_map(|&s| field(s.name()).filter(|t| !t.is_empty()).map(|t| (s, t)))
                .collect();
            if explanations.is_empty() {
                return Err("reply has a score but none of the explanations".into());
            }
            let mut explanations = explanations;
            explanations.push((Stage::Score, score.to_string()));
            Ok(Parsed::Point {
                explanations,
                score,
            })
        }
        ReplyKind::List(n) => {
            let choice = int_field("choice")?.ok_or("no choice in reply")?;
            if choice < 1 || choice as usize > n {
                return Err(format!("choice {choice} is not a candidate number 1–{n}"));
            }
            Ok(Parsed::List {
                analysis: field("analysis").unwrap_or_default(),
                choice: choice as usize,
            })
        }
        ReplyKind::Pair => {
            let w = field("winner").ok_or("no winner in reply")?;
            let a_wins = match w.trim().trim_matches('"').to_ascii_uppercase().as_str() {
                "A" => true,
                "B" => false,
                other => {
                    return Err(format!(
                        "winner `{}` is neither A nor B",
                        other.chars().take(40).collect::<String>()
                    ))
                }
            };
            Ok(Parsed::Pair {
                analysis: field("analysis").unwrap_or_default(),
                a_wins,
            })
        }
        ReplyKind::Text => Ok(Parsed::Text(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_from_json_and_tags() {
        let j = r#"{"issue":"i","context":"c","location":"l","patch":"p","conflicts":"none","score":7}"#;
        let Parsed::Point {
            explanations,
            score,
        } = parse(ReplyKind::Point, j).unwrap()
        else {
            panic!()
        };
        assert_eq!(score, 7);
        let order: Vec<Stage> = explanations.iter().map(|e| e.0).collect();
        assert_eq!(order, Stage::ORDER.to_vec());
        let t = "<issue>i</issue>\n<context>c</context><location>l</location><patch>p</patch><conflicts>x</conflicts>\n<score> 9 </score>";
        assert!(matches!(
            parse(ReplyKind::Point, t),
            Ok(Parsed::Point { score: 9, .. })
        ));
        let fenced = format!("Here you go:\n```json\n{j}\n```");
        assert!(matches!(
            parse(ReplyKind::Point, &fenced),
            Ok(Parsed::Point { score: 7, .. })
        ));
    }

    #[test]
    fn bad_replies_say_why() {
        assert_eq!(
            parse(ReplyKind::Point, "<issue>i</issue>").unwrap_err(),
            "no score in reply"
        );
        assert!(parse(ReplyKind::Point, r#"{"issue":"i","score":11}"#)
            .unwrap_err()
            .contains("outside"));
        assert!(parse(ReplyKind::Point, r#"{"issue":"i","score":7.5}"#)
            .unwrap_err()
            .contains("not an integer"));
        assert!(
            parse(ReplyKind::Point, r#"{"issue":"i","context":"c","loc"#)
                .unwrap_err()
                .contains("no score")
        );
        assert!(parse(ReplyKind::Point, "").is_err());
        assert!(parse(ReplyKind::List(3), r#"{"analysis":"a","choice":4}"#).is_err());
        assert!(matches!(
            parse(
                ReplyKind::List(3),
                "<analysis>a</analysis><choice>2</choice>"
            ),
            Ok(Parsed::List { choice: 2, .. })
        ));
        assert!(matches!(
            parse(ReplyKind::Pair, r#"{"analysis":"a","winner":"B"}"#),
            Ok(Parsed::Pair { a_wins: false, .. })
        ));
        assert!(parse(ReplyKind::Pair, "<winner>both</winner>").is_err());
        assert_eq!(
            parse(ReplyKind::Text, "<<<<<<< SEARCH\n{\"score\": 3}"),
            Ok(Parsed::Text("<<<<<<< SEARCH\n{\"score\": 3}".into()))
        );
        assert!(parse(ReplyKind::Text, "  \n").is_err());
        assert!(ReplyKind::Text.schema().is_none());
    }

    #[test]
    fn shaped_free_form_replies_read_as_the_text_they_stand_for() {
        let j = r#"{"edits":[{"path":"a.py","search":"x = 1\n","replace":"x = 2"}]}"#;
        assert_eq!(
            edits_as_blocks(j).unwrap(),
            "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
        );
        assert_eq!(edits_as_blocks("a.py\n<<<<<<< SEARCH"), None);
        assert_eq!(
            listed(r#"{"files":["a.py","b/c.py"]}"#, "files"),
            "a.py\nb/c.py"
        );
        assert_eq!(listed("a.py\nb.py", "files"), "a.py\nb.py");
        assert_eq!(
            json_text(r#"{"test":"print(1)"}"#, "test").as_deref(),
            Some("print(1)")
        );
        assert_eq!(json_text("```python\nprint(1)\n```", "test"), None);
        let s = edits_schema(
            Some(&["a.py"]),
            Bounds {
                field_chars: Some(100),
            },
        );
        let text = serde_json::to_string(&s.schema).unwrap();
        assert!(
            text.contains(r#""maxItems":3"#) && text.contains(r#""enum":["a.py"]"#),
            "{text}"
        );
        // Bounds shared by five fields of a 512-token reply, 64 left for the JSON.
        assert_eq!(Bounds::sharing(512, 5).field_chars, Some(89));
    }

    #[test]
    fn shaped_rewrites_read_as_the_headed_blocks_they_stand_for() {
        // (generate::hierarchical's tests read these blocks back with parse_rewrites.)
        let j = r#"{"rewrites":[{"target":"a.py::f","code":"def f():\n    return 2\n"},{"target":"a.py:1-2","code":"X = 3"}]}"#;
        assert_eq!(
            rewrites_as_blocks(j).unwrap(),
            "### a.py::f\n```python\ndef f():\n    return 2\n```\n\n### a.py:1-2\n```python\nX = 3\n```\n\n"
        );
        // Code holding a fence line goes under a longer fence.
        let doc = "def g():\n    \"\"\"Use it so:\n    ```\n    g()\n    ```\n    \"\"\"\n";
        let j = serde_json::json!({"rewrites": [{"target": "a.py::g", "code": doc}]}).to_string();
        assert_eq!(
            rewrites_as_blocks(&j).unwrap(),
            format!("### a.py::g\n````python\n{doc}````\n\n")
        );
        // A fence the model wrote inside the string is dropped; indentation is kept.
        for code in [
            "```python\n    def m(self):\n        pass\n```",
            "```python\n    def m(self):\n        pass\n```\n",
            "\n```\n    def m(self):\n        pass\n",
            "```python\n    def m(self):\n        pass```",
        ] {
            let j = serde_json::json!({"rewrites": [{"target": "a.py::C.m", "code": code}]});
            assert_eq!(
                rewrites_as_blocks(&j.to_string()).unwrap(),
                "### a.py::C.m\n```python\n    def m(self):\n        pass\n```\n\n",
                "{code:?}"
            );
        }
        // A plain reply is read as it is.
        assert_eq!(rewrites_as_blocks("### a.py::f\n```python\n{}\n```"), None);
        let s = rewrites_schema(
            &["a.py::f", "a.py:1-2"],
            Bounds {
                field_chars: Some(300),
            },
        );
        let v = serde_json::to_value(&s.schema).unwrap();
        let items = &v["properties"]["rewrites"];
        assert_eq!(items["maxItems"], 2);
        assert_eq!(items["minItems"], 1);
        assert_eq!(
            items["items"]["properties"]["target"]["enum"],
            serde_json::json!(["a.py::f", "a.py:1-2"])
        );
        assert_eq!(items["items"]["properties"]["code"]["maxLength"], 300);
        assert_eq!(
            items["items"]["required"],
            serde_json::json!(["target", "code"])
        );
    }

    #[test]
    fn target_and_command_schemas_are_bounded() {
        let v =
            serde_json::to_value(&targets_schema(&["p/a.py::f", "p/a.py:1-3"], 4).schema).unwrap();
        let t = &v["properties"]["targets"];
        assert_eq!(
            (t["minItems"].as_u64(), t["maxItems"].as_u64()),
            (Some(1), Some(4))
        );
        assert_eq!(
            t["items"],
            serde_json::json!({"type": "string", "enum": ["p/a.py::f", "p/a.py:1-3"]})
        );
        // No labels, or too many for an enum: bounded strings.
        let many: Vec<String> = (0..600).map(|i| format!("a.py::f{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        for labels in [&[][..], &many[..]] {
            let v = serde_json::to_value(&targets_schema(labels, 4).schema).unwrap();
            assert_eq!(
                v["properties"]["targets"]["items"],
                serde_json::json!({"type": "string", "maxLength": 200})
            );
        }
        assert_eq!(
            listed(r#"{"targets":["p/a.py::f","p/a.py:1-3"]}"#, "targets"),
            "p/a.py::f\np/a.py:1-3"
        );
        let v = serde_json::to_value(&commands_schema(Bounds::sharing(1024, MOST_COMMANDS)).schema)
            .unwrap();
        let c = &v["properties"]["commands"];
        assert_eq!(c["maxItems"], MOST_COMMANDS);
        assert_eq!(c["items"]["maxLength"], (1024 - 64) / MOST_COMMANDS);
        let unbounded =
            serde_json::to_value(&commands_schema(Bounds { field_chars: None }).schema).unwrap();
        assert!(unbounded["properties"]["commands"]["items"]
            .get("maxLength")
            .is_none());
        assert_eq!(
            listed(
                r#"{"commands":["RETRIEVE function f","DROP 2"]}"#,
                "commands"
            ),
            "RETRIEVE function f\nDROP 2"
        );
    }
}
