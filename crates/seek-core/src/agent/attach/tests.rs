//! The attachment rules' cases: mentions, links out of the work dir, bounds, secrets, and the
//! context handed along that never attaches.

use super::*;

fn no_secrets() -> Masker {
    Masker::new(Vec::<String>::new())
}

fn attach_in(dir: &Path, prompt: &str, bound: usize) -> Attached {
    let roots = Roots {
        work_dir: dir,
        home: Some(dir),
    };
    attach(prompt, None, &roots, bound, &no_secrets())
}

#[test]
fn mentions_start_at_a_word_and_end_at_a_space() {
    assert_eq!(
        mentions("look at @src/main.rs and (@b.txt) but not me@example.com"),
        ["src/main.rs", "b.txt)"]
    );
    assert_eq!(mentions("@\"my notes.md\" please"), ["my notes.md"]);
    assert_eq!(mentions("@\"unclosed name"), Vec::<String>::new());
    assert_eq!(mentions("@ alone, @@x"), ["@x"]);
    assert_eq!(mentions("ünïcödé @é.txt"), ["é.txt"]);
}

#[test]
fn a_named_file_is_attached_after_the_prompt_and_the_rest_left_as_typed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.md"), "line one\n").expect("write");
    let prompt = "summarise @notes.md. @property stays, mail me@x.org";
    let attached = attach_in(dir.path(), prompt, MAX_ATTACHED_BYTES);
    assert!(attached.message.starts_with(prompt), "{}", attached.message);
    assert!(
        attached
            .message
            .ends_with("Attached file `notes.md`:\n```\nline one\n```"),
        "{}",
        attached.message
    );
    assert_eq!(
        attached.files,
        [Attachment {
            path: "notes.md".into(),
            bytes: 9,
            truncated: false
        }]
    );
    assert!(attached.refused.is_empty());
}

#[test]
fn the_bound_holds_over_all_files_and_cuts_at_a_character() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a"), "é".repeat(100)).expect("write");
    std::fs::write(dir.path().join("b"), "b".repeat(100)).expect("write");
    std::fs::write(dir.path().join("c"), "c").expect("write");
    let attached = attach_in(dir.path(), "@a @b @c", 151);
    assert_eq!(attached.files[0].bytes, 150, "75 whole characters");
    assert!(attached.files[0].truncated);
    assert!(attached.message.contains("only its first 150 of 200 bytes"));
    assert_eq!(attached.files[1].bytes, 1);
    assert_eq!(attached.files.len(), 2, "{:?}", attached.files);
    assert!(attached.refused[0].starts_with("c: not attached"));
    let total: u64 = attached.files.iter().map(|f| f.bytes).sum();
    assert!(total <= 151);
}

#[test]
fn binary_files_directories_and_devices_are_refused_with_a_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("x.bin"), b"ELF\0\x01\x02").expect("write");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let attached = attach_in(dir.path(), "@x.bin @sub @/dev/null @/dev/zero", 1000);
    assert!(attached.files.is_empty(), "{:?}", attached.files);
    assert_eq!(attached.refused.len(), 4, "{:?}", attached.refused);
    assert!(
        attached
            .message
            .contains("x.bin: a binary file, not attached")
    );
    assert!(attached.message.contains("sub: a directory"));
    assert!(attached.message.contains("/dev/zero: not a regular file"));
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    std::os::unix::fs::symlink(&fifo, dir.path().join("link")).expect("symlink");
    let attached = attach_in(dir.path(), "@pipe @link", 1000);
    assert!(attached.files.is_empty());
    assert_eq!(
        attached.refused.len(),
        1,
        "one target: {:?}",
        attached.refused
    );
    // Even opened directly (as after a swap), a FIFO read returns at once.
    assert!(read_bounded(&fifo, 10).is_err());
}

#[test]
fn a_symlink_to_a_regular_file_and_home_paths_are_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("real.txt"), "real").expect("write");
    std::fs::write(dir.path().join("home.txt"), "home").expect("write");
    std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("ln"))
        .expect("symlink");
    let attached = attach_in(dir.path(), "@ln @~/home.txt @real.txt", 1000);
    assert_eq!(
        attached.files.len(),
        2,
        "the link's target once: {attached:?}"
    );
    assert_eq!(attached.files[0].path, "ln");
    assert_eq!(attached.files[1].path, "~/home.txt");
}

#[test]
fn what_was_opened_is_checked_not_what_the_name_led_to_before() {
    // A name swapped for a link after the check: the opened file's real place decides.
    let outside = tempfile::tempdir().expect("outside");
    let work = tempfile::tempdir().expect("work");
    let key = outside.path().join("id_ed25519");
    std::fs::write(&key, "PRIVATE KEY").expect("write");
    std::os::unix::fs::symlink(&key, work.path().join("notes.md")).expect("symlink");
    let read = read_bounded(&work.path().join("notes.md"), 100).expect("read");
    let work_dir = std::fs::canonicalize(work.path()).expect("canonical");
    assert_eq!(
        read.opened.as_deref(),
        Some(std::fs::canonicalize(&key).expect("canonical").as_path())
    );
    assert!(leads_out_by_a_link(
        "notes.md",
        read.opened.as_deref(),
        Some(&work_dir)
    ));
}

