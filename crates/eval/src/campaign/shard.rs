//! Which share of a matrix one `salsify eval` process runs (`--shard I/N`).

/// Which of `n` shards (counted from 1) to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 1..=count.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}' is not I/N (e.g. 1/4)"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| format!("'{i}' is not a number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("'{n}' is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!(
                "shard {index}/{count}: shards count from 1, so I must be in 1..={count}"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The whole matrix.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Whether the run at `position` of the sorted plan belongs to this shard. Runs are
    /// dealt round-robin, so shards get similar mixes of long and short runs.
    pub fn takes(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}
