//! Where a long-running program finds its Redis master: a URL, or Redis
//! Sentinel asked for a master name each time it connects.
//!
//! A program holds one `Endpoint` and calls `master` for every new
//! connection, after a lost one and after a `READONLY` reply alike: with
//! sentinels, that asks them again, so a failover is followed without a
//! restart. redis-rs does the asking (`SENTINEL MASTERS`, then `ROLE` on
//! the address they give, so a demoted master is never taken for one),
//! through its async connections, which time out: a sentinel that stopped
//! answering without closing its connections is passed over for the next
//! one instead of holding the program forever.

use crate::mask_password;
use redis::io::tcp::TcpSettings;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo};
use std::sync::Mutex;
use std::time::Duration;

/// One setting and where it came from (a flag, or an environment
/// variable), for an error about it.
#[derive(Debug, Clone)]
pub struct Setting {
    pub from: String,
    pub value: String,
}

impl Setting {
    pub fn new(from: impl Into<String>, value: impl Into<String>) -> Setting {
        Setting {
            from: from.into(),
            value: value.into(),
        }
    }
}

/// How to reach Redis, as given: a URL, or sentinels and a master name.
/// Credentials for the sentinels and for the master they name come from
/// the environment only (`SentinelCredentials::from_environment`), never
/// from flags, which every user of the host can read.
#[derive(Debug, Default, Clone)]
pub struct EndpointSettings {
    pub url: Option<Setting>,
    /// `HOST:PORT[,HOST:PORT...]`.
    pub sentinels: Option<Setting>,
    pub master_name: Option<Setting>,
    pub credentials: SentinelCredentials,
}

impl Setting {
    /// Given as a flag (`--...`), not by the environment.
    fn is_flag(&self) -> bool {
        self.from.starts_with("--")
    }
}

impl EndpointSettings {
    /// A way to find Redis given by flags replaces the other way given by
    /// the environment, as any flag wins over its variable: `--sentinel`
    /// drops `SECKILL_REDIS_URL`, `--redis-url` drops `SECKILL_SENTINELS`
    /// and `SECKILL_MASTER_NAME`. Both ways from flags, or both from the
    /// environment, are left for `from_settings` to refuse.
    fn flags_win(&self) -> EndpointSettings {
        let flag = |setting: &Option<Setting>| setting.as_ref().is_some_and(Setting::is_flag);
        let env = |setting: &Option<Setting>| setting.as_ref().is_some_and(|s| !s.is_flag());
        let mut settings = self.clone();
        let sentinels_by_flag = flag(&self.sentinels) || flag(&self.master_name);
        if flag(&self.url) && !sentinels_by_flag {
            if env(&self.sentinels) {
                settings.sentinels = None;
            }
            if env(&self.master_name) {
                settings.master_name = None;
            }
        }
        if sentinels_by_flag && env(&self.url) {
            settings.url = None;
        }
        settings
    }

    /// Takes `setting` if `flag` is one of the endpoint's: `--redis-url`
    /// (or `--redis`), `--sentinel`, `--master-name`; false otherwise.
    pub fn set(&mut self, flag: &str, setting: Setting) -> bool {
        let slot = match flag {
            "--redis-url" | "--redis" => &mut self.url,
            "--sentinel" => &mut self.sentinels,
            "--master-name" => &mut self.master_name,
            _ => return false,
        };
        *slot = Some(setting);
        true
    }
}

/// Who to be towards the sentinels and towards the master they name.
#[derive(Debug, Default, Clone)]
pub struct SentinelCredentials {
    pub sentinel_username: Option<String>,
    pub sentinel_password: Option<String>,
    pub redis_username: Option<String>,
    pub redis_password: Option<String>,
}

impl SentinelCredentials {
    /// `SECKILL_SENTINEL_USERNAME`, `SECKILL_SENTINEL_PASSWORD` (the
    /// sentinels' `requirepass` or ACL user) and `SECKILL_REDIS_USERNAME`,
    /// `SECKILL_REDIS_PASSWORD` (the master's); empty counts as unset.
    pub fn from_environment() -> SentinelCredentials {
        let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        SentinelCredentials {
            sentinel_username: env("SECKILL_SENTINEL_USERNAME"),
            sentinel_password: env("SECKILL_SENTINEL_PASSWORD"),
            redis_username: env("SECKILL_REDIS_USERNAME"),
            redis_password: env("SECKILL_REDIS_PASSWORD"),
        }
    }

