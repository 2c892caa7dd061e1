//! The messages a world's service has sent its user, counted so that each gets
//! its own id. One counter per trajectory, shared by every tool that sends
//! something (newsroom's summaries and messages draw from the same one), so ids
//! never repeat within a trajectory.

use agentsim_engine::Value;

/// Counts what a world has sent its user and names each item `M1`, `M2`, ...
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    sent: u32,
}

impl Outbox {
    /// An empty outbox: the first id is `M1`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one more item sent and returns its id.
    pub fn next_id(&mut self) -> String {
        self.sent += 1;
        // Ids are M1, M2, ...: a wrapped counter would repeat them.
        assert!(self.sent > 0, "the outbox counter wrapped");
        // Pieces joined, not formatted: one of these a message sent.
        ["M", itoa::Buffer::new().format(self.sent)].concat()
    }

    /// Counts one more message sent and returns the `send_message` response
    /// most worlds document: its `message_id` and `status: "sent"`.
    pub fn sent(&mut self) -> Value {
        super::fields::fields([("message_id", Value::Str(self.next_id())), ("status", Value::str("sent"))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids joined from pieces are the formatter's `M{n}`.
    #[test]
    fn ids_count_from_m1_as_formatted() {
        let mut outbox = Outbox::new();
        for n in 1..=1_200u32 {
            assert_eq!(outbox.next_id(), format!("M{n}"));
        }
        assert_eq!(outbox.sent(), Value::map([("message_id", Value::str("M1201")), ("status", Value::str("sent"))]));
    }
}
