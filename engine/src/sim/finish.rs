//! The end of a run: the world judges its final state, each session's end is
//! classified into an outcome, and the trajectory is assembled.

use crate::agent::Finish;
use crate::sessions::SessionId;
use crate::trajectory::{Metrics, Outcome, SessionResult, Trajectory};
use crate::world::{Verdict, World};

use super::session::{Ended, Session};
use super::{End, LOOP_REPEATS_MIN, Sim};

impl<E> Sim<'_, E> {
    pub(super) fn finish<W: World<Event = E>>(mut self, world: &W, seed: u64) -> Trajectory {
        assert_eq!(self.open, 0, "every session has ended before the run is judged");
        assert!(
            self.results.len() + self.actions.len() <= self.queue.len(),
            "a result or action waits in its slab only while its event is queued"
        );
        let state_hash = world.state_hash();
        let checks = world.checks();
        let (outcome, reason, verdict, metrics, sessions) = if self.single {
            let verdict = world.judge();
            assert!(
                !verdict.success || checks.iter().all(|c| !c.in_reward || c.passed != Some(false)),
                "a success whose reward basis failed a check: {checks:?}"
            );
            let r = judged(0, &self.sessions[0], verdict);
            (r.outcome, r.end_reason, r.verdict, r.metrics, Vec::new())
        } else {
            self.finish_sessions(world)
        };
        let mut metrics = metrics;
        metrics.virtual_ms = self.now_ms;
        self.enter(None);
        self.recorder.record_end(self.now_ms, outcome, &reason, &verdict);
        metrics.events = self.recorder.count();
        let (digest, events, digest_batch) = self.recorder.finish_with_batch();
        let (mut results, mut actions) = (self.results, self.actions);
        results.clear();
        actions.clear();
        let (log_weight, rule_draws) = (self.tools.log_weight().ln(), self.tools.rule_draws().to_vec());
        let tool_states = self.tools.into_states();
        super::spare::give(super::spare::Spare {
            heap: self.queue.into_heap(),
            results,
            actions,
            digest_batch,
            tool_states,
        });
        Trajectory {
            seed,
            trial: 0,
            outcome,
            verdict,
            end_reason: reason,
            metrics,
            fault_kinds: self.fault_kinds,
            minefields: self.minefield_names,
            realised_faults: self.realised_faults,
            decisions: self.decisions,
            digest,
            events,
            state_hash,
            checks,
            log_weight,
            rule_draws,
            sessions,
        }
    }

    /// Judges every session of a run of many and the run as a whole: its
    /// outcome, reason, verdict and the sum of the sessions' counts. Sessions
    /// that never started or whose agent never came are listed, and counted
    /// apart from the agents' ("8 of 8 sessions succeeded, 0 hurt by another,
    /// 2 not started").
    fn finish_sessions<W: World<Event = E>>(
        &mut self,
        world: &W,
    ) -> (Outcome, String, Verdict, Metrics, Vec<SessionResult>) {
        let mut metrics = Metrics::default();
        let mut results = Vec::with_capacity(self.config.sessions.count as usize);
        for (s, session) in self.sessions.iter().enumerate() {
            let mut result = judged(s as SessionId, session, world.judge_session(s as SessionId));
            // The world names whose write its judge blames; the blame stands
            // only if that session wrote during this one's life: a session that
            // gave up before the other's first write was not hurt by it.
            if result.hurt_by.is_none() && result.outcome != Outcome::Success {
                let (from_ms, to_ms) = (result.arrived_ms, result.ended_ms);
                result.hurt_by =
                    world.session_hurt_by(s as SessionId).filter(|&w| self.wrote_during(w, from_ms, to_ms));
            }
            add_counts(&mut metrics, &result.metrics);
            results.push(result);
        }
        self.not_started(&mut results);
        metrics.violations += self.world_violations;
        let outcome = sessions_outcome(&results, self.world_violations);
        let reason = sessions_reason(&results);
        let counted = results.iter().filter(|r| is_agents(r.outcome)).count();
        let succeeded = results.iter().filter(|r| r.outcome == Outcome::Success).count();
        let verdict = Verdict {
            success: counted > 0 && succeeded == counted,
            escalated: results.iter().any(|r| r.verdict.escalated),
            milestone: "sessions",
            detail: reason.clone(),
            told_accurately: None,
            uncertain: None,
        };
        (outcome, reason, verdict, metrics, results)
    }

    /// Adds to `results` the sessions that had not arrived when the run ended
    /// (at the horizon, or on the events budget): `not_started`, each at the
    /// arrival time drawn for it (so that a shrunk scenario that keeps one
    /// draws it where it was), with no counts.
    fn not_started(&mut self, results: &mut Vec<SessionResult>) {
        let count = self.config.sessions.count;
        let first = self.sessions.len() as SessionId;
        let mut at_ms = self.next_arrival_ms.unwrap_or(self.now_ms);
        for s in first..count {
            if s > first
                && let Some(rng) = self.arrivals_rng.as_mut()
            {
                at_ms = self.config.sessions.arrival.next_ms(s, at_ms, rng).max(at_ms);
            }
            let reason = if at_ms > self.config.horizon_ms {
                "arrives after the horizon".to_string()
            } else {
                "the run ended before it arrived".to_string()
            };
            let verdict = Verdict {
                success: false,
                escalated: false,
                milestone: "not_started",
                detail: reason.clone(),
                told_accurately: None,
                uncertain: None,
            };
            results.push(SessionResult {
                session: s,
                arrived_ms: at_ms,
                ended_ms: at_ms,
                outcome: Outcome::NotStarted,
                verdict,
                end_reason: reason,
                metrics: Metrics::default(),
                model_queue_ms: 0,
                hurt_by: None,
            });
        }
    }
}