    fn names_the_master(&self) -> bool {
        self.redis_username.is_some() || self.redis_password.is_some()
    }
}

/// Where the master is found.
pub enum Endpoint {
    Url {
        client: redis::Client,
        /// The URL without its password.
        shown: String,
    },
    Sentinel {
        /// Locked because asking caches connections to the sentinels;
        /// boxed, as the larger variant by far (made once per program).
        sentinels: Box<Mutex<SentinelClient>>,
        /// Runs the asking; one thread, the caller's.
        runtime: tokio::runtime::Runtime,
        master_name: String,
        /// The sentinels, for logs.
        sentinel_list: String,
        /// The master name and the sentinels, for logs.
        shown: String,
    },
}

/// How long a sentinel that stopped answering may hold a request.
const SENTINEL_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest one search for the master may take, every sentinel tried.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(15);

impl Endpoint {
    /// The endpoint the settings describe, or a configuration error that
    /// shows no password. `default_url` is used when neither a URL nor
    /// sentinels are given (`None`: one of them is required).
    pub fn from_settings(
        settings: &EndpointSettings,
        default_url: Option<&str>,
    ) -> Result<Endpoint, String> {
        let settings = &settings.flags_win();
        match (&settings.url, &settings.sentinels) {
            (Some(url), Some(sentinels)) => Err(format!(
                "{} and {} are two ways to find Redis; give one",
                url.from, sentinels.from
            )),
            (None, Some(sentinels)) => {
                let master_name = settings
                    .master_name
                    .as_ref()
                    .filter(|name| !name.value.is_empty())
                    .ok_or_else(|| {
                        format!(
                            "{} needs the name of the master to ask for \
                             (--master-name, SECKILL_MASTER_NAME)",
                            sentinels.from
                        )
                    })?;
                Endpoint::sentinel(sentinels, &master_name.value, &settings.credentials)
            }
            (url, None) => {
                if let Some(name) = &settings.master_name {
                    return Err(format!(
                        "{} names a master for sentinels, but no sentinel is given \
                         (--sentinel, SECKILL_SENTINELS)",
                        name.from
                    ));
                }
                if settings.credentials.names_the_master() {
                    return Err("SECKILL_REDIS_USERNAME and SECKILL_REDIS_PASSWORD are for \
                                the master sentinels name; with a URL, put them in the URL"
                        .into());
                }
                let url = match (url, default_url) {
                    (Some(url), _) => url.clone(),
                    (None, Some(default)) => Setting::new("the default URL", default),
                    (None, None) => {
                        return Err("a Redis URL (--redis-url, SECKILL_REDIS_URL) or sentinels \
                                    (--sentinel, SECKILL_SENTINELS) are required"
                            .into())
                    }
                };
                let shown = mask_password(&url.value);
                let client = redis::Client::open(url.value.as_str())
                    .map_err(|err| format!("{} {shown}: {err}", url.from))?;
                Ok(Endpoint::Url { client, shown })
            }
        }
    }

