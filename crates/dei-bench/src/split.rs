//! The one split of instances into two halves, used by every measurement: an instance is in
//! the **tune** half when the first byte of SHA-256(`instance_id`) is even, else in the
//! **report** half. Weights are fitted on the tune half only (the localizer's, the offline
//! committee's) and figures are reported on the report half, which nothing was fitted on.
//! Stable across platforms and Rust versions, and independent of the order of the data.

use sha2::{Digest, Sha256};

/// Which instances to evaluate: all of them, or one half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    All,
    Tune,
    Report,
}

impl std::str::FromStr for Split {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Split::All),
            "tune" => Ok(Split::Tune),
            "report" => Ok(Split::Report),
            _ => Err(format!("unknown split `{s}` (all, tune, report)")),
        }
    }
}

impl Split {
    /// Whether `instance_id` is in this split.
    pub fn contains(self, instance_id: &str) -> bool {
        self == Split::All || half(instance_id) == self
    }
}

/// The half an instance belongs to: [`Split::Tune`] or [`Split::Report`].
pub fn half(instance_id: &str) -> Split {
    if Sha256::digest(instance_id.as_bytes())[0] % 2 == 0 {
        Split::Tune
    } else {
        Split::Report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_by_the_first_byte_of_sha256() {
        // First bytes of SHA-256 (checked with Python's hashlib): even → tune, odd → report.
        assert_eq!(half("pallets__flask-4045"), Split::Tune);
        assert_eq!(half("django__django-11099"), Split::Tune);
        assert_eq!(half("psf__requests-863"), Split::Report);
        assert_eq!(half("sympy__sympy-20590"), Split::Report);
        assert!(Split::All.contains("psf__requests-863"));
        assert!(Split::Report.contains("psf__requests-863"));
        assert!(!Split::Tune.contains("psf__requests-863"));
        assert_eq!("report".parse::<Split>(), Ok(Split::Report));
        assert!("fit"
            .parse::<Split>()
            .unwrap_err()
            .contains("all, tune, report"));
    }
}
