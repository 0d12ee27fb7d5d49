//! Pure rules of answers to `ask_user_question`: what a valid answer is, how it is stored in
//! `user_answers` and how it reads as text.

use serde_json::{Value, json};

use super::{AskRequest, HumanAnswer};

/// Why an answer does not fit its question.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("`{0}` is not one of the options")]
    UnknownOption(String),
    #[error("`{0}` is picked twice")]
    Duplicate(String),
    #[error("only one option may be picked")]
    NotMultiSelect,
    #[error("free text is not accepted: pick one of the options")]
    NoOther,
    #[error("the answer is empty")]
    Empty,
    #[error("a form answers an MCP elicitation, not a question")]
    WrongKind,
}

/// Whether `answer` fits `req`. Declined, cancelled and unavailable always fit. Pure.
pub fn check_answer(req: &AskRequest, answer: &HumanAnswer) -> Result<(), AnswerError> {
    let (selected, text) = match answer {
        HumanAnswer::Answer { selected, text } => (selected, text),
        HumanAnswer::Form { .. } => return Err(AnswerError::WrongKind),
        _ => return Ok(()),
    };
    let text = text.as_deref().map(str::trim).filter(|t| !t.is_empty());
    for (i, s) in selected.iter().enumerate() {
        if !req.options.contains(s) {
            return Err(AnswerError::UnknownOption(s.clone()));
        }
        if selected[..i].contains(s) {
            return Err(AnswerError::Duplicate(s.clone()));
        }
    }
    let other_allowed = req.allow_other || req.options.is_empty();
    if text.is_some() && !other_allowed {
        return Err(AnswerError::NoOther);
    }
    let picked = selected.len() + usize::from(text.is_some());
    if picked == 0 {
        return Err(AnswerError::Empty);
    }
    if !req.multi_select && picked > 1 {
        return Err(AnswerError::NotMultiSelect);
    }
    Ok(())
}

/// The question as stored in `user_answers.question`. Pure.
pub fn question_json(req: &AskRequest) -> Value {
    json!({
        "question": req.question,
        "options": req.options,
        "multi_select": req.multi_select,
        "allow_other": req.allow_other,
    })
}

/// The answer as stored in `user_answers.answer`; None for answers that are not the person's
/// (cancelled, unavailable) or not a question's (a form). Pure.
pub fn answer_json(answer: &HumanAnswer) -> Option<Value> {
    match answer {
        HumanAnswer::Answer { selected, text } => {
            let text = text.as_deref().map(str::trim).filter(|t| !t.is_empty());
            Some(json!({"selected": selected, "text": text}))
        }
        HumanAnswer::Declined => Some(json!({"declined": true})),
        _ => None,
    }
}

/// A stored answer (`answer_json`'s form) as one line of text, e.g. `Blue, Green` or
/// `Other: teal`. Pure; tolerant of any JSON (older or foreign rows).
pub fn describe_answer(answer: &Value) -> String {
    if answer.get("declined").and_then(Value::as_bool) == Some(true) {
        return "(the person declined to answer)".to_string();
    }
    let mut parts: Vec<String> = answer
        .get("selected")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let text = answer
        .get("text")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(t) = text {
        parts.push(if parts.is_empty() {
            t.to_string()
        } else {
            format!("Other: {t}")
        });
    }
    if parts.is_empty() {
        return match answer {
            Value::String(s) => s.clone(),
            Value::Null => "(no answer)".to_string(),
            other => other.to_string(),
        };
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(options: &[&str], multi: bool, other: bool) -> AskRequest {
        AskRequest {
            id: "c1".into(),
            run_id: "r1".into(),
            question: "Which?".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            multi_select: multi,
            allow_other: other,
        }
    }

    fn ans(selected: &[&str], text: Option<&str>) -> HumanAnswer {
        HumanAnswer::Answer {
            selected: selected.iter().map(|s| s.to_string()).collect(),
            text: text.map(str::to_string),
        }
    }

    #[test]
    fn answers_are_checked_against_their_question() {
        let single = req(&["a", "b"], false, false);
        assert_eq!(check_answer(&single, &ans(&["a"], None)), Ok(()));
        assert_eq!(
            check_answer(&single, &ans(&["a", "b"], None)),
            Err(AnswerError::NotMultiSelect)
        );
        assert_eq!(
            check_answer(&single, &ans(&["c"], None)),
            Err(AnswerError::UnknownOption("c".into()))
        );
        assert_eq!(
            check_answer(&single, &ans(&[], Some("mine"))),
            Err(AnswerError::NoOther)
        );
        assert_eq!(
            check_answer(&single, &ans(&[], Some("  "))),
            Err(AnswerError::Empty)
        );
        let multi = req(&["a", "b", "c"], true, true);
        assert_eq!(check_answer(&multi, &ans(&["a", "c"], Some("d"))), Ok(()));
        assert_eq!(
            check_answer(&multi, &ans(&["a", "a"], None)),
            Err(AnswerError::Duplicate("a".into()))
        );
        let open = req(&[], false, false);
        assert_eq!(check_answer(&open, &ans(&[], Some("free"))), Ok(()));
        let other = req(&["a"], false, true);
        assert_eq!(
            check_answer(&other, &ans(&["a"], Some("x"))),
            Err(AnswerError::NotMultiSelect)
        );
        assert_eq!(check_answer(&other, &HumanAnswer::Declined), Ok(()));
        assert_eq!(
            check_answer(
                &other,
                &HumanAnswer::Form {
                    content: Default::default()
                }
            ),
            Err(AnswerError::WrongKind)
        );
    }

    #[test]
    fn stored_forms_read_as_text() {
        let a = answer_json(&ans(&["Blue", "Green"], Some(" teal "))).unwrap();
        assert_eq!(a, json!({"selected": ["Blue", "Green"], "text": "teal"}));
        assert_eq!(describe_answer(&a), "Blue, Green, Other: teal");
        let t = answer_json(&ans(&[], Some("just this"))).unwrap();
        assert_eq!(describe_answer(&t), "just this");
        let d = answer_json(&HumanAnswer::Declined).unwrap();
        assert_eq!(describe_answer(&d), "(the person declined to answer)");
        assert_eq!(answer_json(&HumanAnswer::Cancelled), None);
        assert_eq!(describe_answer(&json!("raw")), "raw");
        assert_eq!(
            question_json(&req(&["a"], true, false)),
            json!({"question": "Which?", "options": ["a"], "multi_select": true, "allow_other": false})
        );
    }
}