    fn sentinel(
        sentinels: &Setting,
        master_name: &str,
        credentials: &SentinelCredentials,
    ) -> Result<Endpoint, String> {
        let addresses = parse_sentinels(&sentinels.value)
            .map_err(|problem| format!("{} {:?}: {problem}", sentinels.from, sentinels.value))?;
        let tcp = || TcpSettings::default().set_user_timeout(SENTINEL_TIMEOUT);
        let mut builder = SentinelClientBuilder::new(
            addresses
                .iter()
                .map(|(host, port)| ConnectionAddr::Tcp(host.clone(), *port)),
            master_name,
            SentinelServerType::Master,
        )
        .map_err(|err| format!("{}: {err}", sentinels.from))?
        .set_client_to_sentinel_tcp_settings(tcp())
        .set_client_to_redis_tcp_settings(tcp());
        if let Some(username) = &credentials.sentinel_username {
            builder = builder.set_client_to_sentinel_username(username);
        }
        if let Some(password) = &credentials.sentinel_password {
            builder = builder.set_client_to_sentinel_password(password);
        }
        if let Some(username) = &credentials.redis_username {
            builder = builder.set_client_to_redis_username(username);
        }
        if let Some(password) = &credentials.redis_password {
            builder = builder.set_client_to_redis_password(password);
        }
        let client = builder
            .build()
            .map_err(|err| format!("{}: {err}", sentinels.from))?;
        let sentinel_list = addresses
            .iter()
            .map(|(host, port)| match host.contains(':') {
                true => format!("[{host}]:{port}"),
                false => format!("{host}:{port}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|err| {
                format!(
                    "{}: cannot start the sentinel client: {err}",
                    sentinels.from
                )
            })?;
        Ok(Endpoint::Sentinel {
            sentinels: Box::new(Mutex::new(client)),
            runtime,
            master_name: master_name.to_owned(),
            shown: format!("master {master_name} of sentinels {sentinel_list}"),
            sentinel_list,
        })
    }

    /// A client for the current master: the URL's, or the one the
    /// sentinels name now and that says it is a master. The error shows
    /// no password.
    pub fn master(&self) -> Result<redis::Client, String> {
        match self {
            Endpoint::Url { client, .. } => Ok(client.clone()),
            Endpoint::Sentinel {
                sentinels,
                runtime,
                master_name,
                sentinel_list,
                ..
            } => {
                // A panic while asking cannot leave the client half-updated
                // in a way that matters: it only caches connections.
                let mut sentinels = sentinels
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let found = runtime.block_on(async {
                    tokio::time::timeout(LOOKUP_TIMEOUT, sentinels.async_get_client()).await
                });
                let problem = match found {
                    Ok(Ok(client)) => return Ok(client),
                    Ok(Err(err)) => err.to_string(),
                    Err(_) => format!("no answer within {} s", LOOKUP_TIMEOUT.as_secs()),
                };
                Err(format!(
                    "no master {master_name} from the sentinels {sentinel_list}: {problem}"
                ))
            }
        }
    }

    /// True when the master is whatever the sentinels name.
    pub fn follows_sentinels(&self) -> bool {
        matches!(self, Endpoint::Sentinel { .. })
    }

    /// The URL (without its password) or the sentinels and master name.
    pub fn shown(&self) -> &str {
        match self {
            Endpoint::Url { shown, .. } | Endpoint::Sentinel { shown, .. } => shown,
        }
    }

    /// The plain URL, for a cluster client (sentinels do not serve a
    /// cluster); `None` with sentinels.
    pub fn url(&self) -> Option<redis::ConnectionInfo> {
        match self {
            Endpoint::Url { client, .. } => client
                .get_connection_info()
                .clone()
                .into_connection_info()
                .ok(),
            Endpoint::Sentinel { .. } => None,
        }
    }
}

/// `HOST:PORT[,HOST:PORT...]`, IPv6 hosts in brackets.
fn parse_sentinels(list: &str) -> Result<Vec<(String, u16)>, String> {
    let mut addresses = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err("an empty entry; the form is HOST:PORT[,HOST:PORT...]".into());
        }
        let (host, port) = entry
            .rsplit_once(':')
            .ok_or_else(|| format!("{entry:?} has no port; the form is HOST:PORT"))?;
        let host = match host.strip_prefix('[') {
            Some(bracketed) => bracketed
                .strip_suffix(']')
                .ok_or_else(|| format!("{entry:?}: an unclosed '['"))?,
            None if host.contains(':') => {
                return Err(format!(
                    "{entry:?}: an IPv6 host goes in brackets, [HOST]:PORT"
                ))
            }
            None => host,
        };
        if host.is_empty() || host.contains(['/', '@', ' ']) {
            return Err(format!("{entry:?}: not a host name or address"));
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|port| *port > 0)
            .ok_or_else(|| format!("{entry:?}: {port:?} is not a port"))?;
        addresses.push((host.to_owned(), port));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentinel_list_is_read_with_ipv6_in_brackets() {
        assert_eq!(
            parse_sentinels("127.0.0.1:26379, sentinel-2:26380,[::1]:26381").unwrap(),
            vec![
                ("127.0.0.1".to_owned(), 26379),
                ("sentinel-2".to_owned(), 26380),
                ("::1".to_owned(), 26381),
            ]
        );
    }

