//! The tables for tonight, and the races between sessions over them.
//!
//! A restaurant's tables are counted only when the scenario gives them
//! (`indoor_tables`, `outdoor_tables`, each seating on its own); then
//! `find_restaurants` shows `tables_left` for that seating (as of the read's
//! time: a lagging replica shows the tables it shows), and every reservation
//! holds one table of its seating for the night. `reserve` does not look at
//! the tables: the booking service takes the reservation and the floor plan
//! is reconciled later, so a reservation for a full room goes through and
//! overbooks it, as flight_booking's `book` oversells a flight. Whether a
//! reservation overbooked its seating is judged here, when it is made;
//! without counted tables nothing here runs.
//!
//! A reservation that overbooks a seating (its reservations already hold
//! every table) is one of three minefields, by who holds the tables and what
//! this session's agent had read:
//!
//! - `overbooked`: no other session holds a table of the seating (none were
//!   for the night, or this session's own reservations hold them): the
//!   agent's own doing.
//! - `reservation_honoured_after_full` (a race): this session's agent last
//!   read the seating (`find_restaurants`) showing a table left, and since
//!   the time that read was as of, another session took the last one. The
//!   table this agent found was honoured by `reserve` after there was none.
//!   Against the session whose reservation after the read is the latest one
//!   (the one that took the last table). No read the agent makes closes this
//!   window; reading again just before reserving narrows it, and a service
//!   that checks its floor plan on `reserve` closes it.
//! - `table_booked_twice` (a race): another session holds a table of the
//!   seating and this session's agent had no read showing a table that
//!   another session took since: it never read the seating's tables, or its
//!   last read already showed none left. A table another session holds is
//!   booked again. Against the session of the latest reservation of the
//!   seating held by another session. A careful agent avoids this one.
//!
//! Either race counts the reserving session as hurt by the other
//! (`WorldCx::race`): its diner holds a table that is not there.

use agentsim_engine::{TimeMs, Value, WorldCx};

use super::{DiningEvent, WeatherDining};

/// What a session's agent last read of a counted seating. The races between
/// sessions are judged against it.
#[derive(Clone, Copy, Debug)]
pub(super) struct TablesRead {
    restaurant: usize,
    outdoor: bool,
    /// The time the read's data was as of.
    as_of_ms: TimeMs,
    /// The tables it counted left (below 0 once overbooked).
    left: i64,
    /// The reservations of the seating it counted: the first `held` of the
    /// seating's, in the order made.
    held: usize,
}

