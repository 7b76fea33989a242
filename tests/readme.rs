//! Replays every redis-cli transcript in README.md and in docs/*.md
//! against a real server, so that the replies the documentation shows are
//! the replies users get.

mod common;

use common::Server;
use std::io::Write;
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

fn replay(port: u16, commands: &[String]) -> String {
    let cli = std::env::var("SECKILL_CLI").unwrap_or_else(|_| "redis-cli".to_owned());
    let mut child = Command::new(cli)
        .args(["--no-raw", "-h", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cannot start redis-cli");
    let mut stdin = child.stdin.take().expect("stdin");
    for command in commands {
        writeln!(stdin, "{command}").expect("write to redis-cli");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Replays the transcripts of one page on a server of its own: later
/// transcripts of a page build on its earlier ones.
fn replay_page(path: &std::path::Path) -> usize {
    let page = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{path:?}: {err}"));
    let blocks = transcripts(&page);
    let server = Server::start();
    for block in &blocks {
        assert_eq!(
            replay(server.port, &block.commands),
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
