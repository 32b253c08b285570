//! Filling and submitting a form in Chromium over the DevTools protocol: which of the page's
//! forms the model's fields name (by name: exact, case-insensitive, then contained), typing each
//! value into its field as keyboard input (`Input.insertText`, so the page's scripts see trusted
//! input events), and submitting with a real mouse click on the form's own submit button (else
//! `requestSubmit()`), so the page sees what a user would do.
//!
//! It must not read the page that follows (the reader does) nor tick boxes it was not told to.

use serde_json::{Value, json};

use super::cdp::CdpError;
use super::dom::PageSession;
use crate::wire::WebField;

/// The named fields of every form of the page, in `document.forms` order.
const LIST_FORMS: &str = "Array.from(document.forms).map(f => \
     Array.from(f.elements).filter(e => e.name).map(e => e.name))";

/// The controls of a form, in document order, as `[name, tag, type, value, checked]`.
const DESCRIBE_CONTROLS: &str = "function() { return Array.from(this.querySelectorAll('input, textarea, select')) \
     .map(c => [c.name || '', c.tagName.toLowerCase(), (c.getAttribute('type') || '').toLowerCase(), \
                String(c.value || ''), !!c.checked]); }";

/// The form chosen for the model's fields, and which field each given value goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// Index in `document.forms`.
    pub form: usize,
    /// `(field name in the form, value)`.
    pub assignments: Vec<(String, String)>,
}