impl WeatherDining<'_> {
    /// The tables of `restaurant`'s seating left at `at_ms` (below 0 once
    /// overbooked), or `None` when the scenario does not count them.
    pub(super) fn tables_left(&self, restaurant: usize, outdoor: bool, at_ms: TimeMs) -> Option<i64> {
        let tables = self.config.restaurants[restaurant].tables(outdoor)?;
        Some(i64::from(tables) - self.held_at(restaurant, outdoor, at_ms).len() as i64)
    }

    /// The places in `reservations` of the reservations of `restaurant`'s
    /// seating made by `at_ms`, oldest first (each holds a table: nothing is
    /// cancelled in this world).
    fn held_at(&self, restaurant: usize, outdoor: bool, at_ms: TimeMs) -> &[u32] {
        let seated = &self.seated[restaurant][usize::from(outdoor)];
        // Reservations are made in time order, so their times ascend.
        let made = seated.partition_point(|&i| self.reservations[i as usize].at_ms <= at_ms);
        &seated[..made]
    }

    /// Adds `tables_left` to a read of `restaurant`'s seating as of
    /// `as_of_ms`, when its tables are counted, and remembers what the
    /// session's agent saw.
    pub(super) fn show_tables(&mut self, restaurant: usize, outdoor: bool, as_of_ms: TimeMs, body: &mut Value) {
        let Some(left) = self.tables_left(restaurant, outdoor, as_of_ms) else { return };
        body.set("tables_left", Value::Int(left.max(0)));
        let held = self.held_at(restaurant, outdoor, as_of_ms).len();
        let seen = &mut self.user.tables_read;
        seen.retain(|read| (read.restaurant, read.outdoor) != (restaurant, outdoor));
        seen.push(TablesRead { restaurant, outdoor, as_of_ms, left, held });
    }

    /// Judges a reservation of `restaurant`'s seating by the session being
    /// handled, before it is made: whether it overbooks the seating, and
    /// whose table it takes.
    pub(super) fn judge_tables(&self, restaurant: usize, outdoor: bool, cx: &mut WorldCx<'_, DiningEvent>) {
        let now_ms = cx.now_ms;
        let Some(left) = self.tables_left(restaurant, outdoor, now_ms) else { return };
        if left > 0 {
            return;
        }
        let session = self.seats.current();
        let r = &self.config.restaurants[restaurant];
        let seating = if outdoor { "outdoor" } else { "indoor" };
        let tables = r.tables(outdoor).unwrap_or_default();
        let what = format!("{seating} at {}", r.id);
        let others = || {
            self.held_at(restaurant, outdoor, now_ms)
                .iter()
                .map(|&i| &self.reservations[i as usize])
                .filter(move |v| !v.serves(session))
        };
        let Some(latest) = others().next_back() else {
            cx.minefield(
                "overbooked",
                format!("reserved {what} with no table left ({tables} for the night, all taken)"),
            );
            return;
        };
        let read = self.user.tables_read.iter().find(|read| (read.restaurant, read.outdoor) == (restaurant, outdoor));
        // The reservations after the ones the read counted were made after
        // it (later, or later in the same millisecond).
        let taken_since_read = read.filter(|read| read.left > 0).and_then(|read| {
            let after: &[u32] = &self.held_at(restaurant, outdoor, now_ms)[read.held..];
            let taker = after.iter().map(|&i| &self.reservations[i as usize]).rfind(|v| !v.serves(session));
            taker.map(|v| (v, read.as_of_ms, read.left))
        });
        match taken_since_read {
            Some((taker, as_of_ms, seen_left)) => {
                let detail = format!(
                    "reserved {what} after a read with {seen_left} table(s) left as of {as_of_ms} ms; session {} took the last table at {} ms ({tables} for the night)",
                    taker.session, taker.at_ms
                );
                cx.race("reservation_honoured_after_full", detail, session, taker.session);
            }
            None => {
                let seen = match read {
                    Some(read) => format!("last read {} table(s) left as of {} ms", read.left.max(0), read.as_of_ms),
                    None => "never read its tables".to_string(),
                };
                let detail = format!(
                    "reserved {what} with no table left ({seen}); session {} holds a table since {} ms ({tables} for the night)",
                    latest.session, latest.at_ms
                );
                cx.race("table_booked_twice", detail, session, latest.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agentsim_engine::world::{Minefield, Scheduled};
    use agentsim_engine::{SessionId, StreamSource, ToolCall, ToolId, Value, WorldCx};

    use super::super::{DiningEvent, WeatherDining};
    use crate::kit::world::{Handover, KitWorld, Served};
    use crate::weather_dining::WeatherDiningConfig;
    use crate::weather_dining::config::Restaurant;

    /// Three sessions at one world whose restaurant `ZZ1` in city `X` has one
    /// indoor table (and `ZZ2` one of each seating).
    struct Floor<'c> {
        world: WeatherDining<'c>,
        scheduled: Vec<(u64, Scheduled<DiningEvent>)>,
        minefields: Vec<Minefield>,
        notes: Vec<(&'static str, Value)>,
    }

    impl Floor<'_> {
        fn call(&mut self, session: SessionId, now_ms: u64, name: &'static str, args: Value) -> Value {
            let call = ToolCall::new(ToolId(0), args);
            let mut cx =
                WorldCx::new(now_ms, Some(session), &mut self.scheduled, &mut self.minefields, &mut self.notes);
            self.world.serve(Served { name, call: &call, as_of_ms: now_ms }, &mut cx).expect("the call is served")
        }

        fn find(&mut self, session: SessionId, now_ms: u64) -> Value {
            let args = Value::map([
                ("city", Value::str("X")),
                ("party_size", Value::Int(2)),
                ("seating", Value::str("indoor")),
            ]);
            self.call(session, now_ms, "find_restaurants", args)
        }

        fn reserve(&mut self, session: SessionId, now_ms: u64, restaurant: &str) -> Value {
            let args = Value::map([
                ("customer_id", Value::str("C01")),
                ("restaurant_id", Value::str(restaurant)),
                ("party_size", Value::Int(2)),
                ("seating", Value::str("indoor")),
            ]);
            self.call(session, now_ms, "reserve", args)
        }

        /// The minefields of tables fired since the last look: (name, session, against).
        fn fired(&mut self) -> Vec<(&'static str, Option<SessionId>, Option<SessionId>)> {
            self.minefields
                .drain(..)
                .filter(|m| ["overbooked", "table_booked_twice", "reservation_honoured_after_full"].contains(&m.name))
                .map(|m| (m.name, m.session, m.against))
                .collect()
        }
    }

    fn config(tables: Option<u32>) -> WeatherDiningConfig {
        let restaurant = |id: &str| Restaurant {
            id: id.into(),
            name: format!("Chez {id}"),
            city: "X".into(),
            indoor_seats: 6,
            outdoor_seats: 6,
            indoor_tables: tables,
            outdoor_tables: tables,
        };
        WeatherDiningConfig {
            restaurants: vec![restaurant("ZZ1"), restaurant("ZZ2")],
            party_size_max: 6,
            ..WeatherDiningConfig::default()
        }
    }

    fn floor(config: &WeatherDiningConfig) -> Floor<'_> {
        let mut floor = Floor {
            world: WeatherDining::new(config, &StreamSource::new([3; 32], 1)),
            scheduled: Vec::new(),
            minefields: Vec::new(),
            notes: Vec::new(),
        };
        let mut cx = WorldCx::new(0, None, &mut floor.scheduled, &mut floor.minefields, &mut floor.notes);
        floor.world.start(&mut cx);
        for session in 1..3 {
            let mut cx = WorldCx::new(0, Some(session), &mut floor.scheduled, &mut floor.minefields, &mut floor.notes);
            floor.world.start_session(session, &mut cx);
        }
        floor
    }

    fn tables_left(found: &Value, restaurant: usize) -> Option<Value> {
        found.get("restaurants").and_then(|list| list.as_list()[restaurant].get("tables_left").cloned())
    }

    #[test]
    fn a_table_taken_after_this_sessions_read_is_a_reservation_honoured_after_full() {
        let config = config(Some(1));
        let mut floor = floor(&config);
        let found = floor.find(1, 1_000);
        assert_eq!(tables_left(&found, 0), Some(Value::Int(1)), "a read shows the tables left: {found:?}");
        floor.reserve(0, 2_000, "ZZ1");
        assert_eq!(floor.fired(), vec![], "the first reservation takes the only table");
        assert_eq!(tables_left(&floor.find(2, 2_500), 0), Some(Value::Int(0)), "then none is left");
        floor.reserve(1, 3_000, "ZZ1");
        assert_eq!(floor.fired(), vec![("reservation_honoured_after_full", Some(1), Some(0))]);
    }

    #[test]
    fn a_table_booked_again_without_a_read_showing_it_is_a_table_booked_twice() {
        let config = config(Some(1));
        let mut floor = floor(&config);
        floor.reserve(0, 2_000, "ZZ1");
        // Session 2 never read ZZ1's tables; session 1 read them gone.
        floor.reserve(2, 3_000, "ZZ1");
        assert_eq!(floor.fired(), vec![("table_booked_twice", Some(2), Some(0))]);
        floor.find(1, 4_000);
        floor.reserve(1, 5_000, "ZZ1");
        // The latest reservation holding a table of another session is session 2's.
        assert_eq!(floor.fired(), vec![("table_booked_twice", Some(1), Some(2))]);
    }

    #[test]
    fn a_table_taken_in_the_read_s_own_millisecond_after_it_was_taken_after_the_read() {
        let config = config(Some(1));
        let mut floor = floor(&config);
        floor.find(1, 1_000);
        floor.reserve(0, 1_000, "ZZ1");
        // Session 0 reserved in the millisecond of session 1's read, after it:
        // the read showed the table that session 0 then took.
        floor.reserve(1, 4_000, "ZZ1");
        assert_eq!(floor.fired(), vec![("reservation_honoured_after_full", Some(1), Some(0))]);
        // Session 2 reads in the millisecond of a reservation made before its
        // read: the read counted it and showed none left.
        floor.reserve(0, 5_000, "ZZ2");
        floor.find(2, 5_000);
        floor.reserve(2, 6_000, "ZZ2");
        assert_eq!(floor.fired(), vec![("table_booked_twice", Some(2), Some(0))]);
    }

    #[test]
    fn overbooking_with_only_ones_own_reservations_is_overbooked() {
        let config = config(Some(1));
        let mut floor = floor(&config);
        floor.reserve(0, 2_000, "ZZ2");
        floor.reserve(0, 3_000, "ZZ2");
        assert_eq!(floor.fired(), vec![("overbooked", Some(0), None)]);
        // Another seating of the same restaurant is counted on its own.
        let outdoor = Value::map([
            ("customer_id", Value::str("C01")),
            ("restaurant_id", Value::str("ZZ2")),
            ("party_size", Value::Int(2)),
            ("seating", Value::str("outdoor")),
        ]);
        floor.call(1, 4_000, "reserve", outdoor);
        assert_eq!(floor.fired(), vec![], "ZZ2's outdoor table was free");
    }

    #[test]
    fn without_tables_nothing_is_counted_shown_or_judged() {
        let config = config(None);
        let mut floor = floor(&config);
        let found = floor.find(1, 1_000);
        assert!(!found.render().contains("tables_left"), "{found:?}");
        for session in 0..3 {
            floor.reserve(session, 2_000 + session as u64, "ZZ1");
        }
        assert_eq!(floor.fired(), vec![], "three reservations of one seating without tables");
    }

    #[test]
    fn an_ended_session_keeps_what_its_judge_reads_and_the_others_go_on() {
        let config = config(Some(2));
        let mut floor = floor(&config);
        floor.find(1, 1_000);
        floor.reserve(1, 2_000, "ZZ1");
        let judged = |floor: &Floor<'_>| floor.world.judge_session(1, Handover::default());
        let before = judged(&floor);
        assert!(before.detail.contains("at Chez ZZ1"), "judged by its reservation: {before:?}");
        // Session 1 ends while its diner is the one handled, then another acts.
        floor.world.session_ended(1);
        assert_eq!(judged(&floor), before, "judged from the record kept");
        floor.find(2, 3_000);
        floor.reserve(2, 4_000, "ZZ1");
        assert_eq!(judged(&floor), before, "judged from the record kept, once its diner is dropped");
        assert_eq!(floor.fired(), vec![], "two tables, two reservations");
        // Session 0 ends while waiting; the ended session 1 still holds its table.
        floor.world.session_ended(0);
        floor.reserve(2, 5_000, "ZZ1");
        assert_eq!(
            floor.fired(),
            vec![("table_booked_twice", Some(2), Some(1))],
            "sessions 1 and 2 hold the two tables"
        );
    }

    #[test]
    fn another_sessions_reservation_told_to_a_diner_is_a_wrong_value() {
        let config = config(Some(2));
        let mut floor = floor(&config);
        let id = |v: Value| v.get("reservation_id").and_then(Value::as_str).map(str::to_string).expect("an id");
        let theirs = id(floor.reserve(0, 1_000, "ZZ1"));
        let mine = id(floor.reserve(1, 2_000, "ZZ1"));
        let tell = |floor: &mut Floor<'_>, text: String| {
            let mut cx = WorldCx::new(3_000, Some(1), &mut floor.scheduled, &mut floor.minefields, &mut floor.notes);
            floor.world.hear(&text, &mut cx);
            floor.minefields.drain(..).map(|m| m.name).collect::<Vec<&str>>()
        };
        assert_eq!(tell(&mut floor, format!("Your table is reserved: reservation {mine}.")), Vec::<&str>::new());
        let told = tell(&mut floor, format!("Your table is reserved: reservation {theirs}."));
        assert_eq!(told, vec![crate::talk::TOLD_WRONG_VALUE], "session 0's {theirs} told to session 1's diner");
    }

    #[test]
    fn a_key_sent_again_by_another_session_is_answered_with_the_reservation_and_serves_both() {
        let config = config(Some(1));
        let mut floor = floor(&config);
        let args = Value::map([
            ("customer_id", Value::str("C01")),
            ("restaurant_id", Value::str("ZZ1")),
            ("party_size", Value::Int(2)),
            ("seating", Value::str("indoor")),
        ]);
        let keyed = |floor: &mut Floor<'_>, session: SessionId, now_ms: u64| {
            let mut call = ToolCall::new(ToolId(0), args.clone());
            call.idempotency_key = Some("k1".into());
            let mut cx =
                WorldCx::new(now_ms, Some(session), &mut floor.scheduled, &mut floor.minefields, &mut floor.notes);
            floor.world.serve(Served { name: "reserve", call: &call, as_of_ms: now_ms }, &mut cx).expect("served")
        };
        let first = keyed(&mut floor, 0, 1_000);
        let again = keyed(&mut floor, 1, 2_000);
        assert_eq!(first, again, "the same reservation");
        assert_eq!(floor.fired(), vec![], "no table is taken twice");
        assert_eq!(floor.world.reservations.len(), 1);
        assert!(floor.world.reservations[0].serves(1), "it serves the second session too");
    }
}
