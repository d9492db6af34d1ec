//! `neurogc dashboard` alone, without the rest of the CLI: quick to build while working on the
//! page (`cargo run --release -p neurogc-dashboard --example dashboard -- --port 0`).
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: neurogc_dashboard::DashboardArgs,
}

fn main() {
    match neurogc_dashboard::run(Cli::parse().args) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("neurogc: error: {err:#}");
            std::process::exit(2);
        }
    }
}
