//! The forms of a page: where each goes (absolute action, the page itself when it names none),
//! its method (get or post) and its named fields with their current values: inputs of every
//! type, selects with their options and the selected one, textareas, named buttons.
//!
//! Pure; it must not fill or submit anything (the readers do).

use reqwest::Url;
use scraper::{ElementRef, Html};

use super::clean::is_invisible_control;
use crate::web::read::{Form, FormField};

/// The forms of `doc`; actions resolve against `base`, a missing or empty one is `page`.
pub(crate) fn forms(doc: &Html, base: &Url, page: &Url) -> Vec<Form> {
    doc.root_element()
        .descendent_elements()
        .filter(|e| is(e, "form"))
        .map(|form| read_form(form, base, page))
        .collect()
}

fn is(element: &ElementRef<'_>, name: &str) -> bool {
    element.value().name().eq_ignore_ascii_case(name)
}

fn read_form(form: ElementRef<'_>, base: &Url, page: &Url) -> Form {
    let action = match form.attr("action").map(str::trim) {
        Some(action) if !action.is_empty() => base
            .join(action)
            .map(|mut url| {
                url.set_fragment(None);
                url.to_string()
            })
            .unwrap_or_else(|_| page.to_string()),
        _ => page.to_string(),
    };
    let method = match form.attr("method") {
        Some(m) if m.trim().eq_ignore_ascii_case("post") => "post",
        _ => "get",
    };
    let fields = form.descendent_elements().filter_map(field).collect();
    Form {
        action,
        method: method.to_owned(),
        fields,
    }
}

/// The field `element` is, when it is a named form control.
fn field(element: ElementRef<'_>) -> Option<FormField> {
    let name = element.attr("name")?.to_owned();
    // A name is sent back as it is, so it cannot be cleaned: one with control or bidi
    // characters (no real form has them) is not listed at all.
    if name.is_empty()
        || name
            .chars()
            .any(|c| c.is_control() || is_invisible_control(c))
    {
        return None;
    }
    let field = read_field(element, name)?;
    Some(FormField {
        value: clean_value(&field.value),
        options: field.options.iter().map(|o| clean_value(o)).collect(),
        ..field
    })
}

/// A value without control or bidi characters (a textarea's line breaks kept).
fn clean_value(value: &str) -> String {
    value
        .chars()
        .filter(|c| !is_invisible_control(*c))
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect()
}

fn read_field(element: ElementRef<'_>, name: String) -> Option<FormField> {
    let required = element.attr("required").is_some();
    let field = if is(&element, "input") {
        let kind = element
            .attr("type")
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "text".to_owned());
        let value = match element.attr("value") {
            Some(value) => value.to_owned(),
            // What a browser sends for a ticked checkbox or radio without a value.
            None if kind == "checkbox" || kind == "radio" => "on".to_owned(),
            None => String::new(),
        };
        FormField {
            name,
            checked: element.attr("checked").is_some(),
            kind,
            value,
            options: Vec::new(),
            required,
        }
    } else if is(&element, "select") {
        let mut options = Vec::new();
        let mut selected = None;
        for option in element.descendent_elements().filter(|e| is(e, "option")) {
            let value = option
                .attr("value")
                .map(str::to_owned)
                .unwrap_or_else(|| option.text().collect::<String>().trim().to_owned());
            if selected.is_none() && option.attr("selected").is_some() {
                selected = Some(value.clone());
            }
            options.push(value);
        }
        let value = selected
            .or_else(|| options.first().cloned())
            .unwrap_or_default();
        FormField {
            name,
            kind: "select".to_owned(),
            value,
            options,
            checked: false,
            required,
        }
    } else if is(&element, "textarea") {
        FormField {
            name,
            kind: "textarea".to_owned(),
            value: element.text().collect(),
            options: Vec::new(),
            checked: false,
            required,
        }
    } else if is(&element, "button") {
        let kind = element
            .attr("type")
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "submit".to_owned());
        if kind != "submit" {
            return None;
        }
        FormField {
            name,
            kind,
            value: element.attr("value").unwrap_or_default().to_owned(),
            options: Vec::new(),
            checked: false,
            required,
        }
    } else {
        return None;
    };
    Some(field)
}
