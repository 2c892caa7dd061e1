//! support_desk: customers, orders and refunds.
//!
//! A customer asks for a refund of an item (or a whole order). Success is checked
//! against the final state: refunds only on the right order that add up to the
//! right amount (one, or one applied in part and then completed), and the customer
//! told that amount. Minefields: a refund that is not positive or exceeds what is
//! left of the order total, a refund on the wrong order, a duplicate refund (beyond
//! what the customer asked for), a message to the wrong customer.

pub mod config;
pub mod expert;
mod index;
mod status_history;
pub mod tools;
pub mod world;

pub use config::SupportDeskConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::SupportDesk;

crate::kit::builtin_world::builtin_world!(SupportDeskConfig, SupportDesk);
