//! The network question: a command asks for a host on no `exec.network` list, and the person
//! answers through the same [`super::ConfirmBroker`] that answers confirmations
//! ([`super::ConfirmBroker::network_announced`]): the CLI prompt `[o]nce, [p]roject, [N]o`, the
//! desktop's network dialog (`answer_network`).
//!
//! | answer | effect |
//! |---|---|
//! | [`NetworkAnswer::Once`] | this host and port, for the rest of this call's command |
//! | [`NetworkAnswer::Project`] | the same, and recorded at the user level for this project (`<data_dir>/network/<sha256(project root)>.json`, never in the project's files); later calls in the project read it back as allowed |
//! | [`NetworkAnswer::Deny`] | refused; the model is told which host and how the person can allow it |
//!
//! Nobody to ask (`--yes`, no terminal, a broker that does not ask: [`super::ConfirmBroker::asks_network`])
//! refuses without asking. A stopped call, a closed dialog or the command's deadline answers
//! `Deny`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use aibuddy_common::term::{self, DisplaySegment};

/// What the person is asked about one host (by call and host; `ask_id` answers it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct NetworkAsk {
    /// Answers this question (`answer_network`); unique per question.
    pub ask_id: String,
    pub call_id: String,
    pub tool: String,
    /// The host the command asked the proxy for, as the proxy compares it (lower-case); it comes
    /// from the command: untrusted.
    pub host: String,
    pub port: u16,
    /// The call's command (its confirm target).
    pub target: String,
    /// How the fields above are shown ([`NetworkAsk::revealed`]), as the approval dialog shows
    /// its fields: the window renders the segments, the CLI prints them as text.
    pub display: NetworkAskDisplay,
}

/// The shown form of a [`NetworkAsk`]'s untrusted fields ([`term::reveal`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct NetworkAskDisplay {
    pub host: Vec<DisplaySegment>,
    /// Visible non-ASCII characters of the host with their codes (a look-alike name).
    pub host_non_ascii: Vec<String>,
    pub tool: Vec<DisplaySegment>,
    pub target: Vec<DisplaySegment>,
}

impl NetworkAsk {
    /// The question with its display computed from its fields.
    pub fn revealed(mut self) -> Self {
        self.display = NetworkAskDisplay {
            host: term::reveal(&self.host),
            host_non_ascii: term::non_ascii(&self.host),
            tool: term::reveal(&self.tool),
            target: term::reveal(&self.target),
        };
        self
    }
}

/// The person's answer about one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum NetworkAnswer {
    /// This host and port, for this call's command.
    Once,
    /// This host and port, for this call and later calls in this project (recorded at the user
    /// level).
    Project,
    Deny,
}

impl NetworkAnswer {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkAnswer::Once => "once",
            NetworkAnswer::Project => "project",
            NetworkAnswer::Deny => "deny",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_and_command_are_revealed() {
        let ask = NetworkAsk {
            ask_id: "n1".into(),
            call_id: "c1".into(),
            tool: "execute".into(),
            host: "ex\u{200B}ample.com".into(),
            port: 443,
            target: "curl x\nrm -rf y".into(),
            display: Default::default(),
        }
        .revealed();
        assert_eq!(
            ask.display.host,
            vec![
                DisplaySegment::Text { text: "ex".into() },
                DisplaySegment::Code {
                    code: "U+200B".into()
                },
                DisplaySegment::Text {
                    text: "ample.com".into()
                },
            ]
        );
        assert!(ask.display.target.contains(&DisplaySegment::LineBreak));
        let look_alike = NetworkAsk {
            host: "аpple.com".into(),
            ..ask
        }
        .revealed();
        assert_eq!(look_alike.display.host_non_ascii, vec!["а U+0430"]);
    }
}
