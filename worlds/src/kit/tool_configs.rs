//! A world's `Tools`: the scenario section that configures each of its tools
//! (latency, timeout, faults, drift). Every world declares it the same way, so
//! [`tool_configs!`] writes the struct, `configs` and `configs_mut` from one list: each
//! field is named as its tool, which keeps the scenario's keys, the catalog's
//! names and the editing tools (explicit schedules, traces, shrinking) in step.

/// Declares `pub struct Tools` with one `ToolConfig` field per tool listed (the
/// field's name is the tool's name), read from a scenario with unknown fields
/// refused and missing ones defaulted; and `Tools::configs` and `Tools::configs_mut`,
/// every tool's configuration with its name, in the order listed. The docs written on the
/// struct and on each field are kept.
macro_rules! tool_configs {
    ($(#[$doc:meta])* pub struct Tools { $($(#[$field_doc:meta])* $tool:ident,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Default)]
        #[serde(deny_unknown_fields, default)]
        pub struct Tools {
            $($(#[$field_doc])* pub $tool: agentsim_engine::ToolConfig,)*
        }

        impl Tools {
            /// Every tool's configuration with its name, in the order listed.
            pub fn configs(&self) -> Vec<(&'static str, &agentsim_engine::ToolConfig)> {
                vec![$((stringify!($tool), &self.$tool),)*]
            }

            /// Every tool's configuration with its name, for editing a scenario (explicit
            /// schedules, recorded traces, shrinking).
            pub fn configs_mut(&mut self) -> Vec<(&'static str, &mut agentsim_engine::ToolConfig)> {
                vec![$((stringify!($tool), &mut self.$tool),)*]
            }
        }
    };
}

pub(crate) use tool_configs;
