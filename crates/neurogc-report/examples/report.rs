//! `cargo run --release -p neurogc-report --example report -- RUN_DIR [--compare RUN...]`:
//! the report without the `neurogc` binary.
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: neurogc_report::ReportArgs,
}

fn main() {
    let cli = Cli::parse();
    match neurogc_report::run(cli.args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("neurogc report: error: {e:#}");
            std::process::exit(2);
        }
    }
}
