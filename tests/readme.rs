//! Replays every redis-cli transcript in README.md and in docs/*.md
//! against a real server, so that the replies the documentation shows are
//! the replies users get.

mod common;

use common::{redis_cli, Server};
use std::process::{Command, Stdio};

const PROMPT: &str = "127.0.0.1:6379> ";

struct Transcript {
    commands: Vec<String>,
    expected: String,
}

/// The ```console blocks of the README, in order.
fn transcripts(readme: &str) -> Vec<Transcript> {
    let mut blocks = Vec::new();
    let mut current: Option<Transcript> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```console") => {
                current = Some(Transcript {
                    commands: Vec::new(),
                    expected: String::new(),
                })
            }
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), line) => match line.strip_prefix(PROMPT) {
                Some(command) => block.commands.push(command.to_owned()),
                None => {
                    block.expected.push_str(line);
                    block.expected.push('\n');
                }
            },
            (None, _) => {}
        }
    }
    blocks
}

/// Replays the transcripts of one page on a server of its own: later
/// transcripts of a page build on its earlier ones.
fn replay_page(path: &std::path::Path) -> usize {
    let page = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{path:?}: {err}"));
    let blocks = transcripts(&page);
    let server = Server::start();
    for block in &blocks {
        assert_eq!(
            redis_cli(server.port, &block.commands),
            block.expected,
            "{}: transcript {:?}",
            path.display(),
            block.commands
        );
    }
    blocks.len()
}

#[test]
fn readme_transcripts_show_real_replies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let replayed = replay_page(&root.join("README.md"));
    assert!(replayed >= 3, "found {replayed} transcripts in README.md");
}

/// `make run`, twice in a row: each server starts from an empty data
/// directory, so the README's first transcript answers as shown both times
/// (it did not when the AOF of the first run was loaded by the second).
#[test]
fn make_run_twice_answers_the_first_transcript_both_times() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let first = transcripts(&readme)
        .into_iter()
        .next()
        .expect("a transcript");
    // Where the runs' data directories go, removed at the end.
    let scratch = tempfile::tempdir().expect("a temporary directory");
    // Started from another directory: the configuration must name the
    // module by its absolute path.
    let elsewhere = scratch.path();
    for run in 1..=2 {
        let port = common::free_port();
        let mut server = Command::new(root.join("scripts/run.sh"))
            .arg(port.to_string())
            .current_dir(elsewhere)
            .env("TMPDIR", elsewhere)
            .env("SECKILL_SERVER", common::server_binary())
            .env("SECKILL_MODULE", common::module_path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("scripts/run.sh");
        let url = format!("redis://127.0.0.1:{port}/");
        common::wait_until(
            "make run's server",
            std::time::Duration::from_secs(10),
            || {
                redis::Client::open(url.as_str())
                    .and_then(|client| client.get_connection())
                    .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con))
                    .is_ok()
            },
        );
        let replayed = redis_cli(port, &first.commands);
        let _ = server.kill();
        let _ = server.wait();
        assert_eq!(replayed, first.expected, "run {run}");
    }
}

/// The README's code in each language is the example service's own, which
/// `make test` drives over HTTP (examples/python/test_shop.py,
/// examples/node/shop.test.js, examples/rust/tests/shop.rs). Lines are
/// compared without their indentation: a handler shown alone sits
/// further left than in its file.
#[test]
fn the_readme_s_code_is_the_example_services_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let unindented = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| line.trim_start().to_owned())
            .collect()
    };
    for (language, comment, service) in [
        ("python", "# from ", "examples/python/shop.py"),
        ("js", "// from ", "examples/node/shop.js"),
        ("rust", "// from ", "examples/rust/src/lib.rs"),
    ] {
        let fence = format!("```{language}\n");
        let start = readme.find(&fence).expect("a block per language") + fence.len();
        let block = &readme[start..start + readme[start..].find("```").expect("its end")];
        let (first, code) = block.split_once('\n').expect("a block of lines");
        assert!(
            first.starts_with(&format!("{comment}{service}")),
            "the {language} block names its source first: {first}"
        );
        let code = unindented(code);
        assert!(code.len() >= 8, "{language}: {code:?}");
        let source = std::fs::read_to_string(root.join(service)).expect(service);
        let source = unindented(&source);
        assert!(
            source.windows(code.len()).any(|window| window == code),
            "README's {language} block is not in {service}:\n{}",
            code.join("\n")
        );
    }
}

#[test]
fn every_docs_page_transcript_shows_real_replies() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("a docs entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    let replayed: usize = pages.iter().map(|page| replay_page(page)).sum();
    assert!(replayed >= 3, "found {replayed} transcripts in docs/");
}
