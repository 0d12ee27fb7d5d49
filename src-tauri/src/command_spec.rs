//! What the command table says about one command, and the `command_table!` macro that turns the one
//! list of commands (`command_table.rs`) into both Tauri's invoke handler and that description.
//!
//! Each entry names the handler and restates its IPC signature: the arguments the UI sends (never
//! the injected `State` / `AppHandle`) and the `Ok` type of its `Result<_, CommandError>`. The
//! types are the real Rust types, so their TypeScript names and imports come from ts-rs
//! (`bindings.rs`), and `ui/src/bindings/commands.ts` is generated from the table
//! (`commands_ts.rs`). `tests/all/command_table.rs` parses the handlers' source and fails when an
//! entry no longer matches its function, and when a `#[tauri::command]` is missing from the table.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use ts_rs::{Config, Dependency, TS, TypeVisitor};

/// One command of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The module of `src-tauri/src` that defines the handler.
    pub module: &'static str,
    /// The command's name, as registered and as the UI invokes it.
    pub name: &'static str,
    /// The arguments the UI sends, in the handler's order.
    pub args: Vec<ArgSpec>,
    /// The `Ok` type of the handler's result.
    pub result: TsType,
}

/// One argument of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// The handler's parameter name (snake_case; the UI sends it in camelCase, as Tauri expects).
    pub name: &'static str,
    pub ty: TsType,
}

impl ArgSpec {
    pub fn of<T: TS + 'static + ?Sized>(name: &'static str, rust: &'static str) -> Self {
        Self {
            name,
            ty: TsType::of::<T>(rust),
        }
    }

    /// The key the UI sends: Tauri's default `rename_all = "camelCase"` of the parameter name.
    pub fn key(&self) -> String {
        camel_case(self.name)
    }
}

/// Fixed settings (not read from the environment), so the output never depends on who runs it.
/// 64-bit integers are plain `number`s: serde_json sends them as JSON numbers.
pub fn config(dir: &Path) -> Config {
    Config::new().with_out_dir(dir).with_large_int("number")
}

/// A Rust type as written in the table and as TypeScript sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsType {
    /// The type as written in the table (`stringify!`), compared with the handler's source.
    pub rust: &'static str,
    /// Its TypeScript name (`Array<RunSummary> | null`).
    pub ts: String,
    /// The generated bindings it refers to: TypeScript name -> file under `ui/src/bindings/`.
    pub imports: BTreeMap<String, PathBuf>,
}

impl TsType {
    pub fn of<T: TS + 'static + ?Sized>(rust: &'static str) -> Self {
        let cfg = config(Path::new("."));
        let mut imports = BTreeMap::new();
        let mut visit = Imports(&cfg, &mut imports);
        visit.visit::<T>();
        T::visit_generics(&mut visit);
        Self {
            rust,
            ts: T::name(&cfg),
            imports,
        }
    }
}

/// Collects the exported types a type names (itself and its generic arguments, recursively).
struct Imports<'a>(&'a Config, &'a mut BTreeMap<String, PathBuf>);

impl TypeVisitor for Imports<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if let Some(dep) = Dependency::from_ty::<T>(self.0) {
            self.1.insert(dep.ts_name, dep.output_path);
        }
    }
}

/// `tauri::ipc::Channel<T>` as the table writes it: the UI passes a `Channel<T>` of
/// `@tauri-apps/api/core` whose messages are `T`.
pub struct Channel<T>(PhantomData<T>);

impl<T: TS> TS for Channel<T> {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn name(cfg: &Config) -> String {
        format!("Channel<{}>", T::name(cfg))
    }

    fn inline(cfg: &Config) -> String {
        Self::name(cfg)
    }

    fn visit_generics(v: &mut impl TypeVisitor)
    where
        Self: 'static,
    {
        T::visit_generics(v);
        v.visit::<T>();
    }
}

/// `tauri::ipc::Response` as the table writes it: raw bytes, which reach the UI as an ArrayBuffer.
pub struct Response;

impl TS for Response {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn name(_: &Config) -> String {
        "ArrayBuffer".to_owned()
    }

    fn inline(cfg: &Config) -> String {
        Self::name(cfg)
    }
}

/// `snake_case` -> `camelCase`, as Tauri maps a command's parameter names to argument keys.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Declares the shell's commands once. Each entry is `module::command(arg: Type, ...) -> Ok;`
/// and the expansion is `COMMANDS` (the names), `handler()` (Tauri's invoke handler over every
/// entry, in order) and `table()` (the entries as [`CommandSpec`]s). `build.rs` reads the same
/// entries from the source (`table_names.rs`), so keep to this form: it rejects anything else.
macro_rules! command_table {
    ($( $module:ident :: $name:ident ( $( $arg:ident : $ty:ty ),* $(,)? ) -> $ret:ty ; )*) => {
        /// Every command the shell registers, in the table's order (the build grants the same
        /// names, read from the table's source).
        pub const COMMANDS: &[&str] = &[$( stringify!($name) ),*];

        /// Tauri's invoke handler over every command of the table, in its order.
        pub fn handler<R: tauri::Runtime>(
        ) -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$( $module::$name ),*]
        }

        /// Every command of the table: name, the arguments the UI sends, the result.
        pub fn table() -> Vec<$crate::command_spec::CommandSpec> {
            vec![$(
                $crate::command_spec::CommandSpec {
                    module: stringify!($module),
                    name: stringify!($name),
                    args: vec![$(
                        $crate::command_spec::ArgSpec::of::<$ty>(stringify!($arg), stringify!($ty))
                    ),*],
                    result: $crate::command_spec::TsType::of::<$ret>(stringify!($ret)),
                }
            ),*]
        }
    };
}

pub(crate) use command_table;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_names_become_tauri_argument_keys() {
        assert_eq!(camel_case("call_id"), "callId");
        assert_eq!(camel_case("tool_call_id"), "toolCallId");
        assert_eq!(camel_case("prompt"), "prompt");
        assert_eq!(camel_case("max_steps"), "maxSteps");
    }

    #[test]
    fn a_type_names_its_generated_bindings() {
        let ty = TsType::of::<Option<Vec<crate::run_views::RunSummary>>>("x");
        assert_eq!(ty.ts, "Array<RunSummary> | null");
        assert_eq!(
            ty.imports
                .get("RunSummary")
                .map(|p| p.to_string_lossy().into_owned()),
            Some("RunSummary.ts".to_owned())
        );
        let channel = TsType::of::<Channel<aibuddy::events::Event>>("x");
        assert_eq!(channel.ts, "Channel<Event>");
        assert!(channel.imports.contains_key("Event"), "{channel:?}");
        assert_eq!(TsType::of::<Response>("x").ts, "ArrayBuffer");
    }
}
