//! The localizer's weights: one per signal of the tables in [`super::signals`], under the
//! signal's name, and four that weigh no signal ([`OTHER`]). A weights file is a JSON object
//! of names and numbers; names left out keep the shipped value.
//!
//! The shipped weights are `weights.json` beside this file. They were fitted by
//! `dei-bench context --fit --fit-tasks <SWE-bench Verified>` on the tune half of the available
//! SWE-bench Lite instances plus the Verified instances outside Lite (235 in all; coordinate
//! search, see `context::eval::fit`); the report half was never fitted on. Refitting from them
//! moves no weight. Signals at 0 (`churn`) stay available through `--weights`.

use super::signals::{FILE_NAMES, FILE_SIGNALS, FUNCTION_NAMES, FUNCTION_SIGNALS};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The shipped weights ([`Weights::default`]): every name once.
const SHIPPED: &str = include_str!("weights.json");

/// The weights that weigh no signal, with what they do.
pub const OTHER: [(&str, &str); 4] = [
    (
        "test_factor",
        "multiplier of the file score of tests, docs, examples and benchmarks",
    ),
    (
        "title",
        "query weight of the issue's title (first line) relative to its body",
    ),
    (
        "details",
        "query weight of `<details>` blocks (environment dumps)",
    ),
    (
        "compound",
        "query weight of two adjacent words joined (`man page` → `manpage`)",
    ),
];

/// Tunable weights of the localizer (JSON-loadable: names left out keep the shipped value).
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    /// Weights of the file-level signals, in the order of [`super::signals::FILE`].
    pub file: [f64; FILE_SIGNALS],
    /// Weights of the function-level signals, in the order of [`super::signals::FUNCTION`].
    pub function: [f64; FUNCTION_SIGNALS],
    /// Multiplier of the score of tests, docs, examples and benchmarks.
    pub test_factor: f64,
    /// Query weight of the issue title (first line) relative to the body.
    pub title: f64,
    /// Query weight of `<details>` blocks (environment dumps).
    pub details: f64,
    /// Query weight of two adjacent words joined (`man page` → `manpage`).
    pub compound: f64,
}

impl Default for Weights {
    /// The shipped weights (`src/localize/weights.json`).
    fn default() -> Self {
        static W: OnceLock<Weights> = OnceLock::new();
        W.get_or_init(|| {
            // The file is part of the build and checked by this module's tests.
            Weights::from_complete_json(SHIPPED)
                .unwrap_or_else(|e| panic!("src/localize/weights.json: {e}"))
        })
        .clone()
    }
}

impl Weights {
    /// The names of [`Weights::file`], in its order.
    pub const FILE_NAMES: [&'static str; FILE_SIGNALS] = FILE_NAMES;
    /// The names of [`Weights::function`], in its order.
    pub const FUNCTION_NAMES: [&'static str; FUNCTION_SIGNALS] = FUNCTION_NAMES;

    /// Every weight's name: the file signals, `test_factor`, the function signals, then the
    /// query weights (the order of `weights.json` and of the JSON form).
    pub fn names() -> impl Iterator<Item = &'static str> {
        FILE_NAMES
            .into_iter()
            .chain(["test_factor"])
            .chain(FUNCTION_NAMES)
            .chain(OTHER.into_iter().skip(1).map(|(n, _)| n))
    }

    fn slot(&mut self, name: &str) -> Option<&mut f64> {
        if let Some(k) = FILE_NAMES.iter().position(|n| *n == name) {
            return Some(&mut self.file[k]);
        }
        if let Some(k) = FUNCTION_NAMES.iter().position(|n| *n == name) {
            return Some(&mut self.function[k]);
        }
        match name {
            "test_factor" => Some(&mut self.test_factor),
            "title" => Some(&mut self.title),
            "details" => Some(&mut self.details),
            "compound" => Some(&mut self.compound),
            _ => None,
        }
    }

    /// The weight of this name, if there is one.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.clone().slot(name).copied()
    }

