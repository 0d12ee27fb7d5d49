//! Coalescing of live output (pure): consecutive reads of the same stream are merged into one
//! delivery of at most `max_bytes`, delivered at the latest `interval` after its first byte was
//! read. A read of the other stream delivers what is pending first, so the order of the
//! deliveries is the order of the reads, and every byte is delivered exactly once.

use std::time::{Duration, Instant};

use crate::sink::Stream;

/// Pending live output of one stream, waiting for its time slice or its size limit.
#[derive(Debug)]
pub(crate) struct Coalescer {
    pending: Vec<u8>,
    stream: Stream,
    max_bytes: usize,
    interval: Duration,
    /// When the first pending byte was read.
    since: Option<Instant>,
}

impl Coalescer {
    /// `max_bytes == 0` or a zero `interval` delivers every read as it is (no coalescing).
    pub(crate) fn new(max_bytes: usize, interval: Duration) -> Self {
        let enabled = max_bytes > 0 && !interval.is_zero();
        Self {
            pending: Vec::with_capacity(if enabled { max_bytes } else { 0 }),
            stream: Stream::Stdout,
            max_bytes: if enabled { max_bytes } else { 0 },
            interval,
            since: None,
        }
    }

    /// Adds one read; `deliver` receives every delivery that became due (the other stream's
    /// pending bytes, full deliveries of `max_bytes`).
    pub(crate) fn push(
        &mut self,
        stream: Stream,
        mut chunk: &[u8],
        now: Instant,
        deliver: &mut impl FnMut(Stream, &[u8]),
    ) {
        if chunk.is_empty() {
            return;
        }
        if self.max_bytes == 0 {
            deliver(stream, chunk);
            return;
        }
        if stream != self.stream {
            self.flush(deliver);
            self.stream = stream;
        }
        if !self.pending.is_empty() {
            let take = (self.max_bytes - self.pending.len()).min(chunk.len());
            self.pending.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.pending.len() < self.max_bytes {
                return;
            }
            self.flush(deliver);
        }
        // Whole deliveries straight from the read buffer: no copy.
        while chunk.len() >= self.max_bytes {
            deliver(stream, &chunk[..self.max_bytes]);
            chunk = &chunk[self.max_bytes..];
        }
        if !chunk.is_empty() {
            self.pending.extend_from_slice(chunk);
            self.since = Some(now);
        }
    }

    /// When the pending bytes are due (`None` when nothing is pending).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.since.map(|t| t + self.interval)
    }

    /// Delivers the pending bytes if their time slice is over.
    pub(crate) fn flush_due(&mut self, now: Instant, deliver: &mut impl FnMut(Stream, &[u8])) {
        if self.deadline().is_some_and(|d| d <= now) {
            self.flush(deliver);
        }
    }

    /// Delivers whatever is pending (end of output, a switch of stream, cancellation).
    pub(crate) fn flush(&mut self, deliver: &mut impl FnMut(Stream, &[u8])) {
        self.since = None;
        if !self.pending.is_empty() {
            deliver(self.stream, &self.pending);
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Log = Vec<(Stream, Vec<u8>)>;

    fn run(c: &mut Coalescer, reads: &[(Stream, &[u8])], now: Instant) -> Log {
        let mut log = Log::new();
        for (s, r) in reads {
            c.push(*s, r, now, &mut |s, b| log.push((s, b.to_vec())));
        }
        c.flush(&mut |s, b| log.push((s, b.to_vec())));
        log
    }

    fn concat(log: &Log, stream: Stream) -> Vec<u8> {
        log.iter()
            .filter(|(s, _)| *s == stream)
            .flat_map(|(_, b)| b.clone())
            .collect()
    }

    #[test]
    fn small_reads_of_one_stream_become_one_delivery() {
        let mut c = Coalescer::new(64, Duration::from_millis(30));
        let reads: Vec<(Stream, &[u8])> = vec![(Stream::Stdout, b"ab"), (Stream::Stdout, b"cd")];
        let log = run(&mut c, &reads, Instant::now());
        assert_eq!(log, vec![(Stream::Stdout, b"abcd".to_vec())]);
    }

    #[test]
    fn deliveries_never_exceed_the_size_limit_and_keep_every_byte_in_order() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        for max in [1, 7, 64, 4096] {
            for read in [1, 5, 64, 1000, 10_000] {
                let mut c = Coalescer::new(max, Duration::from_millis(30));
                let reads: Vec<(Stream, &[u8])> =
                    data.chunks(read).map(|r| (Stream::Stdout, r)).collect();
                let log = run(&mut c, &reads, Instant::now());
                assert!(log.iter().all(|(_, b)| !b.is_empty() && b.len() <= max));
                assert_eq!(concat(&log, Stream::Stdout), data, "max={max} read={read}");
                // Only the last delivery may be short.
                let short = log.iter().filter(|(_, b)| b.len() < max).count();
                assert!(
                    short <= 1,
                    "max={max} read={read}: {short} short deliveries"
                );
            }
        }
    }

    #[test]
    fn a_read_of_the_other_stream_delivers_the_pending_bytes_first() {
        let mut c = Coalescer::new(1024, Duration::from_millis(30));
        let reads: Vec<(Stream, &[u8])> = vec![
            (Stream::Stdout, b"o1"),
            (Stream::Stdout, b"o2"),
            (Stream::Stderr, b"e1"),
            (Stream::Stdout, b"o3"),
            (Stream::Stderr, b"e2"),
            (Stream::Stderr, b"e3"),
        ];
        let log = run(&mut c, &reads, Instant::now());
        assert_eq!(
            log,
            vec![
                (Stream::Stdout, b"o1o2".to_vec()),
                (Stream::Stderr, b"e1".to_vec()),
                (Stream::Stdout, b"o3".to_vec()),
                (Stream::Stderr, b"e2e3".to_vec()),
            ]
        );
    }

    #[test]
    fn pending_bytes_are_due_one_interval_after_their_first_byte() {
        let t0 = Instant::now();
        let slice = Duration::from_millis(30);
        let mut c = Coalescer::new(1024, slice);
        let mut log = Log::new();
        assert_eq!(c.deadline(), None);
        c.push(Stream::Stdout, b"a", t0, &mut |s, b| {
            log.push((s, b.to_vec()))
        });
        c.push(
            Stream::Stdout,
            b"b",
            t0 + Duration::from_millis(20),
            &mut |s, b| log.push((s, b.to_vec())),
        );
        assert_eq!(
            c.deadline(),
            Some(t0 + slice),
            "the first byte starts the slice"
        );
        c.flush_due(t0 + Duration::from_millis(29), &mut |s, b| {
            log.push((s, b.to_vec()))
        });
        assert!(log.is_empty());
        c.flush_due(t0 + slice, &mut |s, b| log.push((s, b.to_vec())));
        assert_eq!(log, vec![(Stream::Stdout, b"ab".to_vec())]);
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn zero_limits_deliver_every_read_as_is() {
        for mut c in [
            Coalescer::new(0, Duration::from_millis(30)),
            Coalescer::new(64, Duration::ZERO),
        ] {
            let reads: Vec<(Stream, &[u8])> =
                vec![(Stream::Stdout, b"ab"), (Stream::Stdout, b"cd")];
            let log = run(&mut c, &reads, Instant::now());
            assert_eq!(
                log,
                vec![
                    (Stream::Stdout, b"ab".to_vec()),
                    (Stream::Stdout, b"cd".to_vec())
                ]
            );
        }
    }
}
