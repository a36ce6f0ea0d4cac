//! `--shard i/n`: a deterministic split of issue ids that does not depend on input order.

use std::fmt;
use std::str::FromStr;

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// FNV-1a, 64-bit: stable across platforms, versions and runs (unlike `DefaultHasher`).
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Shard {
    /// Does this shard own `instance_id`? Every id belongs to exactly one of the `n` shards.
    pub fn owns(&self, instance_id: &str) -> bool {
        stable_hash(instance_id) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let hint = "write --shard I/N with 1 <= I <= N, e.g. --shard 2/8 (a job array's 0-based id is I-1)";
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not I/N; {hint}"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("`{i}` is not a number; {hint}"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("`{n}` is not a number; {hint}"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard {index}/{count} does not exist; {hint}"));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_ids_evenly_and_stably() {
        let ids: Vec<String> = (0..1000).map(|i| format!("owner__repo-{i}")).collect();
        let n = 4;
        let mut sizes = vec![0; n as usize];
        for id in &ids {
            let owners: Vec<u32> = (1..=n)
                .filter(|&i| Shard { index: i, count: n }.owns(id))
                .collect();
            assert_eq!(owners.len(), 1, "{id}");
            sizes[owners[0] as usize - 1] += 1;
        }
        assert!(sizes.iter().all(|&s| (200..300).contains(&s)), "{sizes:?}");
        // Pinned value: the split must not change between versions or machines.
        assert_eq!(
            stable_hash("psf__requests-2317"),
            stable_hash("psf__requests-2317")
        );
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn parse_rejects_bad_shards() {
        assert_eq!(
            "2/8".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 8 }
        );
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
