//! The customer reads what the agent writes in words (`Action::Say`): the
//! weather_dining side of the text channel (rules in `docs/conversation.md`).
//!
//! The customer's facts are its customer id, its name, the city, the party
//! size, the seating it wants (outdoors if dry) and when (tonight); the world
//! knows every city, customer name and restaurant (by name and id), and the
//! ids of the reservations that serve the diner's session (in a run of one
//! session, every reservation). A question gets the facts it names; a proposal is checked
//! value by value (a wrong city, party size or day, or a restaurant in another
//! city, is refused with the correction; a right one that names the city, the
//! party or a restaurant of the city is a yes: the structured channel has no
//! `confirm` here, so no milestone moves); a statement is judged: a
//! reservation, restaurant or customer id, or a party size, that the world
//! never held is `told_wrong_value`; a closing that names the reservation (by
//! id, or by its restaurant) is what the customer was told (as a structured
//! `done`: `customer_told`).

use agentsim_engine::{Message, TimeMs, Value, WorldCx};

use super::{DiningEvent, WeatherDining};
use crate::kit::listen::{self, Listener, id_shape};
use crate::talk::count::{self, CountFact, CountOf};
use crate::talk::scan::{self, Written};
use crate::talk::voice::Voice;
use crate::talk::{self, Fact, FactValue, Intent, Lexicon, Reading, TOLD_WRONG_VALUE};

/// The facts' places in [`WeatherDining::facts`].
const CUSTOMER_ID: usize = 0;
const CITY: usize = 2;
const PARTY: usize = 3;

/// When the customer wants the table.
const TONIGHT: &str = "tonight";

/// What the customer wants in the way of seating.
const SEATING: &str = "outdoor if dry";

/// How a party size is written.
const PARTY_COUNT: CountOf<'static> = CountOf {
    nouns: &["people", "persons", "guests", "diners", "adults", "seats", "pax"],
    after: &["table for", "party of", "group of", "reservation for", "booked for", "book for", "seats for", "we are"],
};

/// What a message names beyond the customer's facts.
#[derive(Debug, Default)]
struct Named {
    /// Restaurants named, by name or id (config indices, no repeats).
    restaurants: Vec<usize>,
    /// Reservation ids named that serve the diner's session.
    reservations: Vec<String>,
    /// Ids in the shape of a restaurant, reservation or customer id that the
    /// world never held.
    unknown_ids: Vec<String>,
}

