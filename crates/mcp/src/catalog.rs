//! The tool catalog handed to the core: every usable tool of every connected server, with its
//! qualified name, schema and risk. Building it is pure; tools whose input schema cannot be used
//! are left out with a Discovery-stage reason while their siblings stay.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::ToolFilter;
use crate::names::NameMap;
use crate::risk::McpRisk;
use crate::status::RejectedTool;

/// One MCP tool as the core sees it.
#[derive(Debug, Clone, Serialize)]
pub struct McpToolEntry {
    /// Configured server name.
    pub server: String,
    /// Exact tool name on that server.
    pub name: String,
    /// `mcp__<server>__<tool>`, sanitised and unique (see [`crate::names`]).
    pub qualified_name: String,
    pub title: Option<String>,
    pub description: String,
    /// The tool's JSON Schema for its arguments (top level is an object schema).
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub risk: McpRisk,
    #[serde(skip)]
    pub(crate) validator: Arc<jsonschema::Validator>,
}

impl PartialEq for McpToolEntry {
    fn eq(&self, other: &Self) -> bool {
        self.server == other.server
            && self.name == other.name
            && self.qualified_name == other.qualified_name
            && self.description == other.description
            && self.input_schema == other.input_schema
            && self.risk == other.risk
    }
}

impl McpToolEntry {
    /// Validates `args` against the input schema; the message lists the violations.
    pub fn check_arguments(&self, args: &Value) -> Result<(), String> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    e.to_string()
                } else {
                    format!("{path}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

/// Checks that a tool's input schema is usable: a JSON object whose top-level `type` is
/// `"object"` and that compiles as JSON Schema. Returns the compiled validator. Pure.
pub fn compile_input_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    let Some(obj) = schema.as_object() else {
        return Err("input schema is not a JSON object".into());
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "input schema's top-level type must be \"object\", found {other}"
            ));
        }
        None => return Err("input schema has no top-level \"type\": \"object\"".into()),
    }
    jsonschema::options()
        .with_retriever(Offline)
        .build(schema)
        .map_err(|e| format!("input schema does not compile: {e}"))
}

/// Resolves no external `$ref` (`http:`, `file:`, ...): a server's schema must never make the
/// client reach the network or read a file. Explicit, so a feature of `jsonschema` enabled
/// elsewhere in the build (`resolve-http`, `resolve-file`) cannot turn fetching on.
struct Offline;

impl jsonschema::Retrieve for Offline {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!(
            "external $ref `{}` is not resolved (schemas must be self-contained)",
            uri.as_str()
        )
        .into())
    }
}

/// Longest tool name kept (the MCP spec: names SHOULD be 1 to 128 characters). A longer one is
/// rejected; it would fill every confirmation and listing that names the tool.
pub const MAX_TOOL_NAME_CHARS: usize = 128;
/// Longest description the model and the `tool_search` index get; the rest is cut with a note.
/// Every active tool's description goes into every model request, so one server must not be able
/// to fill the context with it (Claude Code cuts at the same length).
pub const MAX_DESCRIPTION_CHARS: usize = 2_048;
/// Longest title kept; the rest is cut.
pub const MAX_TITLE_CHARS: usize = 256;
/// Largest input (or output) schema accepted, as JSON bytes. An active tool's schema goes into
/// every model request; real servers' schemas are a few KiB.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Cuts `text` to `max` characters; a cut text ends with a note giving the full length. Pure.
pub fn cut_text(text: &str, max: usize, what: &str) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str(&format!(" [... {what} cut at {max} of {total} characters]"));
    out
}

/// Why a tool's name cannot be used, if it cannot: too long, or it holds control characters,
/// bidirectional overrides or line separators (they would redraw or hide what a person reads
/// wherever the exact name is shown). Pure.
pub fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars > MAX_TOOL_NAME_CHARS {
        return Some(format!(
            "tool name is {chars} characters, more than {MAX_TOOL_NAME_CHARS}"
        ));
    }
    if name.chars().any(aibuddy_common::term::is_unsafe) {
        return Some(
            "tool name has control characters, bidirectional overrides or line separators".into(),
        );
    }
    None
}

/// The name as a [`RejectedTool`] keeps it: at most [`MAX_TOOL_NAME_CHARS`] characters. Pure.
fn shown_name(name: &str) -> String {
    if name.chars().count() <= MAX_TOOL_NAME_CHARS {
        return name.to_owned();
    }
    let mut out: String = name.chars().take(MAX_TOOL_NAME_CHARS).collect();
    out.push_str("...");
    out
}

/// Why a schema is too large, if it is. Pure.
fn schema_size_problem(schema: &serde_json::Map<String, Value>, which: &str) -> Option<String> {
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    size_problem(size, which)
}

fn size_problem(size: usize, which: &str) -> Option<String> {
    (size > MAX_SCHEMA_BYTES)
        .then(|| format!("{which} schema is {size} bytes, more than {MAX_SCHEMA_BYTES}"))
}

