//! The command names of `command_table.rs`, read from its source text. `build.rs` declares them in
//! the app manifest (each becomes a grantable `allow-<name>` permission) before the crate, and so
//! the table's macro, exists; this module is that reading, shared with the crate's tests.
//!
//! The parser is deliberately strict: it accepts exactly the form the `command_table!` macro
//! accepts, one `command_table! { ... }` invocation whose entries are
//! `module::command(arg: Type, ...) -> Ok;`, and nothing else inside it (no comments, no
//! attributes, no braces). Anything it does not expect is an error naming the entry, which fails
//! the build: a command the build did not grant can never be registered silently.

/// Where the table's entries begin.
const OPENING: &str = "command_table! {";

/// The command names of the table in `source` (the text of `command_table.rs`), in order.
pub fn command_names(source: &str) -> Result<Vec<String>, String> {
    let body = table_body(source)?;
    let mut names: Vec<String> = Vec::new();
    let mut entries: Vec<&str> = body.split(';').collect();
    // Every entry ends with `;`: what follows the last one must be empty.
    let tail = entries.pop().unwrap_or_default();
    if !tail.trim().is_empty() {
        return Err(format!(
            "the last entry of the table does not end with `;`: `{}`",
            tail.trim()
        ));
    }
    for entry in entries {
        let name = entry_name(entry.trim())?;
        if names.contains(&name) {
            return Err(format!("the command `{name}` is listed twice"));
        }
        names.push(name);
    }
    if names.is_empty() {
        return Err("the table lists no command".to_owned());
    }
    Ok(names)
}

/// The text between `command_table! {` and its closing `}` (the one invocation of the file).
fn table_body(source: &str) -> Result<&str, String> {
    let starts: Vec<usize> = source
        .match_indices(OPENING)
        .map(|(at, _)| at)
        .filter(|at| *at == 0 || source[..*at].ends_with('\n'))
        .collect();
    let start = match starts.as_slice() {
        [one] => one + OPENING.len(),
        [] => return Err(format!("no line starts with `{OPENING}`")),
        _ => return Err(format!("more than one line starts with `{OPENING}`")),
    };
    let rest = &source[start..];
    let end = rest
        .find('}')
        .ok_or_else(|| format!("`{OPENING}` is never closed with `}}`"))?;
    let body = &rest[..end];
    if let Some(bad) = ["{", "//", "/*", "#"]
        .into_iter()
        .find(|t| body.contains(t))
    {
        return Err(format!(
            "`{bad}` inside the table: it holds only `module::command(arg: Type, ...) -> Ok;` entries"
        ));
    }
    if !rest[end + 1..].trim().is_empty() {
        return Err("text after the table's closing `}`: the table ends the file".to_owned());
    }
    Ok(body)
}

/// `module::command(arg: Type, ...) -> Ok` -> `command`.
fn entry_name(entry: &str) -> Result<String, String> {
    let bad = |why: &str| {
        Err(format!(
            "{why} in the entry `{entry}` (expected `module::command(arg: Type, ...) -> Ok;`)"
        ))
    };
    let Some((path, rest)) = entry.split_once('(') else {
        return bad("no `(`");
    };
    let Some((module, name)) = path.split_once("::") else {
        return bad("no `module::` before the command");
    };
    if !is_ident(module) || !is_ident(name) {
        return bad("not a `module::command` path of two snake_case names");
    }
    let Some((args, ok)) = rest.rsplit_once("->") else {
        return bad("no `->`");
    };
    let Some(args) = args.trim_end().strip_suffix(')') else {
        return bad("no `)` before `->`");
    };
    if ok.trim().is_empty() {
        return bad("no `Ok` type after `->`");
    }
    for arg in split_args(args).map_err(|why| format!("{why} in the entry `{entry}`"))? {
        let Some((arg_name, ty)) = arg.split_once(':') else {
            return bad("an argument without `: Type`");
        };
        if !is_ident(arg_name.trim()) || ty.trim().is_empty() || ty.trim_start().starts_with(':') {
            return bad("an argument that is not `name: Type`");
        }
    }
    Ok(name.to_owned())
}

/// The arguments of an entry, split at the commas outside `<>` and `()`; a trailing comma allowed.
fn split_args(args: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth: i32 = 0;
    let mut from = 0;
    for (at, c) in args.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&args[from..at]);
                from = at + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err("unbalanced brackets".to_owned());
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets".to_owned());
    }
    parts.push(&args[from..]);
    let last_empty = parts.last().is_some_and(|p| p.trim().is_empty());
    if last_empty {
        parts.pop();
    }
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err("an empty argument".to_owned());
    }
    Ok(parts)
}

/// A snake_case Rust identifier (the table's modules, commands and parameters are all of them).
fn is_ident(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_table_gives_the_names_the_macro_registers() {
        let source = include_str!("command_table.rs");
        assert_eq!(
            command_names(source).as_deref(),
            Ok(crate::command_table::COMMANDS
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .as_slice())
        );
    }

    fn table(entries: &str) -> String {
        format!("use x::y;\n\ncommand_table! {{\n{entries}}}\n")
    }

    #[test]
    fn every_form_the_macro_accepts_is_read() {
        let source = table(
            "    a::one() -> X;\n    b::two(x: String, y: Option<Vec<(u8, u8)>>,) -> ();\n    \
             c::three(\n        on_event: Channel<Event>,\n    ) -> Option<Y>;\n",
        );
        assert_eq!(
            command_names(&source),
            Ok(vec!["one".to_owned(), "two".to_owned(), "three".to_owned()])
        );
    }

    #[test]
    fn anything_unexpected_is_an_error_naming_it() {
        let cases = [
            ("", "no line starts with"),
            ("command_table! {\n a::b() -> X;\n", "never closed"),
            (&table("    a::b() -> X;\n    // later\n"), "`//` inside"),
            (&table("    #[cfg(test)]\n    a::b() -> X;\n"), "`#` inside"),
            (&table("    a::b() -> X\n"), "does not end with `;`"),
            (&table("    b() -> X;\n"), "no `module::`"),
            (&table("    a::B() -> X;\n"), "two snake_case names"),
            (&table("    a::b::c() -> X;\n"), "two snake_case names"),
            (&table("    a::b() X;\n"), "no `->`"),
            (&table("    a::b() -> ;\n"), "no `Ok` type"),
            (&table("    a::b(x) -> X;\n"), "without `: Type`"),
            (&table("    a::b(x: Vec<u8) -> X;\n"), "unbalanced"),
            (&table("    a::b(x: u8,, y: u8) -> X;\n"), "empty argument"),
            (
                &table("    a::b() -> X;\n    c::b() -> Y;\n"),
                "listed twice",
            ),
            (&table(""), "no command"),
            (
                &format!("{}\nfn more() {{}}\n", table("    a::b() -> X;\n")),
                "text after",
            ),
            (
                &format!(
                    "{}{}",
                    table("    a::b() -> X;\n"),
                    table("    a::c() -> X;\n")
                ),
                "more than one",
            ),
        ];
        for (source, expected) in cases {
            let error = command_names(source).expect_err(source);
            assert!(error.contains(expected), "{source:?}: {error}");
        }
    }
}
