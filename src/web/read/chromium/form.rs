//! Filling and submitting a form in Chromium: which of the page's forms the model's fields
//! name (by name: exact, case-insensitive, then contained), typing each value into its field
//! through WebDriver, and submitting through the form's own submit button (else
//! `requestSubmit()`), so the page's scripts see what a user would do.
//!
//! It must not read the page that follows (the reader does) nor tick boxes it was not told to.

use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

use crate::wire::WebField;

/// The named fields of every form of the page, in `document.forms` order.
const LIST_FORMS: &str = "return Array.from(document.forms).map(f => \
     Array.from(f.elements).filter(e => e.name).map(e => e.name));";

/// The form chosen for the model's fields, and which field each given value goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Index in `document.forms`.
    pub form: usize,
    /// `(field name in the form, value)`.
    pub assignments: Vec<(String, String)>,
}

/// Lists the forms' field names.
pub async fn list_forms(client: &Client) -> Result<Vec<Vec<String>>, CmdError> {
    let value = client.execute(LIST_FORMS, vec![]).await?;
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
pub fn truthy(value: &str) -> bool {
    ["checked", "true", "on", "yes", "1"]
        .iter()
        .any(|t| value.trim().eq_ignore_ascii_case(t))
}

/// Types the chosen values into the form and submits it.
pub async fn fill_and_submit(client: &Client, choice: &Choice) -> Result<(), CmdError> {
    let form = client
        .find(Locator::XPath(&format!("(//form)[{}]", choice.form + 1)))
        .await?;
    let controls = form
        .find_all(Locator::Css("input, textarea, select"))
        .await?;
    for control in &controls {
        let Some(name) = control.attr("name").await? else {
            continue;
        };
        // The last value given for a field wins, as in a query string.
        let Some((_, value)) = choice.assignments.iter().rev().find(|(n, _)| *n == name) else {
            continue;
        };
        fill(client, control, value).await?;
    }
    let buttons = form
        .find_all(Locator::Css(
            "button[type=submit], button:not([type]), input[type=submit], input[type=image]",
        ))
        .await?;
    for button in &buttons {
        if button.is_displayed().await.unwrap_or(false) && button.click().await.is_ok() {
            return Ok(());
        }
    }
    client
        .execute(
            "const f = arguments[0]; if (f.requestSubmit) { f.requestSubmit(); } else { f.submit(); }",
            vec![json!(form)],
        )
        .await?;
    Ok(())
}

/// Puts `value` into one control as a user would; hidden or unreachable ones by script.
async fn fill(client: &Client, control: &Element, value: &str) -> Result<(), CmdError> {
    let tag = control.tag_name().await?.to_ascii_lowercase();
    let kind = match control.attr("type").await? {
        Some(kind) if tag == "input" => kind.to_ascii_lowercase(),
        _ => tag.clone(),
    };
    match kind.as_str() {
        // Never uploads a file, and buttons are not values.
        "file" | "submit" | "button" | "image" | "reset" => Ok(()),
        "checkbox" => {
            if control.is_selected().await? != truthy(value) && control.click().await.is_err() {
                set_by_script(client, control, "checked", json!(truthy(value))).await?;
            }
            Ok(())
        }
        "radio" => {
            let mine = control.attr("value").await?.unwrap_or_else(|| "on".into());
            if mine == value && !control.is_selected().await? && control.click().await.is_err() {
                set_by_script(client, control, "checked", json!(true)).await?;
            }
            Ok(())
        }
        "select" => {
            if control.select_by_value(value).await.is_err()
                && control.select_by_label(value).await.is_err()
            {
                set_by_script(client, control, "value", json!(value)).await?;
            }
            Ok(())
        }
        "hidden" => set_by_script(client, control, "value", json!(value)).await,
        _ => {
            let typed = async {
                control.clear().await?;
                control.send_keys(value).await
            };
            if typed.await.is_err() {
                set_by_script(client, control, "value", json!(value)).await?;
            }
            Ok(())
        }
    }
}

/// Sets a property and tells the page's scripts, as typing would.
async fn set_by_script(
    client: &Client,
    control: &Element,
    property: &str,
    value: Value,
) -> Result<(), CmdError> {
    client
        .execute(
            "const e = arguments[0]; e[arguments[1]] = arguments[2]; \
             e.dispatchEvent(new Event('input', {bubbles: true})); \
             e.dispatchEvent(new Event('change', {bubbles: true}));",
            vec![json!(control), json!(property), value],
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
