//! What a scripted world takes from outside this crate: named state hashes
//! (`state_hash: NAME(...)`), named argument-error styles (`argument_errors:
//! NAME(...)`) and script functions, each provided by an [`Extension`]
//! installed once per process (agentsim's loader installs its own before it
//! reads a scenario). The scenario format reads any name; a name no installed
//! extension provides is refused when the world loads, at its field.

use std::sync::{Arc, RwLock};

use agentsim_engine::{ToolError, Value};

use super::error::{LoadError, LoadErrorKind};
use super::schema::Schema;
use super::setting::{ArgumentErrors, Setting, StateHash};
use super::state::{State, Tables};

/// Why an extension refused its setting (or could not build what it names):
/// the message names the setting's field at fault. Loading reports it as a
/// [`LoadErrorKind::Extension`] error at the setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// What is wrong, in words.
    pub message: String,
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingError {}

/// An extension's own checks give their message.
impl From<String> for SettingError {
    fn from(message: String) -> SettingError {
        SettingError { message }
    }
}

/// A world's state hash, built once per process from its base tables.
pub trait StateHasher: Send + Sync {
    /// The hash of the base tables.
    fn base_hash(&self) -> &str;
    /// The hash of `state` (whose base must be the tables this was built from).
    fn hash(&self, state: &State) -> String;
}

/// A state hash an extension provides under a name.
pub trait StateHashKind: Send + Sync {
    /// Its name as written (`Tau2`).
    fn name(&self) -> &'static str;
    /// `setting` (named [`Self::name`]) checked and in its canonical form: what
    /// the scenario's key covers. The message names what is wrong.
    fn canonical(&self, setting: &Setting) -> Result<Setting, SettingError>;
    /// The hasher over `tables`.
    fn build(&self, setting: &Setting, tables: &Tables) -> Result<Box<dyn StateHasher>, SettingError>;
}

/// How a world refuses a call's arguments before the body runs.
pub trait ArgumentStyle: Send + Sync {
    /// Checks `args` of tool `tool` declared by `schema`.
    fn check(&self, tool: &str, schema: &Schema, args: &Value) -> Result<(), ToolError>;
    /// The answer to a call of a tool the world does not have, when the
    /// style answers it as a tool result (`None`: the world's own 404).
    fn unknown_tool(&self, name: &str) -> Option<ToolError>;
}

/// An argument-error style an extension provides under a name.
pub trait ArgumentStyleKind: Send + Sync {
    /// Its name as written (`Python`).
    fn name(&self) -> &'static str;
    /// `setting` checked and in its canonical form (see [`StateHashKind::canonical`]).
    fn canonical(&self, setting: &Setting) -> Result<Setting, SettingError>;
    /// The style.
    fn build(&self, setting: &Setting) -> Result<Arc<dyn ArgumentStyle>, SettingError>;
}

/// What one extension adds to scripted worlds.
pub struct Extension {
    /// Its name (`tau2`), in the list of installed extensions errors give.
    pub name: &'static str,
    /// The state hashes it provides.
    pub state_hashes: &'static [&'static dyn StateHashKind],
    /// The argument-error styles it provides.
    pub argument_styles: &'static [&'static dyn ArgumentStyleKind],
    /// Adds its functions to the engine every world's script runs in.
    pub functions: fn(&mut rhai::Engine),
}

static INSTALLED: RwLock<Vec<&'static Extension>> = RwLock::new(Vec::new());

/// Installs `extension` for every scripted world loaded from now on in this
/// process (installing it again does nothing).
pub fn install(extension: &'static Extension) {
    // A poisoned lock means a thread panicked while pushing: the list is whole.
    let mut installed = INSTALLED.write().unwrap_or_else(|e| e.into_inner());
    if !installed.iter().any(|e| std::ptr::eq(*e, extension)) {
        installed.push(extension);
    }
}

/// The extensions installed, in the order they were.
pub fn installed() -> Vec<&'static Extension> {
    INSTALLED.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Registers every installed extension's script functions.
pub(super) fn register_functions(engine: &mut rhai::Engine) {
    for extension in installed() {
        (extension.functions)(engine);
    }
}

fn installed_names() -> String {
    let names: Vec<&str> = installed().iter().map(|e| e.name).collect();
    if names.is_empty() { "none".to_string() } else { names.join(", ") }
}

/// The state hash named `name`, or a [`LoadErrorKind::NoExtension`] error at `field`.
fn state_hash_kind(name: &str, field: &str) -> Result<&'static dyn StateHashKind, LoadError> {
    let found = installed().into_iter().flat_map(|e| e.state_hashes.iter()).find(|k| k.name() == name);
    found.copied().ok_or_else(|| {
        let installed = installed_names();
        no_extension(
            field,
            format!("no installed extension provides the state hash `{name}` (extensions installed: {installed})"),
        )
    })
}

/// The argument-error style named `name`, or a [`LoadErrorKind::NoExtension`] error at `field`.
fn argument_style_kind(name: &str, field: &str) -> Result<&'static dyn ArgumentStyleKind, LoadError> {
    let found = installed().into_iter().flat_map(|e| e.argument_styles.iter()).find(|k| k.name() == name);
    found.copied().ok_or_else(|| {
        let installed = installed_names();
        no_extension(
            field,
            format!(
                "no installed extension provides the argument-error style `{name}` (extensions installed: {installed})"
            ),
        )
    })
}

