//! A random stream derived on its first draw. Deriving a stream hashes its
//! name with the seed (about 2,300 instructions); a scripted world keeps two
//! per trajectory (the script's `random`, the processes' intervals) that most
//! worlds never draw from. A stream is a pure function of the seed and its
//! name, so deriving it late gives the same draws.

use agentsim_engine::{Stream, StreamSource};

/// A stream, derived when first drawn from.
#[derive(Clone, Debug)]
pub struct LazyStream(Inner);

#[derive(Clone, Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "held in place in a world and its session, never moved on a hot path; boxing would allocate on every first draw"
)]
enum Inner {
    /// Not drawn from yet: where it comes from.
    Later(StreamSource, &'static str),
    /// Derived.
    Ready(Stream),
}

impl LazyStream {
    /// `source.stream(name)`, derived on the first draw.
    pub fn later(source: &StreamSource, name: &'static str) -> LazyStream {
        LazyStream(Inner::Later(source.clone(), name))
    }

    /// The stream, derived now if it was not yet.
    pub fn get(&mut self) -> &mut Stream {
        if let Inner::Later(source, name) = &self.0 {
            self.0 = Inner::Ready(source.stream(name));
        }
        match &mut self.0 {
            Inner::Ready(stream) => stream,
            Inner::Later(..) => unreachable!("derived just above"),
        }
    }
}

impl From<Stream> for LazyStream {
    fn from(stream: Stream) -> LazyStream {
        LazyStream(Inner::Ready(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream derived late draws what the one derived at once draws, for
    /// several seeds and names, and keeps its position between draws.
    #[test]
    fn draws_what_the_stream_derived_at_once_draws() {
        for seed in [0, 1, 7, 1 << 40] {
            let source = StreamSource::new([3; 32], seed).with_trial(2);
            for name in ["script", "world", "judge"] {
                let mut eager = source.stream(name);
                let mut lazy = LazyStream::later(&source, name);
                for i in 0..50u64 {
                    assert_eq!(lazy.get().below(1_000 + i), eager.below(1_000 + i), "seed {seed}, {name}, draw {i}");
                }
                let mut ready = LazyStream::from(source.stream(name));
                assert_eq!(ready.get().next_u64(), source.stream(name).next_u64());
            }
        }
    }
}
