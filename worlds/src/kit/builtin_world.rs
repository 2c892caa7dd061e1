//! A built-in world's [`BuiltinWorld`](crate::world_model::BuiltinWorld)
//! implementation. Every world folder wires the same pieces the same way (its
//! `Tools` section, `tools::specs`, `Ids`, `Expert` and world type), so
//! [`builtin_world!`] writes it from the two names that differ.

/// Implements `BuiltinWorld` for `$config`, whose world is `$world`: the
/// world folder's `tools::specs`, `Ids`, `Expert` and `$config::check` must be
/// in scope (they are in each world's `mod.rs`).
macro_rules! builtin_world {
    ($config:ty, $world:ident) => {
        impl $crate::world_model::BuiltinWorld for $config {
            type Ids = Ids;

            fn check(&self) -> Result<(), $crate::kit::checks::ConfigError> {
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
                Box::new($crate::kit::expert::Planner::new(Expert::new(ids), ids))
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
                let world = $crate::kit::world::Kit::new($world::new(self, streams), ids);
                $crate::world_model::run_world(world, catalog, streams, config, agent, note)
            }

            fn sessions_max(&self) -> u32 {
                <$world<'_> as $crate::kit::world::KitWorld>::SESSIONS_MAX
            }

            fn run_sessions(
                &self,
                ids: Ids,
                catalog: &agentsim_engine::Catalog,
                streams: &agentsim_engine::StreamSource,
                config: &agentsim_engine::SimConfig,
                agents: &mut $crate::world_model::SessionAgents<'_>,
                note: Option<agentsim_engine::Value>,
            ) -> agentsim_engine::Trajectory {
                let world = $crate::kit::world::Kit::new($world::new(self, streams), ids);
                $crate::world_model::run_world_sessions(world, catalog, streams, config, agents, note)
            }
        }
    };
}

pub(crate) use builtin_world;
