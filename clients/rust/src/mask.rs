//! Connection strings as they may be shown in a log or an error: with any
//! password replaced by `****`.

const MASK: &str = "****";

/// `url` with its password replaced by `****`, for a log line or an error
/// message: the password of a URL's user (`redis://user:****@host:6379/`,
/// `postgres://user:****@host/db`) and the value of a `password=` or
/// `pass=` setting (a URL's query, as `redis+unix:///run/redis.sock?pass=`
/// takes it, or a PostgreSQL `key=value` connection string).
///
/// It works on text that does not parse too, since that is when it gets
/// printed: everything from the `:` after `://` up to the last `@` is
/// masked, so a password holding a `/`, `#` or `@` its writer did not
/// percent-encode is masked whole. A URL without a `:` in its user part
/// (`redis://user@host`) holds no password and is shown as it is.
pub fn mask_password(url: &str) -> String {
    let masked = match url.split_once("://") {
        Some((scheme, rest)) => match rest.rfind('@') {
            Some(at) => match rest[..at].split_once(':') {
                Some((user, _)) => format!("{scheme}://{user}:{MASK}{}", &rest[at..]),
                None => url.to_owned(),
            },
            None => url.to_owned(),
        },
        None => url.to_owned(),
    };
    // In a URL's query a value ends at `&` (or `#`); in a connection
    // string, only at a space, unless it is quoted.
    let in_url = url.contains("://");
    mask_settings(&masked, in_url)
}

/// `text` with the values of its `password` and `pass` settings masked.
fn mask_settings(text: &str, in_url: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(value_start) = next_password_value(rest) {
        out.push_str(&rest[..value_start]);
        out.push_str(MASK);
        rest = &rest[value_start + value_len(&rest[value_start..], in_url)..];
    }
    out.push_str(rest);
    out
}

/// Where the value of the next `password=` or `pass=` setting in `text`
/// starts (after the `=` and any spaces around it).
fn next_password_value(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("pass") {
        let start = from + found;
        from = start + 4;
        // A setting's name starts the text or follows a separator.
        if start > 0 && !matches!(bytes[start - 1], b' ' | b'\t' | b'\n' | b'?' | b'&' | b';') {
            continue;
        }
        let mut end = start + 4;
        if lower[end..].starts_with("word") {
            end += 4;
        }
        let after_name = lower[end..].trim_start_matches([' ', '\t']);
        let Some(value) = after_name.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start_matches([' ', '\t']);
        return Some(text.len() - value.len());
    }
    None
}

/// How many bytes of `text` (starting at a setting's value) the value
/// takes.
fn value_len(text: &str, in_url: bool) -> usize {
    if let Some(quoted) = text.strip_prefix('\'') {
        // A quoted connection-string value, where \' and \\ are escapes.
        let mut escaped = false;
        for (at, c) in quoted.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '\'' => return 1 + at + 1,
                _ => {}
            }
        }
        return text.len();
    }
    text.find(|c: char| c.is_whitespace() || (in_url && (c == '&' || c == '#')))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::mask_password;

    #[test]
    fn a_url_keeps_its_user_and_host_and_loses_its_password() {
        for (url, shown) in [
            (
                "redis://:hunter2@10.0.0.1:6379/",
                "redis://:****@10.0.0.1:6379/",
            ),
            (
                "rediss://app:hunter2@redis.example:6380/0",
                "rediss://app:****@redis.example:6380/0",
            ),
            (
                "postgres://orders:hunter2@db/shop?sslmode=require",
                "postgres://orders:****@db/shop?sslmode=require",
            ),
            ("redis://127.0.0.1:6379/", "redis://127.0.0.1:6379/"),
            ("redis://app@127.0.0.1/", "redis://app@127.0.0.1/"),
        ] {
            assert_eq!(mask_password(url), shown, "{url}");
        }
    }

    #[test]
    fn a_url_that_does_not_parse_is_masked_up_to_its_last_at_sign() {
        for (url, shown) in [
            (
                "redis://:hun/ter#2@host:notaport/",
                "redis://:****@host:notaport/",
            ),
            ("redis://u:a@b@[::1/", "redis://u:****@[::1/"),
            ("redis://:hunter2@", "redis://:****@"),
        ] {
            assert_eq!(mask_password(url), shown, "{url}");
        }
    }

    #[test]
    fn password_settings_are_masked_in_queries_and_connection_strings() {
        for (url, shown) in [
            (
                "redis+unix:///run/redis.sock?user=app&pass=hunter2&db=1",
                "redis+unix:///run/redis.sock?user=app&pass=****&db=1",
            ),
            (
                "postgresql:///shop?host=/run/pg&password=hunter2",
                "postgresql:///shop?host=/run/pg&password=****",
            ),
            (
                "host=db user=orders password=hunter2 dbname=shop",
                "host=db user=orders password=**** dbname=shop",
            ),
            (
                "host=db password = 'hunter 2\\' x' dbname=shop",
                "host=db password = **** dbname=shop",
            ),
            ("PASSWORD=a&b port=1", "PASSWORD=**** port=1"),
            (
                "host=db passfile=/etc/pgpass user=x",
                "host=db passfile=/etc/pgpass user=x",
            ),
            ("host=db password=", "host=db password=****"),
        ] {
            assert_eq!(mask_password(url), shown, "{url}");
        }
    }
}
