//! Small published or standard word lists of the software domain, used for query expansion next
//! to WordNet (which predates most computing senses). None is written for a query or a tool of
//! ours:
//! - [`VERBS`]: PowerShell's approved verbs with the synonyms its documentation tells command
//!   authors to map to them ("Approved Verbs for PowerShell Commands", Microsoft; the verb
//!   vocabulary of a large, general command catalog);
//! - [`ABBREVIATIONS`]: standard programming abbreviations and the computing sense of "folder";
//! - [`COMMANDS`]: POSIX utilities whose names abbreviate what they do (`mkdir`, `mv`, ...).

/// PowerShell approved verb -> its documented "synonyms to avoid", space-separated.
const VERBS: &[(&str, &str)] = &[
    ("add", "append attach concatenate insert"),
    ("clear", "flush erase release unmark unset nullify"),
    ("close", "shut seal"),
    ("copy", "duplicate clone replicate sync"),
    ("enter", "push into"),
    ("exit", "pop out"),
    ("find", "search"),
    ("format", "layout arrange"),
    (
        "get",
        "read open cat type dir obtain dump acquire examine find search",
    ),
    ("hide", "block suppress"),
    ("join", "combine unite connect associate"),
    ("lock", "restrict secure"),
    ("move", "transfer name migrate"),
    ("new", "create generate build make allocate"),
    ("redo", "repeat retry"),
    ("remove", "clear cut dispose discard erase delete kill"),
    ("rename", "change"),
    ("search", "find locate"),
    ("select", "pick"),
    ("set", "write reset assign configure update"),
    ("show", "display produce"),
    ("skip", "bypass jump"),
    ("split", "separate"),
    ("undo", "revert"),
    ("unlock", "release unrestrict unsecure"),
    ("backup", "save burn replicate sync"),
    ("checkpoint", "diff"),
    ("compare", "diff"),
    ("compress", "compact"),
    ("convert", "change resize resample"),
    ("dismount", "unmount unlink"),
    ("edit", "change update modify"),
    ("expand", "explode uncompress"),
    ("export", "extract backup"),
    ("import", "bulkload load"),
    ("initialize", "erase init renew rebuild reinitialize setup"),
    ("limit", "quota"),
    ("merge", "combine join"),
    ("mount", "connect"),
    ("publish", "deploy release install"),
    ("restore", "repair return undo fix"),
    ("sync", "replicate coerce match"),
    ("unpublish", "uninstall revert hide"),
    ("update", "refresh renew recalculate reindex"),
    ("assert", "certify"),
    ("confirm", "acknowledge agree certify validate verify"),
    ("deny", "block object refuse reject"),
    ("disable", "halt hide"),
    ("enable", "start begin"),
    ("install", "setup"),
    ("invoke", "run start"),
    ("restart", "recycle"),
    ("start", "launch initiate boot"),
    ("stop", "end kill terminate cancel"),
    ("submit", "post"),
    ("suspend", "pause"),
    ("unregister", "remove"),
    ("wait", "sleep pause"),
    ("measure", "calculate determine analyze"),
    ("repair", "fix restore"),
    ("resolve", "expand determine"),
    ("test", "diagnose analyze salvage verify"),
    ("trace", "track follow inspect dig"),
    ("connect", "join telnet login"),
    ("disconnect", "break logoff"),
    ("read", "acquire prompt get"),
    ("receive", "read accept peek"),
    ("send", "put broadcast mail fax"),
    ("write", "put print"),
];

/// Verbs of the same PowerShell group as a lower-case word: for an approved verb its synonyms,
/// for a synonym its approved verb and the other synonyms.
pub fn verbs(word: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut push = |w: &'static str| {
        if w != word && !out.contains(&w) {
            out.push(w);
        }
    };
    for &(verb, synonyms) in VERBS {
        let group = synonyms.split(' ');
        if word == verb {
            group.for_each(&mut push);
        } else if group.clone().any(|s| s == word) {
            push(verb);
            group.for_each(&mut push);
        }
    }
    out
}

/// Programming abbreviations and computing senses missing from WordNet 3.0, each with its
/// expansion (several words = a phrase). Both directions are used. Kept short on purpose: only
/// forms standard in software vocabulary in general.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("repo", "repository"),
    ("dir", "directory"),
    ("folder", "directory"),
    ("pr", "pull request"),
    ("env", "environment"),
    ("config", "configuration"),
    ("db", "database"),
    ("msg", "message"),
    ("img", "image"),
    ("info", "information"),
    ("auth", "authentication"),
    ("doc", "document"),
];

/// POSIX utilities named by an abbreviation of their action, with that action.
const COMMANDS: &[(&str, &str)] = &[
    ("ls", "list"),
    ("mkdir", "make directory"),
    ("rmdir", "remove directory"),
    ("rm", "remove"),
    ("mv", "move"),
    ("cp", "copy"),
    ("pwd", "print working directory"),
    ("cd", "change directory"),
    ("du", "disk usage"),
];

/// Expansions of a lower-case word: abbreviation <-> full form (both ways) and the action of a
/// POSIX command name.
pub fn expansions(word: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ABBREVIATIONS
        .iter()
        .filter_map(|&(short, long)| {
            if word == short {
                Some(long)
            } else if word == long {
                Some(short)
            } else {
                None
            }
        })
        .collect();
    out.extend(
        COMMANDS
            .iter()
            .filter(|&&(cmd, _)| cmd == word)
            .map(|&(_, action)| action),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verb_groups_go_both_ways() {
        assert!(verbs("new").contains(&"create"));
        let create = verbs("create");
        assert!(create.contains(&"new") && create.contains(&"make"));
        assert!(!create.contains(&"create"));
        assert!(verbs("qqqzzz").is_empty());
    }

    #[test]
    fn expansions_cover_abbreviations_and_commands() {
        assert_eq!(expansions("repo"), vec!["repository"]);
        assert_eq!(expansions("repository"), vec!["repo"]);
        assert_eq!(expansions("directory"), vec!["dir", "folder"]);
        assert_eq!(expansions("mkdir"), vec!["make directory"]);
        assert!(expansions("file").is_empty());
    }
}
