//! Replays every redis-cli transcript in README.md against a real server,
//! so that the replies the README shows are the replies users get.

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

#[test]
fn readme_transcripts_show_real_replies() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let blocks = transcripts(&readme);
    assert!(blocks.len() >= 3, "found {} transcripts", blocks.len());
    // One server for the whole README: later transcripts build on earlier ones.
    let server = Server::start();
    for block in blocks {
        assert_eq!(
            replay(server.port, &block.commands),
            block.expected,
            "transcript {:?}",
            block.commands
        );
    }
}
