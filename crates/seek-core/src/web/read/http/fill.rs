//! Filling a form as the model asked: which of the page's forms it means (the one whose field
//! names match the given names best: exact and case-insensitive first, then contained, as
//! AgenticSeek matched inputs), and the name/value pairs a browser would send.
//!
//! Pure; it must not send anything.

use crate::web::read::{Form, FormField};
use crate::wire::WebField;

/// Values that tick a checkbox or radio.
const TRUTHY: &[&str] = &["checked", "true", "on", "yes", "1", "x"];

/// The index of the form in `forms` that best matches the names in `given`, if any matches.
pub(super) fn pick_form(forms: &[Form], given: &[WebField]) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (index, form) in forms.iter().enumerate() {
        let score: usize = given
            .iter()
            .map(|g| match match_field(&form.fields, &g.name) {
                Some((_, true)) => 2,
                Some((_, false)) => 1,
                None => 0,
            })
            .sum();
        if score > 0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((index, score));
        }
    }
    best.map(|(index, _)| index)
}

/// The field of `fields` that `name` means, and whether the match is exact.
fn match_field(fields: &[FormField], name: &str) -> Option<(usize, bool)> {
    let wanted = name.trim().to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    if let Some(i) = fields.iter().position(|f| f.name.to_lowercase() == wanted) {
        return Some((i, true));
    }
    fields
        .iter()
        .position(|f| {
            let have = f.name.to_lowercase();
            have.contains(&wanted) || wanted.contains(&have)
        })
        .map(|i| (i, false))
}

/// The pairs a browser would send for `form` filled with `given`: other fields keep their
/// values (hidden ones included), checkboxes are sent only when named with a true-ish value,
/// radios when named with their value (or true-ish) or checked by default, the first submit
/// button (or the one named) as the button pressed.
pub(super) fn pairs(form: &Form, given: &[WebField]) -> Vec<(String, String)> {
    let mut assigned: Vec<Option<&str>> = vec![None; form.fields.len()];
    for g in given {
        // A radio group shares one name: the given value picks the member.
        let radio = form.fields.iter().position(|f| {
            f.kind == "radio"
                && f.name.eq_ignore_ascii_case(g.name.trim())
                && f.value.eq_ignore_ascii_case(g.value.trim())
        });
        if let Some(i) = radio.or_else(|| match_field(&form.fields, &g.name).map(|(i, _)| i)) {
            assigned[i] = Some(g.value.as_str());
        }
    }
    let named_submit = form
        .fields
        .iter()
        .enumerate()
        .position(|(i, f)| f.kind == "submit" && assigned[i].is_some());
    let chosen_submit =
        named_submit.or_else(|| form.fields.iter().position(|f| f.kind == "submit"));
    let radio_named: Vec<String> = form
        .fields
        .iter()
        .zip(&assigned)
        .filter(|(f, a)| f.kind == "radio" && a.is_some())
        .map(|(f, _)| f.name.to_lowercase())
        .collect();
    let mut out = Vec::new();
    for (i, field) in form.fields.iter().enumerate() {
        let value = assigned[i];
        match field.kind.as_str() {
            "checkbox" => {
                if value.is_some_and(truthy) {
                    out.push((field.name.clone(), field.value.clone()));
                }
            }
            "radio" => {
                let on = match value {
                    Some(v) => truthy(v) || v.trim().eq_ignore_ascii_case(&field.value),
                    None => field.checked && !radio_named.contains(&field.name.to_lowercase()),
                };
                if on {
                    out.push((field.name.clone(), field.value.clone()));
                }
            }
            "submit" | "image" => {
                if chosen_submit == Some(i) {
                    out.push((field.name.clone(), field.value.clone()));
                }
            }
            "reset" | "button" | "file" => {}
            _ => out.push((
                field.name.clone(),
                value.map_or_else(|| field.value.clone(), str::to_owned),
            )),
        }
    }
    out
}

fn truthy(value: &str) -> bool {
    let value = value.trim();
    TRUTHY.iter().any(|t| value.eq_ignore_ascii_case(t))
}

/// The field names of every form, for the error that says none matched.
pub(super) fn available(forms: &[Form]) -> String {
    let names: Vec<&str> = forms
        .iter()
        .flat_map(|f| f.fields.iter())
        .filter(|f| !matches!(f.kind.as_str(), "hidden" | "submit"))
        .map(|f| f.name.as_str())
        .collect();
    if forms.is_empty() {
        "none (the page has no form)".to_owned()
    } else if names.is_empty() {
        "none (its forms have no named fields)".to_owned()
    } else {
        names.join(", ")
    }
}