/// The input schemas a catalog compiled (or found unusable), by server and tool, each with the
/// SHA-256 of the schema's JSON. The next rebuild takes a schema from here when its server still
/// lists the tool with the same JSON, and compiles only the others; what the new catalog does not
/// list is dropped with the old catalog. With thousands of tools, compiling is most of the cost
/// of a rebuild, and a `list_changed` of one server rebuilds the whole catalog.
#[derive(Debug, Clone, Default)]
pub struct SchemaCache {
    by_tool: HashMap<(String, String), CachedSchema>,
}

#[derive(Debug, Clone)]
struct CachedSchema {
    hash: [u8; 32],
    compiled: Result<Arc<jsonschema::Validator>, String>,
}

impl SchemaCache {
    /// How many schemas are kept.
    pub fn len(&self) -> usize {
        self.by_tool.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_tool.is_empty()
    }

    fn get(&self, server: &str, tool: &str, hash: &[u8; 32]) -> Option<&CachedSchema> {
        // Keyed by owned strings; a lookup builds the key (cheap next to hashing the schema).
        self.by_tool
            .get(&(server.to_owned(), tool.to_owned()))
            .filter(|c| &c.hash == hash)
    }
}

/// The catalog of all connected servers, its name map, and the rejected tools.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub entries: Vec<McpToolEntry>,
    pub names: NameMap,
    /// Every qualified name given out by this catalog and the ones it was rebuilt from
    /// ([`rebuild_catalog`]), with its owner, including tools of servers that are down now: a
    /// name given to one tool is never given to another for the life of the manager.
    pub given_names: NameMap,
    /// This catalog's compiled input schemas, reused by the next [`rebuild_catalog`].
    pub schemas: SchemaCache,
    /// How many input schemas this build compiled; the others came from the previous catalog
    /// (a debug metric).
    pub schemas_compiled: usize,
    pub rejected: Vec<RejectedTool>,
    /// Tools left out by their server's `tools` allow/deny lists (reason
    /// [`crate::config::tool_filter::DENIED`] or [`crate::config::tool_filter::NOT_ALLOWED`]).
    pub filtered: Vec<RejectedTool>,
}

impl Catalog {
    /// The entry behind a qualified name: the name map (a hash lookup) says whether this catalog
    /// gave the name out, and a binary search of the entries (sorted by qualified name) finds it.
    /// A call binds through this on every call, so it must not scan thousands of entries.
    pub fn entry(&self, qualified_name: &str) -> Option<&McpToolEntry> {
        self.names.resolve(qualified_name)?;
        match (self.entries).binary_search_by(|e| e.qualified_name.as_str().cmp(qualified_name)) {
            Ok(i) => self.entries.get(i),
            // Entries not in order (a catalog assembled by hand): the slow way.
            Err(_) => self
                .entries
                .iter()
                .find(|e| e.qualified_name == qualified_name),
        }
    }

    /// The qualified name this catalog, or one it was rebuilt from, gave to `tool` on `server`
    /// ([`Catalog::given_names`]), even when the tool is left out now (its schema became unusable,
    /// its server is down); `None` when no name was ever given to it.
    pub fn given_name(&self, server: &str, tool: &str) -> Option<&str> {
        (self.names.qualified(server, tool)).or_else(|| self.given_names.qualified(server, tool))
    }
}

/// Splits each server's listed tools by its filter: the kept tools, and the left-out ones with
/// their reason. Servers without a filter keep everything. Pure.
pub fn apply_tool_filters(
    servers: BTreeMap<String, Vec<Tool>>,
    filters: &BTreeMap<String, ToolFilter>,
) -> (BTreeMap<String, Vec<Tool>>, Vec<RejectedTool>) {
    let mut left_out = Vec::new();
    let kept = servers
        .into_iter()
        .map(|(server, tools)| {
            let Some(filter) = filters.get(&server).filter(|f| !f.is_open()) else {
                return (server, tools);
            };
            let tools = tools
                .into_iter()
                .filter(|tool| match filter.verdict(&tool.name) {
                    None => true,
                    Some(reason) => {
                        left_out.push(RejectedTool {
                            server: server.clone(),
                            tool: tool.name.to_string(),
                            reason: reason.to_owned(),
                        });
                        false
                    }
                })
                .collect();
            (server, tools)
        })
        .collect();
    (kept, left_out)
}

/// Builds the catalog from each server's listed tools. Entries come out sorted by qualified
/// name. Only the servers in `trusted` (configured `trustAnnotations: true`) may lower their
/// tools' risk through annotations (see [`crate::risk`]). Pure.
pub fn build_catalog(servers: &BTreeMap<String, Vec<Tool>>, trusted: &BTreeSet<String>) -> Catalog {
    build_catalog_keeping(servers, trusted, &NameMap::default())
}

/// [`build_catalog`], where every tool named in `previous` keeps its qualified name
/// ([`NameMap::build_keeping`]): a tool listed later never takes over a name in use. Pure.
pub fn build_catalog_keeping(
    servers: &BTreeMap<String, Vec<Tool>>,
    trusted: &BTreeSet<String>,
    previous: &NameMap,
) -> Catalog {
    build_from(servers, trusted, previous.clone(), &SchemaCache::default())
}

