//! flight_booking: fares that move on their own, a traveller with a budget.
//!
//! A traveller wants a flight on a route and date, within a budget. Fares walk at
//! random every few virtual minutes, so a fare read a while ago may be gone: `book`
//! answers 409 "fare changed" when the quoted fare is not the current one. Success,
//! judged from the final state: exactly one active booking, on the traveller's
//! (latest) route and date, within budget, at the fare the traveller confirmed, and
//! the traveller told it. Minefields: a stale fare told to the traveller
//! (contextual accuracy, even if the booking later succeeds), a booking over
//! budget, a second active booking, a booking after the traveller left.

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::FlightBookingConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::FlightBooking;

impl crate::scenario::BuiltinWorld for FlightBookingConfig {
    type Ids = Ids;

    fn check(&self) -> Result<(), (String, String, String)> {
        Self::check(self)
    }

    fn specs(&self) -> Vec<agentsim_engine::ToolSpec> {
        tools::specs(&self.tools)
    }

    fn configs_mut(&mut self) -> Vec<(&'static str, &mut agentsim_engine::ToolConfig)> {
        self.tools.configs_mut()
    }

    fn ids(catalog: &agentsim_engine::Catalog) -> Option<Ids> {
        Ids::find(catalog)
    }

    fn expert(ids: Ids) -> Box<dyn agentsim_engine::Agent> {
        Box::new(Expert::new(ids))
    }

    fn run(
        &self,
        ids: Ids,
        catalog: &agentsim_engine::Catalog,
        streams: &agentsim_engine::StreamSource,
        config: &agentsim_engine::SimConfig,
        agent: &mut dyn agentsim_engine::Agent,
        note: Option<agentsim_engine::Value>,
    ) -> agentsim_engine::Trajectory {
        crate::scenario::run_world(FlightBooking::new(self, ids, streams), catalog, streams, config, agent, note)
    }
}
