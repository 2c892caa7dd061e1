//! What worlds share, one job per module: the four built-in worlds, and any
//! world written in Rust outside this crate (`examples/rust_world/`). `read.rs` (beside this
//! folder) holds what their experts share when reading results; the kit holds
//! the rest, so that a world's own files say only what makes that world
//! different.
//!
//! - [`args`]: reading a call's required arguments, with the 400 a service
//!   answers when one is missing.
//! - [`builtin_world`]: a world folder's `BuiltinWorld` implementation, from
//!   its config and world types.
//! - [`by_id`]: maps looked up by id only, hashed with the engine's
//!   fingerprint rather than SipHash.
//! - [`case`]: where an expert's case stands (the conversation and the
//!   failure counts), and the calls every expert makes the same way.
//! - [`catalog`]: a world's tool specs with `authenticate` last, and the
//!   `escalate` tool every world documents.
//! - [`checks`]: the cross-checks of a world's configuration that every world
//!   makes (unique ids, lists not empty, event intervals, persona weights),
//!   and the typed `ConfigError` they return.
//! - [`derived`]: a value derived from a world's configuration once per
//!   process (look-ups by id), beside the configuration.
//! - [`escalation`]: what every world's `escalate` tool does.
//! - [`expert`]: an expert's step (`Policy`, `step`): hearing, accepting
//!   or counting results by tool name, pausing after a refusal.
//! - [`goodbye`]: how a world's user leaves when their patience runs out.
//! - [`fields`]: a map of named fields built at its size.
//! - [`listen`]: what every world's user does the same way when it reads
//!   the agent's words (answers, refusals, acknowledgements).
//! - [`outbox`]: numbering the messages a world's user receives.
//! - [`persona`]: how a world's user talks (the personas, their styles) and
//!   the scenario section weighing them.
//! - [`seats`]: the users of a world of many sessions, one handled at a
//!   time, an ended session keeping only its judge's record.
//! - [`tool_configs`]: a world's `Tools`, the scenario section configuring
//!   each of its tools.
//! - [`tool_ids`]: a world's `Ids`, its tools' places in a catalog, and their
//!   names back for a dispatch by name.
//! - [`world`]: a world written with the kit (`KitWorld`): calls dispatched by
//!   tool name, `escalate` answered, the verdict's hand-over kept.

pub mod args;
pub mod builtin_world;
pub mod by_id;
pub mod case;
pub mod catalog;
pub mod checks;
pub mod derived;
pub mod escalation;
pub mod expert;
pub mod fields;
pub mod goodbye;
pub mod listen;
pub mod outbox;
pub mod persona;
pub mod seats;
pub mod tool_configs;
pub mod tool_ids;
pub mod world;