/// The catalog that follows `previous` (the manager's rebuild on every connect, disconnect and
/// `list_changed`). Names: every name `previous` or any catalog before it gave out stays with
/// its tool, even while the tool's server is down ([`Catalog::given_names`]); a tool listed
/// meanwhile by another server that maps to the same name gets another one. Schemas: an input
/// schema whose tool and JSON are unchanged is taken compiled from `previous`
/// ([`SchemaCache`]). Pure.
pub fn rebuild_catalog(
    servers: &BTreeMap<String, Vec<Tool>>,
    trusted: &BTreeSet<String>,
    previous: &Catalog,
) -> Catalog {
    build_from(
        servers,
        trusted,
        previous.given_names.clone(),
        &previous.schemas,
    )
}

fn build_from(
    servers: &BTreeMap<String, Vec<Tool>>,
    trusted: &BTreeSet<String>,
    mut given_names: NameMap,
    cache: &SchemaCache,
) -> Catalog {
    struct Accepted<'a> {
        server: &'a str,
        tool: &'a Tool,
        schema: Value,
        validator: Arc<jsonschema::Validator>,
    }
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    let mut schemas = SchemaCache::default();
    let mut schemas_compiled = 0usize;
    for (server, tools) in servers {
        let mut seen = HashSet::new();
        for tool in tools {
            let name = tool.name.as_ref();
            if name.is_empty() {
                rejected.push(RejectedTool {
                    server: server.clone(),
                    tool: name.into(),
                    reason: "tool has an empty name".into(),
                });
                continue;
            }
            if let Some(reason) = name_problem(name) {
                rejected.push(RejectedTool {
                    server: server.clone(),
                    tool: shown_name(name),
                    reason,
                });
                continue;
            }
            if !seen.insert(name) {
                rejected.push(RejectedTool {
                    server: server.clone(),
                    tool: name.into(),
                    reason: "duplicate tool name on this server; the first one is kept".into(),
                });
                continue;
            }
            let input_json = serde_json::to_vec(&*tool.input_schema).unwrap_or_default();
            let input_size = if input_json.is_empty() {
                usize::MAX
            } else {
                input_json.len()
            };
            let too_large = size_problem(input_size, "input").or_else(|| {
                (tool.output_schema.as_deref()).and_then(|s| schema_size_problem(s, "output"))
            });
            if let Some(reason) = too_large {
                rejected.push(RejectedTool {
                    server: server.clone(),
                    tool: name.into(),
                    reason,
                });
                continue;
            }
            let schema = Value::Object((*tool.input_schema).clone());
            let hash: [u8; 32] = Sha256::digest(&input_json).into();
            let compiled = match cache.get(server, name, &hash) {
                Some(cached) => cached.compiled.clone(),
                None => {
                    schemas_compiled += 1;
                    compile_input_schema(&schema).map(Arc::new)
                }
            };
            schemas.by_tool.insert(
                (server.clone(), name.to_owned()),
                CachedSchema {
                    hash,
                    compiled: compiled.clone(),
                },
            );
            match compiled {
                Ok(validator) => accepted.push(Accepted {
                    server,
                    tool,
                    schema,
                    validator,
                }),
                Err(reason) => rejected.push(RejectedTool {
                    server: server.clone(),
                    tool: name.into(),
                    reason,
                }),
            }
        }
    }
    let names = NameMap::build_keeping(
        accepted.iter().map(|a| (a.server, a.tool.name.as_ref())),
        &given_names,
    );
    given_names.remember(&names);
    let live: BTreeSet<String> = servers.keys().cloned().collect();
    given_names.trim(&names, &live);
    if schemas_compiled > 0 {
        tracing::debug!(
            compiled = schemas_compiled,
            reused = schemas.len().saturating_sub(schemas_compiled),
            "MCP catalog rebuilt"
        );
    }
    let mut entries: Vec<McpToolEntry> = accepted
        .into_iter()
        .filter_map(|a| {
            let qualified_name = names.qualified(a.server, &a.tool.name)?.to_owned();
            Some(McpToolEntry {
                server: a.server.to_owned(),
                name: a.tool.name.to_string(),
                qualified_name,
                title: (a.tool.title.as_deref())
                    .or_else(|| a.tool.annotations.as_ref().and_then(|x| x.title.as_deref()))
                    .map(|t| cut_text(t, MAX_TITLE_CHARS, "title")),
                description: cut_text(
                    a.tool.description.as_deref().unwrap_or_default(),
                    MAX_DESCRIPTION_CHARS,
                    "description",
                ),
                input_schema: a.schema,
                output_schema: a
                    .tool
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone())),
                risk: McpRisk::from_annotations(
                    a.tool.annotations.as_ref(),
                    trusted.contains(a.server),
                ),
                validator: a.validator,
            })
        })
        .collect();
    entries.sort_by(|a, b| a.qualified_name.cmp(&b.qualified_name));
    Catalog {
        entries,
        names,
        given_names,
        schemas,
        schemas_compiled,
        rejected,
        filtered: Vec::new(),
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
