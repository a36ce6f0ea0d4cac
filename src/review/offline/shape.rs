//! Size and scatter of a change relative to the other candidates of the same issue.

use super::agreement::milli;
use super::features::Features;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// `(largeness, scatter)` of candidate `i`, each in `[0, 3]`: largeness is
/// `log2(size / median size of the others)` above 0 (one unit per doubling beyond the typical
/// candidate); scatter is the number of files beyond the others' median. Both count the change's code only
/// (tests and docs written with a fix are not part of its size), except for a candidate that
/// touches only tests, which is measured whole.
/// All are 0 when no other candidate is reviewable.
pub fn shape(feats: &[Features], i: usize) -> (f64, f64) {
    if feats[i].is_void() {
        return (0.0, 0.0);
    }
    let others = || {
        (0..feats.len())
            .filter(move |&j| j != i && !feats[j].is_void())
            .map(|j| &feats[j])
    };
    // (lines, files) as measured: outside tests, or whole for a tests-only candidate.
    let measure = |f: &Features| -> (f64, f64) {
        if f.tests_only {
            (f.size() as f64, f.files.len() as f64)
        } else {
            (f.source_lines as f64, f.source_files as f64)
        }
    };
    let Some(size) = median(others().map(|f| measure(f).0).collect()) else {
        return (0.0, 0.0);
    };
    let files = median(others().map(|f| measure(f).1).collect()).unwrap_or(1.0);
    let (my_size, my_files) = measure(&feats[i]);
    let ratio = my_size / size.max(1.0);
    let log = ratio.max(1e-9).log2().clamp(-3.0, 3.0);
    let scatter = (my_files - files).clamp(0.0, 3.0);
    (milli(log.max(0.0)), milli(scatter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Candidate;

    fn feats(agent: &str, patch: String) -> Features {
        super::super::features::from_diff(&Candidate {
            instance_id: "i".into(),
            agent: agent.into(),
            patch,
            resolved: None,
            origin: Default::default(),
        })
    }

    fn fix(extra: &str) -> String {
        format!("--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n{extra}")
    }

    #[test]
    fn tests_written_with_a_fix_are_not_part_of_its_size_or_scatter() {
        let test: String = (0..40).map(|k| format!("+assert {k}\n")).collect();
        let with_test = format!("--- /dev/null\n+++ b/tests/test_a.py\n@@ -0,0 +1,40 @@\n{test}");
        let big = format!("--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,1 +1,40 @@\n-z = 0\n{test}");
        let fs = vec![
            feats("a", fix("")),
            feats("b", fix("")),
            feats("c", fix(&with_test)),
            feats("d", fix(&big)),
        ];
        // The fix with a 40-line test: the same size and files as the plain fixes.
        assert_eq!(shape(&fs, 2), (0.0, 0.0));
        // The same 40 lines in a second source file: large and scattered.
        let (large, scatter) = shape(&fs, 3);
        assert!(large > 2.0 && scatter == 1.0, "{large} {scatter}");
        // A candidate touching only tests is measured whole.
        let only: Vec<Features> = vec![
            feats("a", fix("")),
            feats("b", fix("")),
            feats("t", with_test.clone()),
        ];
        assert!(only[2].tests_only);
        assert!(shape(&only, 2).0 > 2.0);
    }
}