    #[test]
    fn a_sentinel_list_that_does_not_parse_is_refused() {
        for bad in [
            "",
            "127.0.0.1",
            "127.0.0.1:",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:26379,",
            "::1:26379",
            "[::1:26379",
            ":26379",
            "redis://127.0.0.1:26379",
            "user@host:1",
        ] {
            assert!(parse_sentinels(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn setting(from: &str, value: &str) -> Option<Setting> {
        Some(Setting::new(from, value))
    }

    #[test]
    fn a_url_and_sentinels_together_are_refused() {
        let settings = EndpointSettings {
            url: setting("--redis-url", "redis://127.0.0.1:1/"),
            sentinels: setting("--sentinel", "127.0.0.1:26379"),
            master_name: setting("--master-name", "shop"),
            ..Default::default()
        };
        let err = Endpoint::from_settings(&settings, None).err().unwrap();
        assert!(err.contains("--redis-url and --sentinel"), "{err}");
    }

    #[test]
    fn a_way_given_by_flags_wins_over_the_other_way_given_by_the_environment() {
        let sentinels_by_flag = EndpointSettings {
            url: setting("SECKILL_REDIS_URL", "redis://127.0.0.1:1/"),
            sentinels: setting("--sentinel", "127.0.0.1:26379"),
            master_name: setting("--master-name", "shop"),
            ..Default::default()
        };
        let endpoint = Endpoint::from_settings(&sentinels_by_flag, None).unwrap();
        assert!(endpoint.follows_sentinels());
        let url_by_flag = EndpointSettings {
            url: setting("--redis-url", "redis://127.0.0.1:1/"),
            sentinels: setting("SECKILL_SENTINELS", "127.0.0.1:26379"),
            master_name: setting("SECKILL_MASTER_NAME", "shop"),
            ..Default::default()
        };
        let endpoint = Endpoint::from_settings(&url_by_flag, None).unwrap();
        assert!(!endpoint.follows_sentinels());
    }

    #[test]
    fn sentinels_need_a_master_name_and_a_master_name_needs_sentinels() {
        let no_name = EndpointSettings {
            sentinels: setting("SECKILL_SENTINELS", "127.0.0.1:26379"),
            ..Default::default()
        };
        let err = Endpoint::from_settings(&no_name, None).err().unwrap();
        assert!(err.contains("--master-name"), "{err}");
        let no_sentinels = EndpointSettings {
            master_name: setting("--master-name", "shop"),
            ..Default::default()
        };
        let err = Endpoint::from_settings(&no_sentinels, Some("redis://127.0.0.1/"))
            .err()
            .unwrap();
        assert!(err.contains("no sentinel"), "{err}");
    }

    #[test]
    fn master_credentials_with_a_url_are_refused_and_passwords_never_shown() {
        let settings = EndpointSettings {
            url: setting("--redis-url", "redis://:hunter2@127.0.0.1:1/"),
            credentials: SentinelCredentials {
                redis_password: Some("hunter2".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let err = Endpoint::from_settings(&settings, None).err().unwrap();
        assert!(!err.contains("hunter2"), "{err}");
        let bad_url = EndpointSettings {
            url: setting("--redis-url", "redis://:hunter2@127.0.0.1:port/"),
            ..Default::default()
        };
        let err = Endpoint::from_settings(&bad_url, None).err().unwrap();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn the_sentinel_endpoint_shows_its_sentinels_and_master_name() {
        let settings = EndpointSettings {
            sentinels: setting("--sentinel", "127.0.0.1:26379,[::1]:26380"),
            master_name: setting("--master-name", "shop"),
            credentials: SentinelCredentials {
                sentinel_password: Some("hunter2".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let endpoint = Endpoint::from_settings(&settings, None).unwrap();
        assert_eq!(
            endpoint.shown(),
            "master shop of sentinels 127.0.0.1:26379,[::1]:26380"
        );
        assert!(endpoint.url().is_none());
    }
}
