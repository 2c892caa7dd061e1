//! Building a world's catalog: its documented tools, each with the scenario's
//! configuration, then the engine's `authenticate`. Every world lists
//! `authenticate` under its own `tools` so a scenario can configure it (latency,
//! faults); without it `Catalog::new` would add the engine's default one.

use agentsim_engine::{ToolConfig, ToolDef, ToolKind, ToolSpec, ValueKind};

/// The specs of a world's catalog: `defs` in order, each with its
/// configuration, then `authenticate` with the scenario's `authenticate`
/// configuration. The order is the order of tool ids, so it must not change.
pub fn specs_with_authenticate<'t>(
    defs: impl IntoIterator<Item = (ToolDef, &'t ToolConfig)>,
    authenticate: &ToolConfig,
) -> Vec<ToolSpec> {
    let mut specs: Vec<ToolSpec> =
        defs.into_iter().map(|(def, config)| ToolSpec { def, config: config.clone() }).collect();
    specs.push(ToolSpec {
        def: ToolDef::new(agentsim_engine::tool::AUTHENTICATE, ToolKind::Read, "Renews the session token after a 401.")
            .field("token", ValueKind::Str),
        config: authenticate.clone(),
    });
    specs
}

/// The specs of a world's catalog from its documented tools `defs`, each
/// with the configuration `configs` (a world's `Tools::configs`) gives under
/// its name, then `authenticate` with its own: [`specs_with_authenticate`]
/// with the pairs made by name, so a world lists its tools once.
pub fn specs_by_name(defs: Vec<ToolDef>, configs: &[(&'static str, &ToolConfig)]) -> Vec<ToolSpec> {
    let authenticate = config_of(configs, agentsim_engine::tool::AUTHENTICATE);
    let pairs: Vec<(ToolDef, &ToolConfig)> = defs
        .into_iter()
        .map(|def| {
            let config = config_of(configs, &def.name);
            (def, config)
        })
        .collect();
    specs_with_authenticate(pairs, authenticate)
}

/// The configuration of the tool `name`. A world's `Tools` and its
/// documented tools are one list: a tool without a configuration would run
/// with a default one nobody wrote, so that is a bug, in release builds too.
fn config_of<'c>(configs: &[(&'static str, &'c ToolConfig)], name: &str) -> &'c ToolConfig {
    match configs.iter().find(|(n, _)| *n == name) {
        Some((_, config)) => config,
        None => panic!("tool `{name}` has no configuration in the world's `Tools`"),
    }
}

/// The `escalate` tool as every world documents it: the user's id under
/// `user_arg`, an optional reason, and a ticket back. Only the description
/// differs (what is handed over, and to whom), so it is given.
pub fn escalate_def(user_arg: &str, description: &str) -> ToolDef {
    ToolDef::new("escalate", ToolKind::Write, description)
        .id_arg(user_arg)
        .arg("reason", ValueKind::Str, false)
        .field("ticket_id", ValueKind::Str)
}
