//! `neurogc dashboard` command-line arguments.

use crate::server::Config;
use crate::store::StoreConfig;
use std::net::IpAddr;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct DashboardArgs {
    /// Port to listen on (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8003)]
    pub port: u16,

    /// Address to listen on. Anything but a loopback address exposes the dashboard (and its
    /// unauthenticated ingest) to the network.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: IpAddr,

    /// Replay a recorded run into the page: a run directory (its sample CSVs, one server per
    /// file) or one CSV (with a `server` column, as the seed's benchmark CSVs have).
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,

    /// Replay speed: 10 plays ten seconds of recording per second.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "FACTOR",
        allow_negative_numbers = true
    )]
    pub speed: f64,

    /// Sample time kept per server, counted back from its newest sample (`600`, `90s`, `10m`).
    #[arg(
        long,
        default_value = "10m",
        value_name = "DURATION",
        value_parser = neurogc_units::parse_duration,
        allow_negative_numbers = true
    )]
    pub window: std::time::Duration,

    /// Samples kept per server at most.
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    pub max_samples: usize,

    /// Servers kept at most: a new one evicts the least recently updated (`/api/status` counts
    /// them); only a batch naming more servers than this is refused with 507.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub max_servers: usize,

    /// Bytes of samples kept at most, all servers together (the oldest go first; `/api/status`
    /// counts them). WebSocket fan-out keeps at most a quarter of this on top.
    #[arg(long, default_value = "256M", value_name = "SIZE", value_parser = neurogc_units::parse_size)]
    pub max_bytes: u64,

    /// Largest ingest request body, in bytes (larger ones get 413).
    #[arg(long, default_value_t = 4 << 20, value_name = "BYTES")]
    pub max_body: usize,
}

impl DashboardArgs {
    /// Checks what clap cannot and turns the arguments into a server configuration.
    pub fn config(&self) -> anyhow::Result<Config> {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            anyhow::bail!("--speed must be a positive number, got {}", self.speed);
        }
        if self.window.is_zero() {
            anyhow::bail!("--window must be longer than 0 s");
        }
        if self.max_samples == 0 {
            anyhow::bail!("--max-samples must be at least 1");
        }
        if self.max_servers == 0 {
            anyhow::bail!("--max-servers must be at least 1");
        }
        if self.max_bytes < 1 << 20 {
            anyhow::bail!(
                "--max-bytes {} is under 1 MiB: too little to keep a run",
                self.max_bytes
            );
        }
        Ok(Config {
            bind: self.bind,
            port: self.port,
            store: StoreConfig {
                window_s: self.window.as_secs_f64(),
                max_per_server: self.max_samples,
                max_servers: self.max_servers,
                max_bytes: self.max_bytes as usize,
                ..StoreConfig::default()
            },
            max_body: self.max_body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: DashboardArgs,
    }

    fn parse(argv: &[&str]) -> anyhow::Result<Config> {
        let cli = Cli::try_parse_from(std::iter::once("dashboard").chain(argv.iter().copied()))?;
        cli.args.config()
    }

    #[test]
    fn defaults_are_loopback_8003() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.bind.to_string(), "127.0.0.1");
        assert_eq!(c.port, 8003);
        assert_eq!(c.max_body, 4 << 20);
        assert_eq!(c.store.window_s, 600.0);
    }

    #[test]
    fn the_window_takes_the_duration_grammar() {
        assert_eq!(parse(&["--window", "90s"]).unwrap().store.window_s, 90.0);
        assert_eq!(parse(&["--window", "1m30s"]).unwrap().store.window_s, 90.0);
        assert_eq!(parse(&["--window", "45"]).unwrap().store.window_s, 45.0);
    }

    #[test]
    fn bad_values_are_errors_that_name_the_option() {
        for (argv, opt) in [
            (&["--speed", "0"][..], "--speed"),
            (&["--speed", "-2"], "--speed"),
            (&["--window", "0"], "--window"),
            (&["--window", "-5"], "--window"),
            (&["--window", "10 parsecs"], "--window"),
            (&["--max-samples", "0"], "--max-samples"),
        ] {
            let err = parse(argv).unwrap_err().to_string();
            assert!(err.contains(opt), "{err}");
        }
        assert!(parse(&["--bind", "not-an-address"]).is_err());
    }
}