impl WeatherDining<'_> {
    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user.user_rng))
    }

    /// The customer's facts.
    fn facts(&self) -> Vec<Fact> {
        let record = &self.user.record;
        let c = &self.config.customers[record.customer];
        vec![
            Fact::new("customer_id", FactValue::Id(c.id.clone())).alias("customer number").alias("account"),
            Fact::new("name", FactValue::Name(c.name.clone())).alias("your name").alias("full name"),
            Fact::new("city", FactValue::Name(self.cities[record.city].clone()))
                .alias("which city")
                .alias("what city")
                .alias("where")
                .alias("location"),
            // Read by `talk::count`, never by the value's shape (a bare number is
            // no party size): see `hear_text`.
            Fact::new("party_size", FactValue::Id(record.party_size.to_string()))
                .alias("party")
                .alias("how many")
                .alias("people")
                .alias("guests")
                .alias("group size"),
            Fact::new("seating", FactValue::Name(SEATING.into()))
                .alias("indoor")
                .alias("outdoor")
                .alias("inside")
                .alias("outside")
                .alias("terrace"),
            Fact::new("time", FactValue::Name(TONIGHT.into()))
                .alias("when")
                .alias("what time")
                .alias("which day")
                .alias("date"),
        ]
    }

    /// The names the world knows: every city and customer name, and days that
    /// are not tonight.
    fn lexicon(&self) -> Lexicon {
        let mut lexicon = Lexicon::new();
        for city in &self.cities {
            lexicon.add("city", city);
        }
        for c in &self.config.customers {
            lexicon.add("name", &c.name);
        }
        for day in ["tomorrow", "tomorrow night", "next week", "lunchtime"] {
            lexicon.add("time", day);
        }
        lexicon
    }

    /// The customer reads `text` and answers (or, for a statement, judges it).
    pub(super) fn hear_text(&mut self, text: &str, cx: &mut WorldCx<'_, DiningEvent>) {
        if self.user.record.left_at_ms.is_some() {
            return;
        }
        let facts = self.facts();
        let named = self.named(text);
        let count = CountFact { fact: PARTY, of: PARTY_COUNT, value: self.user.record.party_size };
        let world_values =
            !named.restaurants.is_empty() || !named.reservations.is_empty() || !named.unknown_ids.is_empty();
        let reading = count::read_counting(text, &facts, &self.lexicon(), Some(count), world_values);
        let at = self.reply_at(cx.now_ms);
        let reply = match reading.intent {
            Intent::Ask => self.answer_question(&reading, &facts),
            Intent::Propose => self.answer_proposal(&reading, &facts, &named),
            Intent::Tell => self.judge_statement(&reading, &facts, &named, cx),
            Intent::SmallTalk | Intent::Unclear => listen::chat(self, reading.intent, text, cx),
        };
        cx.tell_agent(at, reply);
    }

    /// Restaurants (by name or id), reservations and unknown ids in `text`.
    fn named(&self, text: &str) -> Named {
        let ws = scan::words(text);
        let mut named = Named::default();
        let add = |named: &mut Named, r: usize| {
            if !named.restaurants.contains(&r) {
                named.restaurants.push(r);
            }
        };
        for (r, restaurant) in self.config.restaurants.iter().enumerate() {
            if talk::has_phrase(&ws, &restaurant.name.to_lowercase()) {
                add(&mut named, r);
            }
        }
        for found in scan::values(text) {
            let Written::Token(token) = found.value else { continue };
            let id = token.trim_start_matches('#');
            if let Some(r) = self.config.restaurants.iter().position(|r| r.id.eq_ignore_ascii_case(id)) {
                add(&mut named, r);
            } else if let Some(v) = self.mine().find(|v| v.id.eq_ignore_ascii_case(id)) {
                // The diner's own (another session's reservation is no value
                // this diner was ever given: read below as an unknown id).
                named.reservations.push(v.id.clone());
            } else if self.config.customers.iter().any(|c| c.id.eq_ignore_ascii_case(id)) {
                // Another customer's id: read by the facts (a wrong customer id).
            } else {
                let shape = id_shape(id);
                let known = shape == id_shape("V301")
                    || self.config.restaurants.iter().any(|r| id_shape(&r.id) == shape)
                    || self.config.customers.iter().any(|c| id_shape(&c.id) == shape);
                if known && !shape.0.is_empty() {
                    named.unknown_ids.push(id.to_string());
                }
            }
        }
        named
    }

    fn answer_question(&mut self, reading: &Reading, facts: &[Fact]) -> Message {
        let content = Value::map([("customer_id", Value::str(self.customer_id()))]);
        let party = self.user.record.party_size;
        listen::answer_question(self, reading, facts, label, content, move |i, fact| match i {
            PARTY => Value::Int(party),
            _ => Value::Str(fact.value.shown()),
        })
    }

    /// A proposal checked value by value; a restaurant must be in the city.
    fn answer_proposal(&mut self, reading: &Reading, facts: &[Fact], named: &Named) -> Message {
        let city = &self.cities[self.user.record.city];
        let elsewhere = named.restaurants.iter().any(|&r| self.config.restaurants[r].city != *city);
        let wrong: Vec<usize> = reading.stated.iter().filter(|s| !s.right).map(|s| s.fact).collect();
        let mut content = self.request(true);
        if let [r] = named.restaurants.as_slice() {
            content.set("restaurant_id", Value::str(&self.config.restaurants[*r].id));
        }
        if !wrong.is_empty() || elsewhere || !named.unknown_ids.is_empty() {
            content.set("confirm", Value::Bool(false));
            return Message { text: listen::refuse(self, facts, &[CITY, PARTY], &wrong, label), content };
        }
        let names_target = reading.states_right(CITY) || reading.states_right(PARTY) || !named.restaurants.is_empty();
        if !names_target {
            return Message { text: self.request_text(), content };
        }
        content.set("confirm", Value::Bool(true));
        Message { text: self.voice().yes(), content }
    }

    /// Judges a statement: every id and party size told must be one the world
    /// holds; a closing naming the reservation is what the customer was told.
    fn judge_statement(
        &mut self,
        reading: &Reading,
        facts: &[Fact],
        named: &Named,
        cx: &mut WorldCx<'_, DiningEvent>,
    ) -> Message {
        let now_ms = cx.now_ms;
        for s in reading.stated.iter().filter(|s| !s.right) {
            let never_held = match s.fact {
                CUSTOMER_ID => true,
                PARTY => !self.mine().any(|r| r.party_size.to_string() == s.written),
                _ => false,
            };
            if never_held {
                cx.minefield(TOLD_WRONG_VALUE, format!("told {} {}", label(&facts[s.fact]), s.written));
            }
        }
        for id in &named.unknown_ids {
            cx.minefield(TOLD_WRONG_VALUE, format!("told {id} (no such restaurant, reservation or customer)"));
        }
        if reading.done
            && let Some(id) = self.reservation_told(named)
        {
            self.told_done(&id, now_ms);
        }
        listen::acknowledge(self, reading.done)
    }

    /// The reservation a closing tells about: the one id it names, else the one
    /// reservation at the one restaurant it names.
    fn reservation_told(&self, named: &Named) -> Option<String> {
        match named.reservations.as_slice() {
            [id] => Some(id.clone()),
            [] => {
                let [r] = named.restaurants.as_slice() else { return None };
                let at: Vec<&super::Reservation> = self.mine().filter(|v| v.restaurant == *r).collect();
                match at.as_slice() {
                    [v] => Some(v.id.clone()),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

impl Listener for WeatherDining<'_> {
    fn request_content(&self) -> Value {
        self.request(true)
    }

    /// The request in words, as the customer restates it.
    fn request_text(&self) -> String {
        let record = &self.user.record;
        format!(
            "A table for {} in {} tonight, please; outside if it's dry.",
            record.party_size, self.cities[record.city]
        )
    }

    fn voice(&mut self) -> &mut Voice {
        listen::voice_of(&mut self.user.voice, self.user.persona, &self.user.user_rng)
    }
}

/// How the customer names a fact.
fn label(fact: &Fact) -> String {
    match fact.name.as_str() {
        "customer_id" => "customer id".to_string(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weather_dining::WeatherDiningConfig;
    use agentsim_engine::StreamSource;

    #[test]
    fn restaurants_are_named_by_name_or_id_and_unknown_ids_are_kept() {
        let config = WeatherDiningConfig::default();
        let w = WeatherDining::new(&config, &StreamSource::new([7; 32], 2));
        let named = w.named("Terrazza (R01) or Le Jardin? Reservation V399 at R09.");
        assert_eq!(named.restaurants, vec![0, 2]);
        assert_eq!(named.unknown_ids, vec!["V399".to_string(), "R09".to_string()]);
    }

    #[test]
    fn a_party_size_is_read_as_a_count_only() {
        let config = WeatherDiningConfig::default();
        let w = WeatherDining::new(&config, &StreamSource::new([7; 32], 2));
        let facts = w.facts();
        let r = talk::read("How many people will there be?", &facts, &w.lexicon());
        assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![PARTY]));
        let counts = count::counts(&scan::words("A table for 4 at 8pm, or 6 guests?"), PARTY_COUNT);
        assert_eq!(counts.iter().map(|c| c.count).collect::<Vec<_>>(), vec![4, 6]);
    }
}