fn no_extension(field: &str, message: String) -> LoadError {
    LoadError::in_field(field, message).with_kind(LoadErrorKind::NoExtension)
}

fn refused(field: &str, message: SettingError) -> LoadError {
    LoadError::in_field(field, message).with_kind(LoadErrorKind::Extension)
}

/// Checks the extension settings of a world and puts them in canonical form
/// (an error at the setting's field: `world.state_hash`, `world.argument_errors`).
pub(super) fn canonicalise(
    state_hash: &mut Option<StateHash>,
    argument_errors: &mut ArgumentErrors,
) -> Result<(), LoadError> {
    if let Some(StateHash(setting)) = state_hash {
        let field = "world.state_hash";
        let kind = state_hash_kind(setting.name, field)?;
        *setting = kind.canonical(setting).map_err(|m| refused(field, m))?;
    }
    if let ArgumentErrors::Named(setting) = argument_errors {
        let field = "world.argument_errors";
        let kind = argument_style_kind(setting.name, field)?;
        *setting = kind.canonical(setting).map_err(|m| refused(field, m))?;
    }
    Ok(())
}

/// The hasher a world declares, over its base `tables`.
pub(super) fn state_hasher(state_hash: &StateHash, tables: &Tables) -> Result<Box<dyn StateHasher>, LoadError> {
    let field = "world.state_hash";
    let kind = state_hash_kind(state_hash.0.name, field)?;
    // Pointed at by the field's name, as before settings had extensions.
    kind.build(&state_hash.0, tables)
        .map_err(|m| LoadError::at("state_hash", format!("field `{field}`: {m}")).with_kind(LoadErrorKind::Extension))
}

/// The checks of the default style: the tool's schema, whole.
struct SchemaStyle;

impl ArgumentStyle for SchemaStyle {
    fn check(&self, _tool: &str, schema: &Schema, args: &Value) -> Result<(), ToolError> {
        schema.check(args, "").map_err(ToolError::bad_request)
    }

    fn unknown_tool(&self, _name: &str) -> Option<ToolError> {
        None
    }
}

impl ArgumentErrors {
    /// The style, from the installed extensions.
    pub fn style(&self) -> Result<Arc<dyn ArgumentStyle>, LoadError> {
        match self {
            ArgumentErrors::Schema => Ok(Arc::new(SchemaStyle)),
            ArgumentErrors::Named(setting) => {
                let field = "world.argument_errors";
                let kind = argument_style_kind(setting.name, field)?;
                kind.build(setting).map_err(|m| refused(field, m))
            }
        }
    }

    /// The answer to a call of a tool the world does not have, when the
    /// style answers it as a tool result (`None` for the default style, and
    /// for one no installed extension provides).
    pub fn unknown_tool(&self, name: &str) -> Option<ToolError> {
        self.style().ok()?.unknown_tool(name)
    }
}

#[cfg(test)]
mod tests {
    use crate::scripted::{LoadErrorKind, resolve};
    use crate::{Scenario, WorldConfig};

    /// The world of [`scenario`], read but not checked.
    fn scripted_config(setting: &str) -> WorldConfig {
        // The scenario format's dialect (`scenario::ron_options`).
        let options = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES)
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
        let scenario: Scenario = options.from_str(&scenario(setting)).expect("reads");
        scenario.world
    }

    fn scenario(setting: &str) -> String {
        format!(
            r#"Scenario(name: "x", world: Scripted(
        tables: [(name: "t", key: "id", rows: [{{"id": "a"}}])],
        script: Inline(origin: "inline", text: "fn ok(args) {{ #{{n: 1}} }}"),
        tools: [(name: "ok", kind: Write)],
        {setting},
        tasks: [(id: "t", facts: {{}}, request: "hi", gold: [(tool: "ok")])],
    ))"#
        )
    }

    /// No extension is installed in this crate's tests: a setting naming one
    /// is refused at its field, never a panic.
    #[test]
    fn a_setting_no_extension_provides_is_refused_at_its_field() {
        let e = Scenario::parse(&scenario(r#"state_hash: Tau2(tables: ["t"])"#), "x.ron").expect_err("refused");
        assert_eq!((e.line, e.column), (5, 21), "{e}");
        let WorldConfig::Scripted(mut config) = scripted_config(r#"state_hash: Tau2(tables: ["t"])"#) else {
            panic!("a scripted world")
        };
        let e = resolve(&mut config, None).expect_err("refused");
        assert_eq!(e.kind, LoadErrorKind::NoExtension);
        assert_eq!(
            e.message,
            "field `world.state_hash`: no installed extension provides the state hash `Tau2` (extensions installed: none)"
        );
        let e = Scenario::parse(&scenario(r#"argument_errors: Python(class: "C")"#), "x.ron").expect_err("refused");
        assert_eq!((e.line, e.column), (5, 26), "{e}");
        assert!(
            e.message.starts_with(
                "field `world.argument_errors`: no installed extension provides the argument-error style `Python`"
            ),
            "{e}"
        );
        assert!(Scenario::parse(&scenario("argument_errors: Schema"), "x.ron").is_ok());
    }
}
