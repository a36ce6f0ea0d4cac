//! The offline committee's weights: the hand-set defaults ([`Weights::default`]), the shipped
//! fitted sets beside this file (`weights/*.json`, fitted by `dei-bench offline --fit` on the
//! fit half only), or a JSON file of the user's.

use super::Weights;
use anyhow::Context as _;
use std::path::Path;

/// The shipped sets, by name: signals only, and signals plus the track record of the 8
/// SWE-bench Lite runs it was fitted on.
pub const SHIPPED: [(&str, &str); 2] = [
    ("fitted", include_str!("weights/fitted.json")),
    ("track-record", include_str!("weights/track-record.json")),
];

/// `--offline-weights NAME|FILE`: `default`, a shipped set's name, or a JSON file.
pub fn load(spec: &str) -> anyhow::Result<Weights> {
    if spec == "default" {
        return Ok(Weights::default());
    }
    if let Some((name, text)) = SHIPPED.iter().find(|(n, _)| *n == spec) {
        return serde_json::from_str(text)
            .with_context(|| format!("the shipped weights `{name}` do not parse"));
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "--offline-weights `{spec}`: no such file, and not a shipped set\n  hint: use default, {}, or a JSON file of weights",
            names.join(", ")
        );
    }
    load_file(path)
}

/// A weights JSON file (fields like `"agreement": 4.0`; missing ones keep their defaults, and
/// one the committee does not know is an error).
pub fn load_file(path: &Path) -> anyhow::Result<Weights> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read weights file {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not an offline weights object (fields like \"agreement\": 4.0)",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_sets_parse_and_differ_from_the_defaults() {
        for (name, _) in SHIPPED {
            let w = load(name).unwrap();
            assert_ne!(w, Weights::default(), "{name}");
        }
        assert_eq!(load("default").unwrap(), Weights::default());
        let e = load("no-such-set").unwrap_err().to_string();
        assert!(e.contains("fitted, track-record"), "{e}");
    }

    #[test]
    fn a_weight_it_does_not_know_is_an_error_naming_the_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        std::fs::write(&good, r#"{"agreement": 2.0}"#).unwrap();
        assert_eq!(load_file(&good).unwrap().agreement, 2.0);
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"agreement": 2.0, "exec_record_told_apart": true}"#,
        )
        .unwrap();
        let e = format!("{:#}", load(bad.to_str().unwrap()).unwrap_err());
        assert!(
            e.contains("bad.json") && e.contains("unknown field `exec_record_told_apart`"),
            "{e}"
        );
    }
}
