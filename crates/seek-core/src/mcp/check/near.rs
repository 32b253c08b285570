//! Which known names a misspelled one probably meant (`tz` → `timezone`, `get_time` →
//! `get_current_time`), for the "did you mean" part of an error.
//!
//! Pure and bounded: names are compared on their first `MAX_COMPARED_CHARS` characters only, so a
//! hostile name costs no more than a short one. It must not decide what is an error.

/// Characters of each name the comparisons look at.
const MAX_COMPARED_CHARS: usize = 64;
/// Candidates compared at most (the first ones), so a hostile list costs little.
const MAX_CANDIDATES: usize = 2_000;

/// How close a candidate is; lower is closer. Candidates that are not close at all get none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Closeness {
    SameIgnoringCase,
    /// A few edits away (the count).
    Edits(usize),
    /// One is the other's abbreviation (`tz` and `timezone`) or contains it.
    Abbreviation,
    /// They share a word (`time` in `get_time` and `time_now`); more shared words rank first.
    SharedWords(std::cmp::Reverse<usize>),
}

/// The candidates close to `name`, closest first (ties keep the candidates' order), at most
/// `max` of them.
pub(in crate::mcp) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let name: String = name.chars().take(MAX_COMPARED_CHARS).collect();
    let mut ranked: Vec<(Closeness, usize, &str)> = candidates
        .into_iter()
        .take(MAX_CANDIDATES)
        .enumerate()
        .filter_map(|(order, candidate)| {
            closeness(&name, candidate).map(|rank| (rank, order, candidate))
        })
        .collect();
    ranked.sort();
    ranked
        .into_iter()
        .take(max)
        .map(|(_, _, candidate)| candidate)
        .collect()
}

fn closeness(name: &str, candidate: &str) -> Option<Closeness> {
    let candidate: String = candidate.chars().take(MAX_COMPARED_CHARS).collect();
    let (a, b) = (name.to_lowercase(), candidate.to_lowercase());
    if a.is_empty() || b.is_empty() {
        return None;
    }
    if a == b {
        return Some(Closeness::SameIgnoringCase);
    }
    let edits = edit_distance(&a, &b);
    let shorter = a.chars().count().min(b.chars().count());
    if edits <= (shorter / 3).max(1) {
        return Some(Closeness::Edits(edits));
    }
    if a.contains(&b) || b.contains(&a) || abbreviates(&a, &b) || abbreviates(&b, &a) {
        return Some(Closeness::Abbreviation);
    }
    let (words_a, words_b) = (words(name), words(&candidate));
    let shared = words_a.iter().filter(|w| words_b.contains(w)).count();
    (shared > 0).then_some(Closeness::SharedWords(std::cmp::Reverse(shared)))
}

/// Whether `short` (at least two letters) is an abbreviation of `long`: same first letter, and
/// its letters appear in `long` in order (`tz` in `timezone`, `msg` in `message`).
fn abbreviates(short: &str, long: &str) -> bool {
    let mut short_chars = short.chars().filter(|c| c.is_alphanumeric());
    let (Some(first), true) = (short_chars.next(), short.chars().count() >= 2) else {
        return false;
    };
    let mut long_chars = long.chars().filter(|c| c.is_alphanumeric());
    if long_chars.next() != Some(first) {
        return false;
    }
    short_chars.all(|wanted| long_chars.any(|c| c == wanted))
}

/// The lowercase words of a name: split at non-alphanumerics and at lower-to-upper case changes
/// (`getCurrentTime`, `get-current_time` → `get`, `current`, `time`); words of one letter are
/// left out.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || (c.is_uppercase() && previous_lower);
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.retain(|w| w.chars().count() > 1);
    words
}

/// Levenshtein distance in characters (both inputs are already cut short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abbreviation_finds_the_full_name() {
        assert_eq!(closest("tz", ["dst", "timezone"], 3), ["timezone"]);
        assert_eq!(closest("msg", ["message", "count"], 3), ["message"]);
    }

    #[test]
    fn a_typo_ranks_before_a_shared_word() {
        let names = ["time_now", "get_curent_time", "get_current_time"];
        assert_eq!(
            closest("get_current_tme", names, 2),
            ["get_current_time", "get_curent_time"]
        );
        assert_eq!(closest("get_time", ["time_now", "echo"], 3), ["time_now"]);
    }

    #[test]
    fn unrelated_names_are_not_suggested() {
        assert!(closest("weather", ["echo", "get-sum", "get-env"], 3).is_empty());
        assert!(closest("", ["echo"], 3).is_empty());
    }

    #[test]
    fn case_and_separators_do_not_hide_a_name() {
        assert_eq!(closest("GetSum", ["get-sum", "echo"], 3), ["get-sum"]);
        assert_eq!(closest("ECHO", ["echo"], 3), ["echo"]);
    }

    #[test]
    fn distances_are_counted_in_characters() {
        assert_eq!(edit_distance("zeit", "zeït"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn a_huge_name_is_compared_on_its_start_only() {
        let huge = "a".repeat(1_000_000);
        assert!(closest(&huge, ["b"], 3).is_empty());
    }
}
