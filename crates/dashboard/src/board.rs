//! The page's numbers, sans-IO: values reported at any time are gathered into fixed time bins
//! and each finished bin becomes one [`Sample`] (a time and a value per series).
//!
//! A live call and a recorded run feed the same board (the call as things happen, the replay
//! from its files in time order), so both pages show the same series computed the same way.
//!
//! The run's end closes the last bin where the run ended, not where the bin would have: a
//! rate is divided by the seconds its bins really cover, so the last point of a run that ends
//! mid-bin does not dip, and the time axis is as long as the run.

use std::collections::{BTreeMap, VecDeque};

use salsify_time::Duration;
use serde_json::{json, Map, Value};

/// How a series turns the values reported in a bin into one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    /// Sum per second over the last second (a rate: report bytes as kilobits for kb/s, or 1
    /// per event for events per second); its running total is kept too.
    Rate,
    /// Mean of the bin's values (no point for an empty bin).
    Mean,
    /// Largest of the bin's values.
    Max,
    /// The last value reported (a gauge).
    Last,
}

/// One finished bin: its end time and each series' value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// End of the bin, from the run's origin.
    pub t: Duration,
    /// Series name to value.
    pub values: BTreeMap<String, f64>,
    /// Running totals of the [`Agg::Rate`] series.
    pub totals: BTreeMap<String, f64>,
}

impl Sample {
    /// The sample as the page reads it: `{"t": seconds, "v": {..}, "tot": {..}}`.
    pub fn to_json(&self) -> Value {
        let map = |m: &BTreeMap<String, f64>| {
            m.iter()
                .filter(|(_, v)| v.is_finite())
                .map(|(k, v)| (k.clone(), json!(round(*v))))
                .collect::<Map<String, Value>>()
        };
        json!({
            "t": round(self.t.as_secs_f64()),
            "v": map(&self.values),
            "tot": map(&self.totals),
        })
    }
}