/// Whether a session of this outcome counts in the agents' rates: every
/// outcome but a session whose agent never came or that never started.
pub fn is_agents(outcome: Outcome) -> bool {
    !matches!(outcome, Outcome::Absent | Outcome::NotStarted)
}

/// The run's reason: the agents' sessions that succeeded and were hurt, then
/// those outside the agents' rates, when there are any.
fn sessions_reason(results: &[SessionResult]) -> String {
    let counted = results.iter().filter(|r| is_agents(r.outcome)).count();
    let succeeded = results.iter().filter(|r| r.outcome == Outcome::Success).count();
    let hurt = results.iter().filter(|r| r.hurt_by.is_some()).count();
    let mut reason = format!("{succeeded} of {counted} sessions succeeded, {hurt} hurt by another");
    for (outcome, words) in [(Outcome::Absent, "absent"), (Outcome::NotStarted, "not started")] {
        let n = results.iter().filter(|r| r.outcome == outcome).count();
        if n > 0 {
            reason.push_str(&format!(", {n} {words}"));
        }
    }
    reason
}

/// Session `id`'s result under `verdict`: its outcome classified from how it
/// ended, and its counts with the minefields that fired in it.
fn judged(id: SessionId, session: &Session<'_>, verdict: Verdict) -> SessionResult {
    let ended = session.ended.as_ref().expect("every session has ended before it is judged");
    let (outcome, end_reason) = classify(&ended.end, &verdict, session.violations, ended);
    let mut metrics = ended.metrics.clone();
    metrics.violations = session.violations;
    metrics.cost_micro_usd = micro_usd(ended.cost_usd);
    SessionResult {
        session: id,
        arrived_ms: session.arrived_ms,
        ended_ms: ended.at_ms,
        outcome,
        verdict,
        end_reason,
        metrics,
        model_queue_ms: ended.model_queue_ms,
        hurt_by: session.hurt_by,
    }
}

fn micro_usd(usd: f64) -> u64 {
    (usd * 1e6).round() as u64
}

