//! Helpers shared by the `--exec` tests (`exec_rank.rs`, `exec_llm_repro.rs`): the bundled
//! example run with the machine's python3 and `examples/minitest.py` as test runner.
#![allow(dead_code)]

use super::common::root;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether python3 with the venv module is on PATH (what `--python python3` needs).
pub fn python3_with_venv() -> bool {
    Command::new("python3")
        .args(["-c", "import venv"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The stand-in for `pytest -rA` (no PyPI in CI).
pub fn minitest() -> PathBuf {
    root().join("examples/minitest.py")
}

/// Copy each `(agent, folder)`'s candidate files (`folder/agent/*`, relative to the repository
/// root) into `dest/agent`, making a candidates folder of just those agents.
pub fn copy_agents(dest: &Path, agents: &[(&str, &str)]) {
    for (agent, from) in agents {
        let to = dest.join(agent);
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(root().join(from).join(agent)).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
        }
    }
}

/// The ranked entry of `agent` in `dei rank --json` output.
pub fn by_agent<'a>(v: &'a Value, agent: &str) -> &'a Value {
    v["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == agent)
        .unwrap_or_else(|| panic!("{agent} is ranked"))
}
