//! A world's `Ids`: where each of its tools sits in a catalog, found once by
//! name so that the world and its expert compare ids, not strings, on every
//! call, and name them back for a dispatch by name. Every world declares them the same way, so [`tool_ids!`] writes the
//! struct and its look-up from one list: each field is named as its tool,
//! which keeps the two from drifting apart.

/// Declares `pub struct Ids` with one `ToolId` field per tool listed (the
/// field's name is the tool's name, and its doc), then `authenticate`, the
/// engine's tool every world's catalog also holds; and `Ids::find`, which looks
/// each up in a catalog (`None` if one is missing), and `ToolNames` for
/// `Ids`, the name of an id. The doc written on the
/// struct is kept; what a tool does is documented where it is defined
/// (`specs`).
macro_rules! tool_ids {
    ($(#[$doc:meta])* pub struct Ids { $($tool:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct Ids {
            $(#[doc = concat!("`", stringify!($tool), "`")] pub $tool: agentsim_engine::ToolId,)*
            /// `authenticate`
            pub authenticate: agentsim_engine::ToolId,
        }

        impl Ids {
            /// Finds the tools in `catalog`; `None` if one is missing.
            pub fn find(catalog: &agentsim_engine::Catalog) -> Option<Ids> {
                Some(Ids {
                    $($tool: catalog.id(stringify!($tool))?,)*
                    authenticate: catalog.id(agentsim_engine::tool::AUTHENTICATE)?,
                })
            }

        }

        impl $crate::kit::world::ToolNames for Ids {
            /// The name of the tool at `tool`, as listed here (`None` for a
            /// tool not of this world): what a world and its expert dispatch on.
            fn name(&self, tool: agentsim_engine::ToolId) -> Option<&'static str> {
                $(if tool == self.$tool {
                    return Some(stringify!($tool));
                })*
                (tool == self.authenticate).then_some(agentsim_engine::tool::AUTHENTICATE)
            }
        }
    };
}

pub(crate) use tool_ids;
