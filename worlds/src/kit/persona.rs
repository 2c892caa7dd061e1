//! How a world's user talks: the personas every world draws from (each world
//! uses some of them) and the scenario section weighing them. One enum for all
//! worlds, so the name a trajectory notes, the style of the user's words and
//! the weights' checks are the same wherever a persona appears.

use agentsim_engine::Stream;

use crate::talk::voice::Style;

/// How the user talks. A world draws only the personas its `Personas`
/// section lists (see [`personas!`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persona {
    /// States everything the task needs.
    Clear,
    /// Leaves out a part of the request; gives it when asked.
    Vague,
    /// Changes the request once, when asked to confirm it.
    ChangesMind,
    /// Clear, but leaves after the world's patience time without a result.
    Impatient,
}

impl Persona {
    /// Stable name, as a scenario's `personas` section and a trajectory's
    /// `persona` note spell it.
    pub fn name(self) -> &'static str {
        match self {
            Persona::Clear => "clear",
            Persona::Vague => "vague",
            Persona::ChangesMind => "changes_mind",
            Persona::Impatient => "impatient",
        }
    }

    /// How this persona words its answers to text.
    pub fn style(self) -> Style {
        match self {
            Persona::Clear => Style::Clear,
            Persona::Vague => Style::Vague,
            Persona::ChangesMind => Style::Verbose,
            Persona::Impatient => Style::Impatient,
        }
    }
}

/// Draws a persona by `weights` (name and persona of each, with its weight),
/// from `rng`: one `weighted` draw, so a world draws exactly as it would by
/// hand. `None` (all weights zero) is left to the world; checked scenarios
/// never have it.
pub fn draw(weights: &[(Persona, f64)], rng: &mut Stream) -> Option<Persona> {
    let only: Vec<f64> = weights.iter().map(|(_, w)| *w).collect();
    rng.weighted(&only).map(|i| weights[i].0)
}

/// Declares `pub struct Personas`, a world's persona weights: one `f64` field
/// per persona listed, named as [`Persona::name`] spells it, with its default
/// weight; read from a scenario with unknown fields refused and missing ones
/// defaulted. `Personas::weights` lists them with their persona, in the order
/// written (the order of the draw: it must not change), and
/// `Personas::check` makes the kit's weight checks.
macro_rules! personas {
    ($(#[$doc:meta])* pub struct Personas { $($(#[$field_doc:meta])* $field:ident: $persona:ident = $default:expr,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct Personas {
            $($(#[$field_doc])* pub $field: f64,)*
        }

        impl Default for Personas {
            fn default() -> Self {
                Self { $($field: $default,)* }
            }
        }

        impl Personas {
            /// Each persona with its weight, in the order of the draw.
            pub fn weights(&self) -> Vec<($crate::kit::persona::Persona, f64)> {
                vec![$(($crate::kit::persona::Persona::$persona, self.$field),)*]
            }

            /// The weights are finite, not negative, and not all zero.
            pub fn check(&self) -> Result<(), $crate::kit::checks::ConfigError> {
                let named: Vec<(&str, f64)> = self.weights().iter().map(|(p, w)| (p.name(), *w)).collect();
                $crate::kit::checks::persona_weights(&named)
            }
        }
    };
}

pub(crate) use personas;
