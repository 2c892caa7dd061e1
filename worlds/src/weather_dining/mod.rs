//! weather_dining: a table for tonight, outdoors if it stays dry.
//!
//! A customer wants a table for a party in a city, outdoors if the weather is dry
//! and indoors if it rains. The weather changes on its own. `get_weather` has two
//! providers: the primary has 503 bursts of tens of seconds, the backup is slower
//! but up. The right move under a burst is to wait and retry or switch provider,
//! not to declare the task impossible. Success, judged from the final state: one
//! reservation in the city for the party, outdoors exactly when it was dry at
//! booking time, and the customer told. Minefields: outdoor seating in the rain, a
//! second reservation, a reservation after the customer left, a message to another
//! customer.

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::WeatherDiningConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::WeatherDining;

impl crate::scenario::BuiltinWorld for WeatherDiningConfig {
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
        crate::scenario::run_world(WeatherDining::new(self, ids, streams), catalog, streams, config, agent, note)
    }
}