#[test]
fn a_planted_link_out_of_the_work_dir_is_not_followed_for_a_relative_name() {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    std::fs::create_dir(home.path().join(".ssh")).expect("mkdir");
    let key = home.path().join(".ssh/id_ed25519");
    std::fs::write(&key, "PRIVATE KEY").expect("write");
    // A cloned repository can hold a link named like an ordinary file, or a linked dir.
    std::os::unix::fs::symlink(&key, work.path().join("notes.md")).expect("symlink");
    std::os::unix::fs::symlink(home.path().join(".ssh"), work.path().join("docs"))
        .expect("symlink");
    std::fs::write(work.path().join("inside.txt"), "inside").expect("write");
    std::os::unix::fs::symlink("inside.txt", work.path().join("alias.txt")).expect("ln");
    let roots = Roots {
        work_dir: work.path(),
        home: Some(home.path()),
    };
    let attached = attach(
        "read @notes.md @docs/id_ed25519 @../x @alias.txt",
        None,
        &roots,
        1000,
        &no_secrets(),
    );
    assert!(!attached.message.contains("PRIVATE KEY"), "{attached:?}");
    assert_eq!(attached.files.len(), 1, "{attached:?}");
    assert_eq!(attached.files[0].path, "alias.txt");
    assert!(
        attached
            .refused
            .iter()
            .any(|r| r.starts_with("notes.md: ") && r.contains("outside the work dir")),
        "{:?}",
        attached.refused
    );
    // Named by its own path, the user's file is attached: the user chose it.
    let attached = attach("@~/.ssh/id_ed25519", None, &roots, 1000, &no_secrets());
    assert_eq!(attached.files.len(), 1, "{attached:?}");
}

#[test]
fn a_prompt_of_many_thousand_mentions_costs_a_bounded_number_of_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("f"), "x").expect("write");
    let mut prompt: String = (0..50_000).map(|i| format!("@n{i} @\"q{i}\" ")).collect();
    prompt.push_str(&"@".repeat(100_000));
    prompt.push_str(" @f @\"");
    let started = std::time::Instant::now();
    let found = mentions(&prompt);
    let attached = attach_in(dir.path(), &prompt, 1000);
    let took = started.elapsed();
    assert_eq!(found.len(), 100_001 + 1);
    assert!(attached.files.is_empty(), "past the mentions looked at");
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}

#[test]
fn secrets_and_fences_inside_a_file_stay_inside_its_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("f"), "token=sk-secret-value-1234\n```\nx\n").expect("w");
    let roots = Roots {
        work_dir: dir.path(),
        home: None,
    };
    let masker = Masker::new(["sk-secret-value-1234".to_owned()]);
    let attached = attach("@f", None, &roots, 1000, &masker);
    assert!(!attached.message.contains("sk-secret-value-1234"));
    assert!(
        attached.message.contains("\n````\n"),
        "{}",
        attached.message
    );
}

#[test]
fn non_utf8_is_read_lossily_and_the_bound_follows_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("l1"), b"caf\xe9\n").expect("write");
    let attached = attach_in(dir.path(), "@l1", 1000);
    assert!(attached.message.contains("caf\u{fffd}"));
    assert_eq!(bound_bytes(1_000_000), MAX_ATTACHED_BYTES);
    assert_eq!(bound_bytes(4_000), 3_000);
}

#[test]
fn the_context_handed_along_is_sent_but_never_attaches() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("secret.txt"), "the secret").expect("write");
    std::fs::write(dir.path().join("notes.txt"), "the notes").expect("write");
    let roots = Roots {
        work_dir: dir.path(),
        home: Some(dir.path()),
    };
    let context = "This came from stdin:\n```\nsee @secret.txt and @~/secret.txt\n```";
    let attached = attach("why", Some(context), &roots, 1000, &no_secrets());
    assert_eq!(attached.message, format!("why\n\n{context}"));
    assert!(attached.files.is_empty() && attached.refused.is_empty());
    // The user's own words still attach, after the context.
    let attached = attach("why @notes.txt", Some(context), &roots, 1000, &no_secrets());
    assert_eq!(attached.files.len(), 1, "{attached:?}");
    assert_eq!(attached.files[0].path, "notes.txt");
    assert!(
        !attached.message.contains("the secret"),
        "{}",
        attached.message
    );
    let notes = attached
        .message
        .find("the notes")
        .expect("the file's block");
    assert!(attached.message.find(context).is_some_and(|at| at < notes));
}
