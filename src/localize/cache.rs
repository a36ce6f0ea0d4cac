//! The process-wide caches of the file index: file contents by blob id (bounded, least
//! recently used first out) and file terms by content.

use super::index::FileTerms;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub(super) type TermCache = Mutex<HashMap<(u64, usize), Arc<FileTerms>>>;

/// Terms of files by content key (cleared past 200,000 files).
pub(super) fn term_cache() -> &'static TermCache {
    static C: OnceLock<TermCache> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Most bytes of file text the blob cache of [`FileIndex::from_snapshot`](super::index::FileIndex::from_snapshot) keeps: about three
/// snapshots of the largest repository (sympy, 30 MB of Python), so the issues in flight and
/// their neighbours in commit order share reads; least recently used blobs go first.
pub const BLOB_CACHE_BYTES: usize = 96 << 20;

pub(super) struct BlobEntry {
    pub(super) text: Arc<str>,
    pub(super) defs: Arc<[String]>,
    pub(super) used: u64,
}

#[derive(Default)]
pub(super) struct BlobCache {
    pub(super) map: HashMap<git2::Oid, BlobEntry>,
    bytes: usize,
    pub(super) stamp: u64,
}

impl BlobCache {
    pub(super) fn insert(&mut self, id: git2::Oid, text: Arc<str>, defs: Arc<[String]>, used: u64) {
        let len = text.len();
        if len > BLOB_CACHE_BYTES / 4 {
            return;
        }
        if let Some(old) = self.map.insert(id, BlobEntry { text, defs, used }) {
            self.bytes -= old.text.len();
        }
        self.bytes += len;
        if self.bytes > BLOB_CACHE_BYTES {
            // Drop the least recently used down to three quarters of the budget.
            let mut by_age: Vec<(u64, git2::Oid)> =
                self.map.iter().map(|(k, e)| (e.used, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if self.bytes <= BLOB_CACHE_BYTES / 4 * 3 {
                    break;
                }
                if let Some(e) = self.map.remove(&k) {
                    self.bytes -= e.text.len();
                }
            }
        }
    }
}

pub(super) fn blob_cache() -> &'static Mutex<BlobCache> {
    static C: OnceLock<Mutex<BlobCache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(BlobCache::default()))
}
