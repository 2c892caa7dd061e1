//! support_desk: customers, orders and refunds.
//!
//! A customer asks for a refund of an item (or a whole order). Success is checked
//! against the final state: exactly one refund, of the right amount, on the right
//! order, and the customer told that amount. Minefields: a refund that is not
//! positive or exceeds what is left of the order total, a refund on the wrong order,
//! a duplicate refund, a message to the wrong customer.

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::SupportDeskConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::SupportDesk;

impl crate::scenario::BuiltinWorld for SupportDeskConfig {
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
        crate::scenario::run_world(SupportDesk::new(self, ids, streams), catalog, streams, config, agent, note)
    }
}