    /// Set the weight of this name; an unknown name is an error that lists the known ones.
    pub fn set(&mut self, name: &str, value: f64) -> anyhow::Result<()> {
        match self.slot(name) {
            Some(w) => {
                *w = value;
                Ok(())
            }
            None => anyhow::bail!(
                "unknown localizer weight `{name}` (known: {})",
                Weights::names().collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// These weights with one changed (for weights written in code).
    ///
    /// # Panics
    /// When `name` is no weight's name; use [`Weights::set`] for names read from input.
    pub fn with(mut self, name: &str, value: f64) -> Weights {
        if let Err(e) = self.set(name, value) {
            panic!("{e}");
        }
        self
    }

    /// The file-level weights in [`FileSignals::x`](super::signals::FileSignals) order.
    pub fn file_vector(&self) -> [f64; FILE_SIGNALS] {
        self.file
    }

    /// The function-level weights in [`FunctionSignals::x`](super::signals::FunctionSignals) order.
    pub fn function_vector(&self) -> [f64; FUNCTION_SIGNALS] {
        self.function
    }

    /// Weights from a JSON object that names every weight once, and nothing else.
    fn from_complete_json(text: &str) -> anyhow::Result<Weights> {
        let given: BTreeMap<String, f64> = serde_json::from_str(text)?;
        let mut w = Weights {
            file: [0.0; FILE_SIGNALS],
            function: [0.0; FUNCTION_SIGNALS],
            test_factor: 0.0,
            title: 0.0,
            details: 0.0,
            compound: 0.0,
        };
        for (name, v) in &given {
            w.set(name, *v)?;
        }
        let missing: Vec<&str> = Weights::names()
            .filter(|n| !given.contains_key(*n))
            .collect();
        if !missing.is_empty() {
            anyhow::bail!("no weight for {}", missing.join(", "));
        }
        Ok(w)
    }

    /// Read weights from a JSON file (names left out keep the shipped value).
    pub fn load(path: &std::path::Path) -> anyhow::Result<Weights> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!("cannot read localizer weights {}: {e}", path.display())
        })?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: not a localizer weights object: {e} (a JSON object of weight names and numbers, as src/localize/weights.json)",
                path.display()
            )
        })
    }
}

impl serde::Serialize for Weights {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Weights::names().count()))?;
        for name in Weights::names() {
            m.serialize_entry(name, &self.get(name).unwrap_or(0.0))?;
        }
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for Weights {
    /// A JSON object of weight names and numbers; names left out keep the shipped value.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let given = BTreeMap::<String, f64>::deserialize(d)?;
        let mut w = Weights::default();
        for (name, v) in given {
            w.set(&name, v).map_err(serde::de::Error::custom)?;
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_weights_name_every_weight_once() {
        // Every name of the signal tables and `OTHER` has a shipped weight, and nothing else.
        let w = Weights::from_complete_json(SHIPPED).unwrap();
        assert_eq!(w, Weights::default());
        let shipped: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(SHIPPED).unwrap();
        let mut names: Vec<&str> = Weights::names().collect();
        assert_eq!(names.len(), shipped.len());
        names.sort();
        names.dedup();
        assert_eq!(names.len(), shipped.len(), "a name twice");
        assert!(Weights::from_complete_json(r#"{"bm25": 1.0}"#)
            .unwrap_err()
            .to_string()
            .contains("no weight for path_bm25"));
    }

    #[test]
    fn shipped_weights_are_read_exactly_as_written() {
        // Each number of weights.json, printed back (shortest form), is the text written.
        let w = Weights::default();
        for line in SHIPPED.lines().filter(|l| l.contains(':')) {
            let (name, text) = line.split_once(':').unwrap();
            let name = name.trim().trim_matches('"');
            let text = text.trim().trim_end_matches(',');
            let v = w.get(name).unwrap();
            assert_eq!(
                text.parse::<f64>().unwrap(),
                v,
                "{name}: {text} read as {v:?}"
            );
        }
    }

    #[test]
    fn names_reach_their_slots_and_json_round_trips() {
        for (k, name) in Weights::FILE_NAMES.iter().enumerate() {
            let w = Weights::default().with(name, 7.5);
            assert_eq!(w.file_vector()[k], 7.5, "{name}");
        }
        for (k, name) in Weights::FUNCTION_NAMES.iter().enumerate() {
            let w = Weights::default().with(name, 7.5);
            assert_eq!(w.function_vector()[k], 7.5, "{name}");
        }
        let w = Weights::default()
            .with("compound", 0.5)
            .with("fn_class", 3.0);
        assert_eq!((w.compound, w.get("fn_class")), (0.5, Some(3.0)));
        let back: Weights = serde_json::from_value(serde_json::to_value(&w).unwrap()).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn a_weights_file_overrides_some_names_and_rejects_unknown_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.json");
        std::fs::write(&p, r#"{"history": 0, "title": 1.5}"#).unwrap();
        let w = Weights::load(&p).unwrap();
        assert_eq!(w.get("history"), Some(0.0));
        assert_eq!(w.title, 1.5);
        assert_eq!(w.get("bm25"), Weights::default().get("bm25"));
        std::fs::write(&p, r#"{"bm52": 1}"#).unwrap();
        let e = Weights::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("w.json") && e.contains("unknown localizer weight `bm52`"),
            "{e}"
        );
    }
}
