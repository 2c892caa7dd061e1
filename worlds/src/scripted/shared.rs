//! A compiled scripted world as the scenario format's [`WorldModel`]: shared
//! by every trajectory, its experts and its runs.

use std::sync::Arc;

use agentsim_engine::{Agent, Catalog, SessionId, SimConfig, StreamSource, Trajectory, Value};

use super::expert::GoldExpert;
use super::model::ScriptedModel;
use super::world::ScriptedWorld;
use crate::world_model::{SessionAgents, WorldModel, run_world, run_world_sessions};

/// A compiled scripted world shared by every trajectory (its experts hold it).
pub struct Shared(pub Arc<ScriptedModel>);

impl WorldModel for Shared {
    fn expert(&self, task: usize) -> Box<dyn Agent> {
        Box::new(GoldExpert::new(Arc::clone(&self.0), task))
    }

    fn run(
        &self,
        task: usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory {
        let world = ScriptedWorld::new(&self.0, task, streams, catalog);
        run_world(world, catalog, streams, config, agent, note)
    }

    fn sessions_max(&self) -> u32 {
        agentsim_engine::sessions::SESSIONS_MAX
    }

    fn run_sessions(
        &self,
        task_of: &dyn Fn(SessionId) -> usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agents: &mut SessionAgents<'_>,
        note: Option<Value>,
    ) -> Trajectory {
        let tasks = (0..config.sessions.count).map(task_of).collect();
        let world = ScriptedWorld::with_sessions(&self.0, tasks, streams, catalog);
        run_world_sessions(world, catalog, streams, config, agents, note)
    }

    fn tasks(&self) -> Vec<String> {
        self.0.task_ids().into_iter().map(str::to_string).collect()
    }

    fn hashes_state(&self) -> bool {
        self.0.state_hasher.is_some()
    }

    fn has_checks(&self) -> bool {
        self.0.declares_checks
    }

    fn task_weights(&self) -> Vec<u32> {
        self.0.tasks.iter().map(|t| t.weight).collect()
    }
}
