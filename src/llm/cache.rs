//! Persistent response cache: one JSON file per call, named by the sha256 of what was asked
//! (protocol, model, prompt, parameters, sample index, parse attempt), under `<dir>/<2 hex>/`.
//!
//! Writes go to a unique temporary file in the same folder and are renamed into place, so a
//! reader sees either nothing or a whole entry, concurrent writers of the same key never
//! corrupt it (the last rename wins with identical meaning), and a killed run leaves at most
//! a stray `.tmp` file that is ignored. Entries hold the reply and its token counts, never a key.

use super::provider::Reply;
use anyhow::Context as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone)]
pub struct Cache {
    pub dir: PathBuf,
    /// False for a dry run's cache ([`Cache::read_only`]): lookups only, nothing created.
    writable: bool,
}

/// Everything that decides a reply, hashed into the cache key.
#[derive(Debug, serde::Serialize)]
pub struct KeyParts<'a> {
    pub protocol: &'a str,
    pub model: &'a str,
    pub system: &'a str,
    pub user: &'a str,
    pub temperature: f64,
    pub max_tokens: u32,
    /// How the reply is asked for: the schema's name with its length bound (or, for a
    /// free-form reply's own schema, a digest of it), `tags`, `text`, or `json-unschematized`.
    pub format: &'a str,
    pub sample: u32,
    /// 0 for the first try; parse retries ask again under a new key.
    pub attempt: u32,
}

pub fn key(parts: &KeyParts) -> String {
    digest(&serde_json::to_vec(parts).expect("key parts serialize"))
}

/// The sha256 of `bytes` in hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl Cache {
    pub fn open(dir: &Path) -> anyhow::Result<Cache> {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create cache folder {} (choose another with --cache DIR)",
                dir.display()
            )
        })?;
        Ok(Cache {
            dir: dir.to_path_buf(),
            writable: true,
        })
    }

    /// The cache at `dir` for lookups only (a dry run counts what is cached): the folder is
    /// not created, and [`Cache::put`] stores nothing, so a dry run writes nothing.
    pub fn read_only(dir: &Path) -> Cache {
        Cache {
            dir: dir.to_path_buf(),
            writable: false,
        }
    }

    /// The cache at `dir`: [`Cache::read_only`] for a dry run, else [`Cache::open`].
    pub fn for_run(dir: &Path, dry_run: bool) -> anyhow::Result<Cache> {
        if dry_run {
            Ok(Cache::read_only(dir))
        } else {
            Cache::open(dir)
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// A stored reply; a missing, partial or foreign file reads as a miss.
    pub fn get(&self, key: &str) -> Option<Reply> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Store a reply atomically (temp file + rename); a read-only cache stores nothing.
    pub fn put(&self, key: &str, reply: &Reply) -> anyhow::Result<()> {
        if !self.writable {
            return Ok(());
        }
        let path = self.path(key);
        let folder = path.parent().expect("entry has a folder");
        let tmp = folder.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            TMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            // Create the folder only when missing (saves a mkdir per write).
            let mut f = match std::fs::File::create(&tmp) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(folder)?;
                    std::fs::File::create(&tmp)?
                }
                other => other?,
            };
            // No fsync: a killed process cannot tear a renamed file, and after a power loss a
            // torn entry reads as a miss (the call is simply made again).
            f.write_all(&serde_json::to_vec(reply).map_err(std::io::Error::other)?)?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write cache entry {}: {e}", path.display())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(sample: u32) -> KeyParts<'static> {
        KeyParts {
            protocol: "openai",
            model: "m",
            system: "s",
            user: "u",
            temperature: 0.0,
            max_tokens: 5,
            format: "tags",
            sample,
            attempt: 0,
        }
    }

    #[test]
    fn keys_differ_by_sample_and_round_trip() {
        assert_ne!(key(&parts(0)), key(&parts(1)));
        assert_eq!(key(&parts(0)), key(&parts(0)));
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let k = key(&parts(0));
        assert!(c.get(&k).is_none());
        let r = Reply {
            text: "t".into(),
            input_tokens: 1,
            output_tokens: 2,
            finish: "stop".into(),
            estimated: false,
            server_ms: None,
            first_token_ms: None,
        };
        c.put(&k, &r).unwrap();
        assert_eq!(c.get(&k), Some(r));
        // A torn file reads as a miss, not an error.
        std::fs::write(c.path(&k), b"{\"text\":").unwrap();
        assert!(c.get(&k).is_none());
    }

    #[test]
    fn a_read_only_cache_creates_and_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("cache");
        let c = Cache::for_run(&at, true).unwrap();
        let k = key(&parts(3));
        assert!(c.get(&k).is_none());
        let r = Reply {
            text: "t".into(),
            input_tokens: 1,
            output_tokens: 2,
            finish: "stop".into(),
            estimated: false,
            server_ms: None,
            first_token_ms: None,
        };
        c.put(&k, &r).unwrap();
        assert!(!at.exists(), "a read-only cache created {}", at.display());
        // It still reads what a real run stored.
        Cache::for_run(&at, false).unwrap().put(&k, &r).unwrap();
        assert_eq!(c.get(&k), Some(r));
    }

    #[test]
    fn concurrent_writers_never_tear_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let k = key(&parts(7));
        std::thread::scope(|s| {
            for t in 0..8 {
                let c = &c;
                let k = &k;
                s.spawn(move || {
                    for i in 0..50 {
                        let r = Reply {
                            text: format!("{t}-{i}-{}", "x".repeat(4096)),
                            input_tokens: 1,
                            output_tokens: 1,
                            finish: String::new(),
                            estimated: false,
                            server_ms: None,
                            first_token_ms: None,
                        };
                        c.put(k, &r).unwrap();
                        let got = c.get(k).expect("always a whole entry");
                        assert!(got.text.ends_with(&"x".repeat(4096)));
                    }
                });
            }
        });
        let leftovers = std::fs::read_dir(c.path(&k).parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
    }
}
