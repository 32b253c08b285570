//! The settings table's own checks: every key documented and named once, variables named as
//! seek names them, every key in `seek config`, and refusals that say what is accepted.

use std::collections::HashSet;

use super::*;
use crate::config::setting;
use crate::config::{Config, Dirs, Env, Overrides};

#[test]
fn every_key_has_a_doc_and_unique_names() {
    let mut names = HashSet::new();
    let mut vars = HashSet::new();
    let mut flags = HashSet::new();
    for row in rows() {
        assert!(!row.doc().is_empty(), "{} has no doc", row.name());
        assert!(!row.doc().contains('\n'), "{}: one line", row.name());
        assert!(names.insert(row.name()), "{} twice", row.name());
        for var in row.env() {
            assert!(vars.insert(*var), "{var} twice");
        }
        if let Some(flag) = row.flag() {
            assert!(flag.starts_with("--"), "{flag}");
            assert!(flags.insert(flag), "{flag} twice");
        }
        assert!(!row.default_text().is_empty(), "{}", row.name());
    }
    assert_eq!(names.len(), 47, "a key added or lost: {names:?}");
}

/// Variables that are not SEEK_: names other programs (or AgenticSeek) gave them, each said in
/// the key's doc or in docs/configuration.md.
const FOREIGN_VARIABLES: [&str; 2] = ["WORK_DIR", "SEARXNG_BASE_URL"];

#[test]
fn every_variable_starts_with_seek_or_is_a_known_other_name() {
    for row in rows() {
        for var in row.env() {
            assert!(
                var.starts_with("SEEK_") || FOREIGN_VARIABLES.contains(var),
                "{}: {var}",
                row.name()
            );
        }
    }
}

#[test]
fn every_key_the_file_takes_is_in_the_table() {
    // serde lists a struct's fields when one is unknown: the file's keys are the table's.
    let mut table: Vec<&str> = rows().map(|r| r.name()).collect();
    table.sort_unstable();
    for (section, text) in [
        ("", "nope = 1\n"),
        ("exec.", "[exec]\nnope = 1\n"),
        ("local.", "[local]\nnope = 1\n"),
        ("tui.", "[tui]\nnope = 1\n"),
        ("web.", "[web]\nnope = 1\n"),
        ("serve.", "[serve]\nnope = 1\n"),
    ] {
        let err = toml::from_str::<FileConfig>(text)
            .expect_err(text)
            .to_string();
        let listed = err.split("`nope`, expected").nth(1).expect("a list");
        let listed = listed
            .lines()
            .next()
            .unwrap_or_default()
            .replace(" or ", ",");
        assert!(listed.contains('`'), "{section}: {err}");
        for field in listed.split(',') {
            let field = field
                .trim()
                .trim_start_matches("one of")
                .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            if [
                "exec",
                "tools",
                "local",
                "tui",
                "web",
                "serve",
                "mcp_servers",
            ]
            .contains(&field)
                && section.is_empty()
            {
                continue;
            }
            let name = format!("{section}{field}");
            assert!(
                table.binary_search(&name.as_str()).is_ok(),
                "{name} is not in the table"
            );
        }
    }
}

#[test]
fn whole_number_bounds_of_u32_keys_fit() {
    for key in [&MAX_ATTEMPTS, &MAX_ROUNDS] {
        let setting::Bounds::Whole(_, max) = key.bounds else {
            panic!("{} has no bounds", key.name);
        };
        assert!(u32::try_from(max).is_ok(), "{}", key.name);
    }
}

#[test]
fn every_key_is_in_seek_config() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        "provider = \"ollama\"\nmodel = \"m\"\napi_key_env = \"K\"\ntemperature = 1\ntop_p = 1\nseed = 1\n\
         [local]\nthreads = 2\nmirror = \"http://m/\"\n[web]\nsearxng_url = \"http://s\"\nchromium = \"c\"\nchromedriver = \"d\"\n",
    )
    .expect("write");
    let dirs = Dirs {
        default_config_file: Some(file),
        data_dir: dir.path().join("data"),
    };
    let config = Config::resolve(&Overrides::default(), &Env::default(), &dirs, dir.path())
        .expect("resolves");
    let shown = crate::config::render(&config, &Env::default());
    for section in &SECTIONS {
        let part = match section.header {
            Some(header) => {
                let start = shown.find(&format!("\n[{header}]\n")).expect(header);
                &shown[start..]
            }
            None => shown.as_str(),
        };
        for row in section.rows {
            let leaf = row.name().rsplit('.').next().unwrap_or_default();
            assert!(
                part.contains(&format!("\n{leaf} = ")) || part.contains(&format!("# {leaf}")),
                "{} is not shown:\n{shown}",
                row.name()
            );
        }
    }
}

