//! `Explore::Priorities`: one trial's priority order over the sessions and the
//! world's own events, in the manner of PCT (probabilistic concurrency
//! testing, of depth 1). A session's priority is the band of the
//! distributions its latencies and think times are drawn from, and the order
//! among events at one time.

use crate::latency::Band;
use crate::rng::Stream;
use crate::sessions::SessionId;

/// The priority order of one trial: the rank of each session, and of the
/// world, from 0 (the highest).
pub(super) struct Priorities {
    /// `ranks[s]` for session `s`; the last entry is the world's.
    ranks: Vec<u32>,
}

impl Priorities {
    /// A uniformly random order over `sessions` sessions and the world,
    /// drawn from `rng` (Fisher-Yates).
    pub(super) fn draw(sessions: u32, rng: &mut Stream) -> Self {
        let mut ranks: Vec<u32> = (0..=sessions).collect();
        for i in (1..ranks.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            ranks.swap(i, j);
        }
        Priorities { ranks }
    }

    /// The band session `session` draws its latencies and think times from.
    pub(super) fn band(&self, session: SessionId) -> Band {
        let of = u32::try_from(self.ranks.len()).expect("at most SESSIONS_MAX sessions and the world");
        Band { rank: self.ranks[session as usize], of }
    }

    /// The rank among events at one time of an event scheduled while
    /// `acting` acts (`None`: the world's own): lower pops first.
    pub(super) fn rank(&self, acting: Option<SessionId>) -> u32 {
        match acting {
            Some(session) => self.ranks[session as usize],
            None => *self.ranks.last().expect("the world has a rank"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_ranks_every_session_and_the_world_once() {
        let mut rng = crate::rng::StreamSource::new([3; 32], 1).stream("priorities");
        let p = Priorities::draw(9, &mut rng);
        let mut ranks: Vec<u32> = (0..9).map(|s| p.rank(Some(s))).chain([p.rank(None)]).collect();
        ranks.sort_unstable();
        assert_eq!(ranks, (0..10).collect::<Vec<_>>());
        assert_eq!(p.band(4), Band { rank: p.rank(Some(4)), of: 10 });
    }
}
