//! Reading a Prometheus `/metrics` endpoint served on loopback, as the
//! order consumer's tests do.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The body of `GET /metrics` on `port`, or an empty string while it
/// cannot be read.
pub fn scrape(port: u16) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let request = format!("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The value of the sample `name` (with its labels, if any) in `text`.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}
