//! The users of a world that holds many sessions, one handled at a time.
//!
//! The user being handled lives in the world itself (its `user` field, which
//! the world's code reads everywhere); the others wait here, and a session
//! that ended keeps only what its judge reads, so that a run's memory grows
//! with the sessions in flight and by a record per ended one.

use agentsim_engine::SessionId;

/// A user whose judge reads a record of it, kept after its session ends.
pub trait Seated {
    /// What the judge reads.
    type Record;

    /// The record.
    fn record(&self) -> &Self::Record;

    /// The record, to change.
    fn record_mut(&mut self) -> &mut Self::Record;

    /// Takes the record out, leaving a record of nothing: the user handled
    /// when its session ends stays in the world until the next switch.
    fn take_record(&mut self) -> Self::Record;

    /// The record of a user no longer needed.
    fn into_record(self) -> Self::Record;
}

impl<T: Seated> Seated for Box<T> {
    type Record = T::Record;

    fn record(&self) -> &T::Record {
        (**self).record()
    }

    fn record_mut(&mut self) -> &mut T::Record {
        (**self).record_mut()
    }

    fn take_record(&mut self) -> T::Record {
        (**self).take_record()
    }

    fn into_record(self) -> T::Record {
        (*self).into_record()
    }
}

/// Where a session's user is.
enum Seat<U: Seated> {
    /// It is the world's `user`, the one handled.
    Here,
    /// Its session is open and another is handled.
    Waiting(U),
    /// Its session ended: only its record is kept (and what a patience that
    /// runs out later changes of it).
    Closed(U::Record),
}

/// Every session's user but the one handled, by session. `handled` in the
/// methods is the world's `user`: the user of [`Seats::current`].
pub struct Seats<U: Seated> {
    seats: Vec<Seat<U>>,
    current: SessionId,
}

impl<U: Seated> Default for Seats<U> {
    fn default() -> Self {
        Self::new()
    }
}

impl<U: Seated> Seats<U> {
    /// Session 0 handled, the only one so far.
    pub fn new() -> Self {
        Seats { seats: vec![Seat::Here], current: 0 }
    }

    /// The bytes a session's seat takes, however its user is held.
    pub fn seat_bytes() -> usize {
        std::mem::size_of::<Seat<U>>()
    }

    /// The session whose user is handled.
    pub fn current(&self) -> SessionId {
        self.current
    }

    /// How many sessions have arrived.
    pub fn count(&self) -> usize {
        self.seats.len()
    }

    /// Session `session` arrives with `user`, which becomes the one handled.
    pub fn arrive(&mut self, session: SessionId, user: U, handled: &mut U) {
        assert_eq!(session as usize, self.seats.len(), "sessions arrive in order");
        self.seats.push(Seat::Waiting(user));
        self.switch(session, handled);
    }

    /// Makes `session`'s user the one handled, `handled` swapped for it.
    pub fn switch(&mut self, session: SessionId, handled: &mut U) {
        if session == self.current {
            return;
        }
        let Seat::Waiting(incoming) = std::mem::replace(&mut self.seats[session as usize], Seat::Here) else {
            panic!("session {session}'s user is handled only while its session is open");
        };
        let outgoing = std::mem::replace(handled, incoming);
        let seat = &mut self.seats[self.current as usize];
        // A closed session's user was kept as its record when it ended: the
        // rest of it goes now.
        if matches!(seat, Seat::Here) {
            *seat = Seat::Waiting(outgoing);
        }
        self.current = session;
    }

    /// Whether `session` has ended.
    pub fn is_closed(&self, session: SessionId) -> bool {
        matches!(self.seats[session as usize], Seat::Closed(_))
    }

    /// The user of `session`, whose session is open.
    pub fn user_of<'a>(&'a self, session: SessionId, handled: &'a U) -> &'a U {
        match &self.seats[session as usize] {
            Seat::Here => handled,
            Seat::Waiting(user) => user,
            Seat::Closed(_) => panic!("session {session} has ended"),
        }
    }

    /// What the judge reads of `session`'s user.
    pub fn record_of<'a>(&'a self, session: SessionId, handled: &'a U) -> &'a U::Record {
        match &self.seats[session as usize] {
            Seat::Here => handled.record(),
            Seat::Waiting(user) => user.record(),
            Seat::Closed(record) => record,
        }
    }

    /// What the judge reads of `session`'s user, to change.
    pub fn record_mut<'a>(&'a mut self, session: SessionId, handled: &'a mut U) -> &'a mut U::Record {
        match &mut self.seats[session as usize] {
            Seat::Here => handled.record_mut(),
            Seat::Waiting(user) => user.record_mut(),
            Seat::Closed(record) => record,
        }
    }

    /// Session `session` ended: its user is dropped, its record kept.
    pub fn end(&mut self, session: SessionId, handled: &mut U) {
        let seat = &mut self.seats[session as usize];
        let record = match std::mem::replace(seat, Seat::Here) {
            Seat::Waiting(user) => user.into_record(),
            Seat::Here => handled.take_record(),
            Seat::Closed(_) => panic!("session {session} ends once"),
        };
        *seat = Seat::Closed(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user of a name and a count the judge reads.
    #[derive(Debug, PartialEq)]
    struct Guest(&'static str, u32);

    impl Seated for Guest {
        type Record = u32;
        fn record(&self) -> &u32 {
            &self.1
        }
        fn record_mut(&mut self) -> &mut u32 {
            &mut self.1
        }
        fn take_record(&mut self) -> u32 {
            std::mem::take(&mut self.1)
        }
        fn into_record(self) -> u32 {
            self.1
        }
    }

    #[test]
    fn users_switch_in_and_out_and_an_ended_one_keeps_its_record() {
        let mut handled = Guest("ada", 1);
        let mut seats = Seats::new();
        seats.arrive(1, Guest("grace", 2), &mut handled);
        assert_eq!((seats.current(), handled.0), (1, "grace"));
        assert_eq!(seats.user_of(0, &handled).0, "ada");
        *seats.record_mut(0, &mut handled) += 10;
        seats.switch(0, &mut handled);
        assert_eq!(handled, Guest("ada", 11));
        // The handled user ends: its record is kept, the user stays until the next switch.
        seats.end(0, &mut handled);
        assert!(seats.is_closed(0));
        seats.switch(1, &mut handled);
        assert_eq!((handled.0, *seats.record_of(0, &handled)), ("grace", 11));
        *seats.record_mut(0, &mut handled) += 1;
        seats.end(1, &mut handled);
        assert_eq!((*seats.record_of(0, &handled), *seats.record_of(1, &handled)), (12, 2));
    }
}