/// Four significant decimals are plenty on a chart and keep the stream small.
fn round(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// What one series gathered in the open bin.
#[derive(Debug, Default, Clone, Copy)]
struct Acc {
    sum: f64,
    n: u32,
    max: f64,
    last: f64,
}

/// The bins, series by series.
#[derive(Debug)]
pub struct Board {
    bin: Duration,
    /// Bins a rate is summed over (one second's worth).
    window: usize,
    /// Index of the open bin.
    open: u64,
    kinds: BTreeMap<String, Agg>,
    acc: BTreeMap<String, Acc>,
    /// Per rate series, the sums of the last `window` bins and the seconds each covered.
    recent: BTreeMap<String, VecDeque<(f64, f64)>>,
    /// Where the run ends, once known: later values count in the last bin, which ends there.
    end: Option<Duration>,
    totals: BTreeMap<String, f64>,
    /// Closed bins not yet polled.
    pending: VecDeque<Sample>,
}

impl Board {
    /// Bins of `bin` (250 ms on the page: four points a second).
    pub fn new(bin: Duration) -> Board {
        let bin = bin.max(Duration::from_millis(10));
        let window = (1e6 / bin.as_micros() as f64).round().max(1.0) as usize;
        Board {
            bin,
            window,
            open: 0,
            kinds: BTreeMap::new(),
            acc: BTreeMap::new(),
            recent: BTreeMap::new(),
            end: None,
            totals: BTreeMap::new(),
            pending: VecDeque::new(),
        }
    }

    /// Says where the run ends (from its origin): no bin is closed past it, and values
    /// reported at or after it count in the last bin. Bins already closed stay as they are.
    pub fn set_end(&mut self, end: Duration) {
        self.end = Some(end);
    }

    /// Start of the open bin.
    fn open_start(&self) -> Duration {
        self.bin * self.open as u32
    }

    /// `at` moved into the run: before its end (when known).
    fn within(&self, at: Duration) -> Duration {
        match self.end {
            Some(end) => at.min(end.saturating_sub(Duration::from_micros(1))),
            None => at,
        }
    }

    /// Reports `value` of series `name` at `at` (from the run's origin). A value older than
    /// the open bin counts in the open bin: bins already closed do not change.
    pub fn add(&mut self, at: Duration, name: &str, agg: Agg, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.advance(self.within(at));
        if !self.kinds.contains_key(name) {
            self.kinds.insert(name.to_string(), agg);
        }
        let a = self.acc.entry(name.to_string()).or_default();
        a.max = if a.n == 0 { value } else { a.max.max(value) };
        a.sum += value;
        a.n += 1;
        a.last = value;
        if agg == Agg::Rate {
            *self.totals.entry(name.to_string()).or_default() += value;
        }
    }

    /// Closes every bin that ends by `now` (and before the run's end) and returns the closed
    /// bins not yet returned.
    pub fn poll(&mut self, now: Duration) -> Vec<Sample> {
        self.advance(self.within(now));
        self.pending.drain(..).collect()
    }

    /// Ends the run at `end` (from its origin; [`Board::set_end`]'s if that came first and
    /// is earlier): closes the bins up to it, the last one where the run ended, and returns
    /// what is left. A last bin of no length is left out unless values came in it.
    pub fn finish(&mut self, end: Duration) -> Vec<Sample> {
        let end = self.end.map_or(end, |e| e.min(end));
        self.set_end(end);
        self.advance(self.within(end));
        let end = end.max(self.open_start());
        if end > self.open_start() || !self.acc.is_empty() {
            let sample = self.close_at(end);
            self.pending.push_back(sample);
        }
        self.pending.drain(..).collect()
    }

    /// Closes the bins that end by `now`.
    fn advance(&mut self, now: Duration) {
        let index = (now.as_micros() / self.bin.as_micros()) as u64;
        while self.open < index {
            let end = self.open_start() + self.bin;
            let sample = self.close_at(end);
            self.pending.push_back(sample);
        }
    }

    /// Turns the open bin, ending at `end`, into a sample and opens the next one.
    fn close_at(&mut self, end: Duration) -> Sample {
        let covered = end.saturating_sub(self.open_start()).as_secs_f64();
        let mut values = BTreeMap::new();
        let acc = std::mem::take(&mut self.acc);
        for (name, agg) in &self.kinds {
            let a = acc.get(name).copied().unwrap_or_default();
            let value = match agg {
                Agg::Rate => {
                    let recent = self.recent.entry(name.clone()).or_default();
                    if recent.len() == self.window {
                        recent.pop_front();
                    }
                    recent.push_back((a.sum, covered));
                    let span: f64 = recent.iter().map(|r| r.1).sum();
                    (span > 0.0).then(|| recent.iter().map(|r| r.0).sum::<f64>() / span)
                }
                _ if a.n == 0 => None,
                Agg::Mean => Some(a.sum / f64::from(a.n)),
                Agg::Max => Some(a.max),
                Agg::Last => Some(a.last),
            };
            if let Some(v) = value {
                values.insert(name.clone(), v);
            }
        }
        self.open += 1;
        Sample {
            t: end,
            values,
            totals: self.totals.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A rate is the last second's sum per second; a mean, max and gauge are the bin's; a
    /// late value lands in the open bin.
    #[test]
    fn bins_aggregate_each_series_its_own_way() {
        let mut b = Board::new(ms(250));
        for i in 0..30u64 {
            // 30 frames a second for a second, 10 kbit each.
            b.add(ms(i * 33), "sent", Agg::Rate, 10.0);
            b.add(ms(i * 33), "delay", Agg::Mean, i as f64);
            b.add(ms(i * 33), "peak", Agg::Max, i as f64);
        }
        b.add(ms(990), "q", Agg::Last, 7.0);
        let samples = b.poll(ms(1000));
        assert_eq!(samples.len(), 4);
        let last = &samples[3];
        assert_eq!(last.t, ms(1000));
        assert!((last.values["sent"] - 300.0).abs() < 1e-9, "{last:?}");
        assert_eq!(last.values["q"], 7.0);
        assert_eq!(last.values["peak"], 29.0);
        assert_eq!(last.totals["sent"], 300.0);
        // Bin [250, 500) held frames 8..=15.
        assert!((samples[1].values["delay"] - 11.5).abs() < 1e-9);
        // A gauge reported in no bin has no point there.
        assert!(!samples[0].values.contains_key("q"));
        b.add(ms(100), "sent", Agg::Rate, 5.0);
        let end = b.finish(ms(1000));
        assert_eq!(end.len(), 1, "a late value still counts: {end:?}");
        assert_eq!(end[0].totals["sent"], 305.0);
        assert_eq!(end[0].t, ms(1000), "no bin past the end");
    }

    /// A run that ends mid-bin: the last point is where it ended and its rate is the rate
    /// over the seconds its bins covered (no dip); the time axis is as long as the run.
    #[test]
    fn the_last_bin_ends_with_the_run() {
        let mut b = Board::new(ms(250));
        let mut samples = Vec::new();
        // 30 events a second for 1.1 s, a gauge at 7 throughout.
        for i in 0..33u64 {
            let at = ms(i * 1000 / 30);
            b.add(at, "shown", Agg::Rate, 1.0);
            b.add(at, "q", Agg::Last, 7.0);
            samples.extend(b.poll(at));
        }
        samples.extend(b.finish(ms(1100)));
        let last = samples.last().unwrap();
        assert_eq!(last.t, ms(1100));
        assert_eq!(samples.len(), 5, "four whole bins and the last part");
        let rate = last.values["shown"];
        assert!((rate - 30.0).abs() < 1.5, "the rate at the end: {rate}");
        assert_eq!(last.values["q"], 7.0);
        assert_eq!(last.totals["shown"], 33.0);
    }

    /// Once the end is known, no bin is closed past it and what comes later counts in the
    /// last bin (and in the totals).
    #[test]
    fn values_after_the_end_count_in_the_last_bin() {
        let mut b = Board::new(ms(250));
        b.add(ms(100), "shown", Agg::Rate, 1.0);
        b.set_end(ms(500));
        let closed = b.poll(ms(2000));
        assert_eq!(closed.iter().map(|s| s.t).collect::<Vec<_>>(), [ms(250)]);
        b.add(ms(900), "shown", Agg::Rate, 1.0);
        b.add(ms(950), "delay", Agg::Mean, 40.0);
        let end = b.finish(ms(3000));
        assert_eq!(end.len(), 1);
        assert_eq!(end[0].t, ms(500));
        assert_eq!(end[0].totals["shown"], 2.0);
        assert_eq!(end[0].values["delay"], 40.0);
        assert!((end[0].values["shown"] - 4.0).abs() < 1e-9, "2 in 0.5 s");
    }

    /// Bins with nothing in them still close, so the page's time axis keeps moving.
    #[test]
    fn empty_bins_close_on_time() {
        let mut b = Board::new(ms(250));
        assert!(b.poll(ms(200)).is_empty());
        let s = b.poll(ms(1100));
        assert_eq!(
            s.iter().map(|s| s.t).collect::<Vec<_>>(),
            [250, 500, 750, 1000].map(ms)
        );
        let j = s[0].to_json();
        assert_eq!(j["t"], json!(0.25));
    }
}
