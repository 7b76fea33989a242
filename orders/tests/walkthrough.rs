//! docs/orders.md's "seckill-orders in five minutes", done as written: its
//! SQL makes the role and the database (on the PostgreSQL 15 that `make
//! deps` installs, where a plain role may not create tables in `public`),
//! the consumer connects as that role, the page's `redis-cli` sale is
//! replayed, and the table's rows must be the ones the page shows.

use seckill_harness::postgres::Postgres;
use seckill_harness::{redis_cli, Server};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SECTION: &str = "## seckill-orders in five minutes";
const STREAM: &str = "{sku:7007}:orders";
const PROMPT: &str = "127.0.0.1:6379> ";
const PSQL_PROMPT: &str = "shop=> ";

/// The fenced blocks of the section, as (language, lines).
fn blocks() -> Vec<(String, Vec<String>)> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/orders.md"))
        .expect("docs/orders.md");
    let start = page.find(SECTION).expect("the five-minute section");
    let section = &page[start + SECTION.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in section.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(language)) => current = Some((language.to_owned(), Vec::new())),
            (Some(_), Some("")) => blocks.extend(current.take()),
            (Some((_, lines)), _) => lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    blocks
}

fn block(language: &str) -> Vec<String> {
    blocks()
        .into_iter()
        .find(|(lang, _)| lang == language)
        .unwrap_or_else(|| panic!("no ```{language} block in the section"))
        .1
}

/// Lines with their trailing blanks dropped, and trailing empty lines.
fn trimmed(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| line.trim_end().to_owned())
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// What psql prints for `statements`, or its error.
fn try_psql(pg: &Postgres, database: &str, statements: &[&str]) -> Result<String, String> {
    let mut command = pg.client_tool("psql");
    command.args(["-X", "-d", database]);
    for statement in statements {
        command.args(["-c", statement]);
    }
    let output = command.output().expect("psql");
    if !output.status.success() {
        return Err(format!(
            "psql {statements:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn psql(pg: &Postgres, database: &str, statements: &[&str]) -> String {
    try_psql(pg, database, statements).unwrap_or_else(|err| panic!("{err}"))
}

/// The consumer, stopped when the test ends, failed or not.
struct Consumer(Child);

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_consumer(server: &Server, pg: &Postgres) -> Consumer {
    let url = format!(
        "host=127.0.0.1 port={} user=orders password=change-me dbname=shop",
        pg.port()
    );
    let log = std::fs::File::create(server.dir().join("consumer.log")).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_seckill-orders"))
        .env("SECKILL_POSTGRES_URL", url)
        .args(["--redis-url", &server.url(), "--stream", STREAM])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start seckill-orders");
    Consumer(child)
}

#[test]
fn the_five_minute_walkthrough_gives_the_rows_it_shows() {
    let pg = Postgres::start().expect("PostgreSQL is not installed: run `make deps`");
    let server = Server::start();

    // The role and the database, as the page says, one statement at a time
    // (CREATE DATABASE cannot run inside a transaction).
    let sql = block("sql").join("\n");
    let statements: Vec<&str> = sql
        .split(';')
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
        .collect();
    assert_eq!(statements.len(), 2, "{statements:?}");
    psql(&pg, "postgres", &statements);

    let mut consumer = start_consumer(&server, &pg);

    // The sale, replayed: the replies are the page's.
    let console = block("console");
    let commands: Vec<&str> = console
        .iter()
        .filter_map(|line| line.strip_prefix(PROMPT))
        .collect();
    let expected: Vec<String> = console
        .iter()
        .filter(|line| !line.starts_with(PROMPT))
        .cloned()
        .collect();
    assert_eq!(trimmed(&redis_cli(server.port, &commands)), expected);

    // The rows, once the consumer has written them.
    let text = block("text");
    let query = text[0]
        .strip_prefix(PSQL_PROMPT)
        .expect("the query after the psql prompt");
    let shown = trimmed(&text[1..].join("\n"));
    let until = Instant::now() + Duration::from_secs(30);
    let rows = loop {
        if let Ok(Some(status)) = consumer.0.try_wait() {
            let log = std::fs::read_to_string(server.dir().join("consumer.log"));
            panic!("the consumer exited ({status}): {log:?}");
        }
        // The table exists once the consumer has connected.
        let rows = match try_psql(&pg, "shop", &[query]) {
            Ok(rows) => trimmed(&rows),
            Err(err) => vec![err],
        };
        if rows == shown || Instant::now() > until {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(rows, shown);
    drop(consumer);
    // The table was created by the consumer's role, in the database it owns.
    let owner = psql(
        &pg,
        "shop",
        &["SELECT tableowner FROM pg_tables WHERE tablename = 'seckill_orders'"],
    );
    assert!(owner.contains("orders"), "{owner}");
}