/// Lists the forms' field names.
pub(crate) async fn list_forms(page: &PageSession) -> Result<Vec<Vec<String>>, CdpError> {
    let value = page.evaluate(LIST_FORMS).await?;
    let forms = value.as_array().cloned().unwrap_or_default();
    Ok(forms
        .iter()
        .map(|form| {
            form.as_array()
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect())
}

/// How well `given` names `field`: 3 exact, 2 case-insensitive, 1 contained.
fn match_quality(given: &str, field: &str) -> Option<u8> {
    if given.is_empty() {
        return None;
    }
    if given == field {
        Some(3)
    } else if given.eq_ignore_ascii_case(field) {
        Some(2)
    } else if field.to_lowercase().contains(&given.to_lowercase()) {
        Some(1)
    } else {
        None
    }
}

/// Picks the form most of `fields` name (then the better matches; then the first such form).
pub fn choose(forms: &[Vec<String>], fields: &[WebField]) -> Option<Choice> {
    let mut best: Option<((usize, u32), Choice)> = None;
    for (index, names) in forms.iter().enumerate() {
        let mut assignments = Vec::new();
        let mut quality = 0u32;
        for field in fields {
            let found = names
                .iter()
                .filter_map(|name| match_quality(&field.name, name).map(|q| (q, name)))
                .max_by_key(|(q, _)| *q);
            if let Some((q, name)) = found {
                quality += u32::from(q);
                assignments.push((name.clone(), field.value.clone()));
            }
        }
        let score = (assignments.len(), quality);
        if score.0 > 0 && best.as_ref().is_none_or(|(top, _)| score > *top) {
            best = Some((
                score,
                Choice {
                    form: index,
                    assignments,
                },
            ));
        }
    }
    best.map(|(_, choice)| choice)
}

/// A checkbox is ticked only by these values.
pub(crate) fn truthy(value: &str) -> bool {
    ["checked", "true", "on", "yes", "1"]
        .iter()
        .any(|t| value.trim().eq_ignore_ascii_case(t))
}

/// Types the chosen values into the form and submits it.
pub(crate) async fn fill_and_submit(page: &PageSession, choice: &Choice) -> Result<(), CdpError> {
    let Some(form) = page
        .handle(&format!("document.forms[{}]", choice.form))
        .await?
    else {
        return Err(CdpError::Command {
            method: "fill".into(),
            message: "the form is gone from the page".into(),
        });
    };
    let controls = page.call_on(&form, DESCRIBE_CONTROLS, &[]).await?;
    let controls = controls.as_array().cloned().unwrap_or_default();
    for (index, control) in controls.iter().enumerate() {
        let text = |i: usize| control[i].as_str().unwrap_or_default();
        let name = text(0);
        // The last value given for a field wins, as in a query string.
        let Some((_, value)) = choice.assignments.iter().rev().find(|(n, _)| n == name) else {
            continue;
        };
        let kind = if text(1) == "input" {
            match text(2) {
                "" => "text",
                other => other,
            }
        } else {
            text(1)
        };
        let current = Control {
            index,
            value: text(3),
            checked: control[4].as_bool().unwrap_or(false),
        };
        fill(page, &form, kind, &current, value).await?;
    }
    submit(page, &form).await
}

/// One control as the page has it now.
struct Control<'a> {
    index: usize,
    value: &'a str,
    checked: bool,
}

/// Runs `body` with `c` bound to the control (and `v` to a value) inside the form.
const ON_CONTROL: &str = "function(i, v) { const c = this.querySelectorAll('input, textarea, select')[i]; \
     if (!c) { return false; } BODY; return true; }";

async fn on_control(
    page: &PageSession,
    form: &str,
    index: usize,
    body: &str,
    value: &str,
) -> Result<Value, CdpError> {
    page.call_on(
        form,
        &ON_CONTROL.replace("BODY", body),
        &[json!(index), json!(value)],
    )
    .await
}

/// Tells the page's scripts a value changed, as typing would.
const EVENTS: &str = "c.dispatchEvent(new Event('input', {bubbles: true})); \
     c.dispatchEvent(new Event('change', {bubbles: true}))";

/// Puts `value` into one control as a user would; hidden or unreachable ones by script.
async fn fill(
    page: &PageSession,
    form: &str,
    kind: &str,
    control: &Control<'_>,
    value: &str,
) -> Result<(), CdpError> {
    let index = control.index;
    match kind {
        // Never uploads a file, and buttons are not values.
        "file" | "submit" | "button" | "image" | "reset" => Ok(()),
        "checkbox" => {
            if control.checked != truthy(value) {
                let body = format!(
                    "c.click(); if (c.checked !== {0}) {{ c.checked = {0}; {EVENTS}; }}",
                    truthy(value)
                );
                on_control(page, form, index, &body, value).await?;
            }
            Ok(())
        }
        "radio" => {
            if control.value == value && !control.checked {
                let body = format!("c.click(); if (!c.checked) {{ c.checked = true; {EVENTS}; }}");
                on_control(page, form, index, &body, value).await?;
            }
            Ok(())
        }
        "select" => {
            let body = format!(
                "const o = Array.from(c.options).find(o => o.value === v) || \
                 Array.from(c.options).find(o => o.text.trim() === v.trim()); \
                 c.value = o ? o.value : v; {EVENTS}"
            );
            on_control(page, form, index, &body, value).await?;
            Ok(())
        }
        "hidden" => {
            on_control(page, form, index, &format!("c.value = v; {EVENTS}"), value).await?;
            Ok(())
        }
        _ => {
            // Focused and emptied, then typed: the page sees keyboard input.
            let focused = on_control(
                page,
                form,
                index,
                "c.focus(); if (document.activeElement !== c || c.readOnly || c.disabled) { return false; } \
                 c.value = ''; c.dispatchEvent(new Event('input', {bubbles: true}))",
                value,
            )
            .await?;
            let typed = focused.as_bool() == Some(true)
                && page
                    .call("Input.insertText", json!({"text": value}))
                    .await
                    .is_ok();
            let landed = typed
                && on_control(
                    page,
                    form,
                    index,
                    "if (c.value !== v) { return false; }",
                    value,
                )
                .await?
                .as_bool()
                    == Some(true);
            if !landed {
                on_control(page, form, index, &format!("c.value = v; {EVENTS}"), value).await?;
            }
            Ok(())
        }
    }
}

/// Where the form's first visible submit button is, scrolled into view (`null`: none).
const SUBMIT_BUTTON: &str = "function() { \
     const buttons = this.querySelectorAll('button[type=submit], button:not([type]), input[type=submit], input[type=image]'); \
     for (const b of buttons) { const r = b.getBoundingClientRect(); \
       if (r.width > 0 && r.height > 0 && getComputedStyle(b).visibility !== 'hidden' && !b.disabled) { \
         b.scrollIntoView({block: 'center'}); const s = b.getBoundingClientRect(); \
         return [s.x + s.width / 2, s.y + s.height / 2]; } } \
     return null; }";

/// Submits the form: a mouse click on its own submit button, else `requestSubmit()`.
async fn submit(page: &PageSession, form: &str) -> Result<(), CdpError> {
    let at = page.call_on(form, SUBMIT_BUTTON, &[]).await?;
    if let (Some(x), Some(y)) = (at[0].as_f64(), at[1].as_f64()) {
        for kind in ["mousePressed", "mouseReleased"] {
            page.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await?;
        }
        return Ok(());
    }
    page.call_on(
        form,
        "function() { if (this.requestSubmit) { this.requestSubmit(); } else { this.submit(); } }",
        &[],
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, value: &str) -> WebField {
        WebField {
            name: name.into(),
            value: value.into(),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_form_naming_most_fields_is_chosen() {
        let forms = vec![
            names(&["q"]),
            names(&["csrf", "username", "password", "remember"]),
        ];
        let choice = choose(&forms, &[field("user", "alice"), field("Password", "x")]);
        assert_eq!(
            choice,
            Some(Choice {
                form: 1,
                assignments: vec![
                    ("username".into(), "alice".into()),
                    ("password".into(), "x".into())
                ],
            })
        );
    }

    #[test]
    fn an_exact_name_beats_a_contained_one() {
        let forms = vec![names(&["username", "user"])];
        let choice = choose(&forms, &[field("user", "a")]);
        assert_eq!(
            choice.map(|c| c.assignments),
            Some(vec![("user".into(), "a".into())])
        );
    }

    #[test]
    fn no_form_is_chosen_when_no_name_matches() {
        assert_eq!(choose(&[names(&["q"])], &[field("email", "a")]), None);
        assert_eq!(choose(&[], &[field("email", "a")]), None);
        assert_eq!(choose(&[names(&["q"])], &[field("", "a")]), None);
    }

    #[test]
    fn only_true_ish_values_tick_a_box() {
        for yes in ["checked", "TRUE", "on", "yes", "1", " yes "] {
            assert!(truthy(yes), "{yes}");
        }
        for no in ["", "0", "false", "off", "no", "maybe"] {
            assert!(!truthy(no), "{no}");
        }
    }
}