#[test]
fn a_bad_choice_names_origin_key_value_and_the_words_accepted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dirs = Dirs {
        default_config_file: Some(dir.path().join("config.toml")),
        data_dir: dir.path().join("data"),
    };
    let env = Env::from_pairs([("SEEK_SANDBOX", "Strict")]);
    let err = Config::resolve(&Overrides::default(), &env, &dirs, dir.path())
        .expect_err("refused")
        .to_string();
    assert_eq!(
        err,
        "env SEEK_SANDBOX: sandbox = \"Strict\": expected one of: workspace-write, read-only, off"
    );
    std::fs::write(
        dir.path().join("config.toml"),
        "[web]\nbrowser = \"firefox\"\n",
    )
    .expect("write");
    let err = Config::resolve(&Overrides::default(), &Env::default(), &dirs, dir.path())
        .expect_err("refused")
        .to_string();
    assert!(
        err.ends_with(
            "config.toml:2: web.browser = \"firefox\": expected one of: auto, http, chromium"
        ),
        "aliases are accepted, not listed: {err}"
    );
}

#[test]
fn choices_read_their_words_in_any_case_and_aliases() {
    use crate::config::{BrowserChoice, ModelSize, Notify, SandboxMode};
    use setting::parse_choice;
    assert_eq!(
        parse_choice::<BrowserChoice>(" Chrome "),
        Ok(BrowserChoice::Chromium)
    );
    assert_eq!(parse_choice::<Notify>("OSC9"), Ok(Notify::Osc9));
    assert_eq!(
        parse_choice::<SandboxMode>("READ-ONLY"),
        Ok(SandboxMode::ReadOnly)
    );
    assert_eq!(parse_choice::<ModelSize>("large"), Ok(ModelSize::Large));
    // The word shown is the word read.
    for mode in [
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
        SandboxMode::Off,
    ] {
        assert_eq!(parse_choice::<SandboxMode>(mode.as_str()), Ok(mode));
    }
    for notify in [Notify::Auto, Notify::Bell, Notify::Osc9, Notify::Off] {
        assert_eq!(parse_choice::<Notify>(notify.as_str()), Ok(notify));
    }
    for browser in [
        BrowserChoice::Auto,
        BrowserChoice::Http,
        BrowserChoice::Chromium,
    ] {
        assert_eq!(parse_choice::<BrowserChoice>(browser.as_str()), Ok(browser));
    }
    for size in [ModelSize::Auto, ModelSize::Small, ModelSize::Large] {
        assert_eq!(parse_choice::<ModelSize>(size.as_str()), Ok(size));
    }
}

/// A typed section's `Default` is the section read with nothing set: it cannot fail, and it is
/// what a resolution with no file, variable or flag gives.
#[test]
fn typed_sections_default_to_what_nothing_resolves_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = super::super::tests::resolve_in(dir.path(), None, &[]).expect("defaults");
    assert_eq!(config.tui, TuiSettings::default());
    assert_eq!(config.web, WebSettings::default());
    assert_eq!(config.serve, ServeSettings::default());
    assert_eq!(config.model_settings, ModelSettings::default());
    let local = LocalSettings::default();
    assert!(local.mirrors.value.is_empty() && !local.offline.value && local.threads.is_none());
    assert_eq!(
        ServeSettings::default().allowed_origins.value,
        vec![crate::config::DEFAULT_ALLOWED_ORIGIN.to_owned()]
    );
}

/// `max_retries` is declared after `reply_timeout_secs` and `stream_max_line_mib` (the file's
/// order) but was always read before them: a refused `max_retries` is still the error reported.
#[test]
fn a_refused_max_retries_is_reported_before_the_keys_declared_before_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = "max_retries = 99\nreply_timeout_secs = 0\nstream_max_line_mib = 0\n";
    let refused = super::super::tests::resolve_in(dir.path(), Some(file), &[])
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("max_retries"), "{refused}");
    let file = "connect_timeout_secs = 0\nmax_retries = 99\n";
    let refused = super::super::tests::resolve_in(dir.path(), Some(file), &[])
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("connect_timeout_secs"), "{refused}");
}

/// `Safety` is generated with `[exec]`'s keys but reads `sandbox`, `approval` and `safe_mode`
/// first, as before (refused values, not the file's wrong types, which parsing reports); `exec.output_limit_bytes` (in `Config`) is read before all of them.
#[test]
fn safety_reads_its_top_level_keys_before_its_exec_keys() {
    let dir = tempfile::tempdir().expect("temp dir");
    let refused = |file: &str| {
        super::super::tests::resolve_in(dir.path(), Some(file), &[])
            .expect_err("refused")
            .to_string()
    };
    let bad_sandbox = "sandbox = \"nope\"\n[exec]\nmax_processes = -1\n";
    assert!(
        refused(bad_sandbox).contains("sandbox"),
        "{}",
        refused(bad_sandbox)
    );
    let bad_output = "sandbox = \"nope\"\n[exec]\noutput_limit_bytes = 1\n";
    assert!(refused(bad_output).contains("output_limit_bytes"));
    let config = super::super::tests::resolve_in(dir.path(), Some(""), &[]).expect("defaults");
    let defaults = Safety::default();
    assert_eq!(config.safety.sandbox, defaults.sandbox);
    assert_eq!(config.safety.approval, defaults.approval);
    assert_eq!(config.safety.max_processes, defaults.max_processes);
}
