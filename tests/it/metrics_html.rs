//! The HTML report is self-contained and well-formed enough to open anywhere.

use crate::support::common;

use common::{dei, stderr};

/// Every opening tag of `name` has its closing tag.
fn balanced(html: &str, name: &str) -> bool {
    let open =
        html.matches(&format!("<{name}")).count() - html.matches(&format!("<{name}-")).count();
    open == html.matches(&format!("</{name}>")).count()
}

fn check(html: &str) {
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..40.min(html.len())]
    );
    assert!(html.contains("<svg"), "no svg");
    for bad in ["http://", "https://", "<script", "<link", "@import", "src="] {
        assert!(!html.contains(bad), "HTML refers outside itself: {bad}");
    }
    for tag in [
        "html", "body", "svg", "table", "tr", "h2", "h3", "title", "text", "circle",
    ] {
        assert!(balanced(html, tag), "unbalanced <{tag}>");
    }
}

#[test]
fn hand_report_has_curves_heatmap_and_no_outside_references() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("r.html");
    let out = dei(&[
        "eval",
        "tests/fixtures/metrics/hand/cands.jsonl",
        "--tasks",
        "tests/fixtures/metrics/hand/tasks.txt",
        "--scores",
        "tests/fixtures/metrics/hand/scores.jsonl",
        "--order",
        "given,natural,random",
        "--bootstrap",
        "100",
        "--html",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&out_path).unwrap();
    check(&html);
    // Three curve charts and one heat map.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 3);
    assert_eq!(html.matches("<svg class=\"heat\"").count(), 1);
    // Four lines per chart (Union, Intersect, Average, 1@k) and a cell per agent pair.
    assert_eq!(html.matches("<polyline").count(), 12);
    assert_eq!(html.matches("<rect").count(), 9);
    assert!(html.contains("1@k") && html.contains("Union@3"));
}

#[test]
fn names_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("m.csv");
    std::fs::write(&labels, "instance_id,<b>&x,plain\na,1,0\nb,1,1\n").unwrap();
    let html_path = dir.path().join("r.html");
    let out = dei(&[
        "eval",
        "--labels",
        labels.to_str().unwrap(),
        "--html",
        html_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&html_path).unwrap();
    check(&html);
    assert!(!html.contains("<b>&x") && html.contains("&lt;b&gt;&amp;x"));
}
