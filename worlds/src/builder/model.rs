//! A built world as the simulator runs it: the state drawn per seed, the
//! rules shared by every trajectory, and the expert.

use std::sync::Arc;

use agentsim_engine::{Agent, Catalog, SimConfig, Stream, StreamSource, ToolId, Trajectory, Value};

use super::plan::{NoExpert, PlanExpert, Steps};
use super::world::{Built, Rules};
use crate::world_model::{WorldModel, run_world};

/// How a seed's state is made, from the world's own stream.
pub(crate) type Init<S> = Arc<dyn Fn(&mut Stream) -> S + Send + Sync>;
/// An expert the author wrote, made over the world's catalog.
pub(crate) type MakeExpert = Arc<dyn Fn(&Catalog) -> Box<dyn Agent> + Send + Sync>;

/// Which expert a built world has.
#[derive(Clone)]
pub(crate) enum Expert {
    /// The default expert, following this plan.
    Plan(Arc<Steps>),
    /// The author's.
    Own(MakeExpert),
    /// None (see [`NoExpert`]).
    None,
}

/// The world model of a built world.
pub(crate) struct Model<S> {
    pub init: Init<S>,
    pub rules: Arc<Rules<S>>,
    pub expert: Expert,
    pub catalog: Catalog,
    pub authenticate: ToolId,
}

/// The stream a seed's state is drawn from.
const STATE_STREAM: &str = "world";

impl<S: 'static> WorldModel for Model<S> {
    fn expert(&self, _task: usize) -> Box<dyn Agent> {
        match &self.expert {
            Expert::Plan(steps) => Box::new(PlanExpert::new(Arc::clone(steps), self.rules.escalate, self.authenticate)),
            Expert::Own(make) => make(&self.catalog),
            Expert::None => Box::new(NoExpert),
        }
    }

    fn run(
        &self,
        _task: usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory {
        let state = (self.init)(&mut streams.stream(STATE_STREAM));
        let world =
            Built { state, rules: Arc::clone(&self.rules), milestone: "started", escalated: false, keys: Vec::new() };
        run_world(world, catalog, streams, config, agent, note)
    }
}