/// Adds one session's counts to the run's.
fn add_counts(sum: &mut Metrics, one: &Metrics) {
    sum.turns = sum.turns.saturating_add(one.turns);
    sum.tool_calls = sum.tool_calls.saturating_add(one.tool_calls);
    sum.failed_calls = sum.failed_calls.saturating_add(one.failed_calls);
    sum.faults_seen = sum.faults_seen.saturating_add(one.faults_seen);
    sum.violations = sum.violations.saturating_add(one.violations);
    sum.prompt_tokens = sum.prompt_tokens.saturating_add(one.prompt_tokens);
    sum.completion_tokens = sum.completion_tokens.saturating_add(one.completion_tokens);
    sum.cost_micro_usd = sum.cost_micro_usd.saturating_add(one.cost_micro_usd);
    sum.rejected_calls = sum.rejected_calls.saturating_add(one.rejected_calls);
}

/// The outcome of a run of many sessions: a violation if a minefield fired
/// anywhere, success if every session of the agents' succeeded (an absent or
/// not started session is none of theirs), otherwise the outcome of the first
/// of theirs (in order of arrival) that did not.
pub fn sessions_outcome(sessions: &[SessionResult], world_violations: u32) -> Outcome {
    if world_violations > 0 || sessions.iter().any(|s| s.outcome == Outcome::Violation) {
        return Outcome::Violation;
    }
    // Sessions outside the agents' rates do not decide the run, unless no
    // session is the agents' at all (every client absent).
    let mut agents = sessions.iter().map(|s| s.outcome).filter(|&o| is_agents(o)).peekable();
    if agents.peek().is_none() {
        let absent = sessions.iter().any(|s| s.outcome == Outcome::Absent);
        return if absent { Outcome::Absent } else { Outcome::NotStarted };
    }
    agents.find(|&o| o != Outcome::Success).unwrap_or(Outcome::Success)
}

/// Why a session stopped, in words.
pub(super) fn reason(end: &End) -> String {
    match end {
        End::Finished(Finish::Done) => "agent finished".to_string(),
        End::Finished(Finish::GaveUp { reason }) => format!("agent gave up: {reason}"),
        End::Finished(Finish::Halted { layer, reason }) => format!("halted by {layer}: {reason}"),
        End::Finished(Finish::Failed { reason }) => format!("agent failed: {reason}"),
        End::Finished(Finish::Absent) => "no agent came".to_string(),
        End::UserFailed(reason) => format!("the user's model failed: {reason}"),
        End::UserStopped => "the user ended the conversation".to_string(),
        End::Budget(which) => format!("{which} budget exhausted"),
        End::Horizon => "horizon reached".to_string(),
        End::Stalled => "nothing left to happen".to_string(),
    }
}

/// Judges the outcome: the world's state first (violations, an absent agent, a
/// verdict the reader could not decide, success), then how the session stopped.
fn classify(end: &End, verdict: &Verdict, violations: u32, ended: &Ended) -> (Outcome, String) {
    let repeat_run = ended.repeat_run;
    // An absent agent did nothing to be judged by, whatever state others left
    // its user's task in (a refund another session issued may serve it); the
    // guard keeps a session that made a call judged on what it did.
    let absent = matches!(end, End::Finished(Finish::Absent)) && ended.metrics.tool_calls == 0;
    let outcome = if violations > 0 {
        Outcome::Violation
    } else if absent {
        Outcome::Absent
    } else if verdict.uncertain.is_some() && !verdict.escalated {
        Outcome::Uncertain
    } else if verdict.success {
        Outcome::Success
    } else if verdict.escalated {
        Outcome::Escalated
    } else {
        match end {
            End::Finished(Finish::Done | Finish::Absent) | End::UserStopped => Outcome::WrongResult,
            End::Finished(Finish::GaveUp { .. }) => Outcome::GaveUp,
            End::Finished(Finish::Halted { .. }) => Outcome::Looped,
            End::Finished(Finish::Failed { .. }) | End::UserFailed(_) => Outcome::AgentError,
            End::Budget(_) if repeat_run >= LOOP_REPEATS_MIN => Outcome::Looped,
            End::Budget(_) => Outcome::BudgetExhausted,
            End::Horizon | End::Stalled => Outcome::Horizon,
        }
    };
    (outcome, reason(end))
}
