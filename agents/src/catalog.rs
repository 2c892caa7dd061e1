//! Catalog look-ups that never panic.
//!
//! The engine's `Catalog` indexes by `ToolId` and panics on an id it does not know.
//! A layer sees calls made by planners it does not control (an external process, a
//! buggy expert), so it asks through these helpers and treats an unknown tool as a
//! tool it knows nothing about.

use agentsim_engine::tool::ToolDef;
use agentsim_engine::{Catalog, Reply, TimeMs, ToolId, ToolKind};

/// The definition of tool `id`, if the catalog has it.
pub(crate) fn def(catalog: &Catalog, id: ToolId) -> Option<&ToolDef> {
    catalog.specs().get(usize::from(id.0)).map(|spec| &spec.def)
}

/// The tool's name, or `#N` for an id the catalog does not have.
pub(crate) fn name(catalog: &Catalog, id: ToolId) -> String {
    def(catalog, id).map_or_else(|| format!("#{}", id.0), |d| d.name.clone())
}

/// Whether tool `id` is a known write tool.
pub(crate) fn is_write(catalog: &Catalog, id: ToolId) -> bool {
    def(catalog, id).is_some_and(|d| d.kind == ToolKind::Write)
}

/// Whether the reply is a 200 whose body matches the tool's schema as of `at_ms`.
pub(crate) fn well_formed(catalog: &Catalog, id: ToolId, at_ms: TimeMs, reply: &Reply) -> bool {
    match reply {
        Reply::Ok(body) => def(catalog, id).is_some() && body.conforms(catalog, id, at_ms),
        Reply::Error { .. } | Reply::Timeout | Reply::Garbled(_) => false,
    }
}

/// Whether the reply is a 200 that does not match the schema: a body that fails the
/// check, or one that does not parse at all.
pub(crate) fn malformed(catalog: &Catalog, id: ToolId, at_ms: TimeMs, reply: &Reply) -> bool {
    match reply {
        Reply::Ok(_) => !well_formed(catalog, id, at_ms, reply),
        Reply::Garbled(_) => true,
        Reply::Error { .. } | Reply::Timeout => false,
    }
}

/// The name the documented field `original` of tool `id` has in responses at
/// `at_ms`, or `None` once removed (or for an unknown tool).
pub(crate) fn field_name_at<'c>(catalog: &'c Catalog, id: ToolId, original: &'c str, at_ms: TimeMs) -> Option<&'c str> {
    def(catalog, id)?;
    catalog.field_name_at(id, original, at_ms)
}
