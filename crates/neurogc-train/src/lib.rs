//! Offline training for NeuroGC: `neurogc train` and `neurogc import-torch`.
//!
//! Reads sample CSVs ([`dataset`]), labels and windows them ([`windows`]), fits a candle network
//! ([`nets`]) or a random forest ([`forest`]), checks that the agent's own inference reproduces
//! the fitted model, and saves the model directory atomically ([`model_io`]).
//! candle lives here only: the agent never links it.

pub mod dataset;
pub mod forest;
pub mod import;
pub mod model_io;
pub mod nets;
pub mod scheduler;
pub mod train;
pub mod windows;

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::ValueEnum;
use neurogc_model::{Architecture, Normalization, N_FEATURES};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Lstm,
    Transformer,
    Feedforward,
    Forest,
    /// The `neurogc` scheduler's model, from run directories (not sample CSVs).
    Scheduler,
}

/// Train a model on sample CSVs (ours or the seed's).
#[derive(clap::Args, Debug, Clone)]
pub struct TrainArgs {
    /// Sample CSV; repeat for more files (each is its own time series). With `--model
    /// scheduler`: a run directory of `neurogc collect` or `bench` (repeatable).
    #[arg(long = "data", required = true, value_name = "FILE.csv|RUN_DIR")]
    pub data: Vec<PathBuf>,
    /// The model: the seed's LSTM, a Transformer, a feed-forward net, a random forest, or the
    /// `neurogc` scheduler's (its quiet-window net and the service's priors, from run
    /// directories; the policy `neurogc:DIR` reads it).
    #[arg(long, value_enum, default_value = "lstm")]
    pub model: Kind,
    /// Output model directory (model.json + model.safetensors).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Training target: `seed` (the seed's heuristic).
    #[arg(long, default_value = "seed")]
    pub target: String,
    /// Samples per window [default: 10 for lstm/transformer, 20 for feedforward/forest].
    #[arg(long)]
    pub window: Option<usize>,
    /// Passes over the training windows (neural models) [default: 100; scheduler: 20].
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Windows per gradient step (neural models) [default: 32; scheduler: 256].
    #[arg(long)]
    pub batch: Option<usize>,
    /// Adam's learning rate (neural models) [default: 0.001; scheduler: 0.002].
    #[arg(long)]
    pub lr: Option<f64>,
    /// Seed for weight initialisation, shuffling, dropout and the forest's sampling.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Share of each file's windows, at its end, held out for validation.
    #[arg(long, default_value_t = 0.2)]
    pub val_fraction: f64,
    /// Trigger threshold stored with the model.
    #[arg(long, default_value_t = 0.7)]
    pub threshold: f32,
    /// LSTM hidden size / Transformer d_model [default: 64; scheduler: 16].
    #[arg(long)]
    pub hidden: Option<usize>,
    /// LSTM or Transformer layers [default: 2; scheduler: 1].
    #[arg(long)]
    pub layers: Option<usize>,
    /// Dropout probability while training (neural models).
    #[arg(long, default_value_t = 0.2)]
    pub dropout: f32,
    /// Transformer attention heads (must divide --hidden).
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Transformer feed-forward width inside each layer.
    #[arg(long, default_value_t = 128)]
    pub ff_dim: usize,
    /// Feed-forward hidden sizes.
    #[arg(long, value_delimiter = ',', default_value = "64,32,16,8")]
    pub ff_hidden: Vec<usize>,
    /// Forest: number of trees.
    #[arg(long, default_value_t = 100)]
    pub trees: usize,
    /// Forest: deepest a tree may grow.
    #[arg(long, default_value_t = 12)]
    pub max_depth: usize,
    /// Forest: fewest training windows in a leaf.
    #[arg(long, default_value_t = 2)]
    pub min_samples_leaf: usize,
    /// Features tried per split [default: a third of the inputs].
    #[arg(long)]
    pub max_features: Option<usize>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `neurogc train`: trains, prints what the model learned, saves it.
pub fn run_train(args: TrainArgs) -> Result<i32> {
    if args.model == Kind::Scheduler {
        let report = train_scheduler(&args)?;
        scheduler::print_report(&report, &args.out);
        return Ok(0);
    }
    let report = train_model(&args)?;
    print_report(&report, &args.out);
    Ok(0)
}

impl TrainArgs {
    /// The flags' defaults, training on `data` into `out`.
    pub fn new(data: Vec<PathBuf>, out: PathBuf) -> TrainArgs {
        #[derive(clap::Parser)]
        #[command(no_binary_name = true)]
        struct Flags {
            #[command(flatten)]
            args: TrainArgs,
        }
        let mut args = <Flags as clap::Parser>::parse_from(["--data", "-", "--out", "-"]).args;
        (args.data, args.out) = (data, out);
        args
    }
}

/// Trains and saves the model `args` describes; warnings about the data go to stderr.
/// Every flag is checked before any data is read.
pub fn train_model(args: &TrainArgs) -> Result<train::TrainReport> {
    if args.model == Kind::Scheduler {
        bail!("--model scheduler trains from run directories: use train_scheduler");
    }
    let labeller = windows::labeller(&args.target).map_err(anyhow::Error::msg)?;
    let window = args.window.unwrap_or(match args.model {
        Kind::Lstm | Kind::Transformer => 10,
        Kind::Feedforward | Kind::Forest | Kind::Scheduler => 20,
    });
    let layers = args.layers.unwrap_or(2);
    train::check_window(window)?;
    let architecture = match args.model {
        Kind::Lstm => Architecture::Lstm {
            hidden: args.hidden.unwrap_or(64),
            layers,
            dropout: args.dropout,
        },
        Kind::Transformer => Architecture::Transformer {
            d_model: args.hidden.unwrap_or(64),
            heads: args.heads,
            layers,
            ff_dim: args.ff_dim,
            dropout: args.dropout,
        },
        Kind::Feedforward => Architecture::Feedforward {
            hidden: args.ff_hidden.clone(),
            dropout: args.dropout,
        },
        Kind::Forest => Architecture::Forest {
            trees: args.trees,
            max_depth: args.max_depth,
            min_samples_leaf: args.min_samples_leaf,
            max_features: args
                .max_features
                .unwrap_or((neurogc_model::model::forest_input_len(window) / 3).max(1)),
        },
        Kind::Scheduler => unreachable!("returned above"),
    };
    let config = train::TrainConfig {
        architecture,
        window,
        epochs: args.epochs.unwrap_or(100),
        batch: args.batch.unwrap_or(32),
        lr: args.lr.unwrap_or(1e-3),
        seed: args.seed,
        val_fraction: args.val_fraction,
        threshold: args.threshold,
        out: args.out.clone(),
        quiet: args.quiet,
    };
    config.check()?;
    let series = args
        .data
        .iter()
        .map(|p| dataset::load_csv(p))
        .collect::<Result<Vec<_>, _>>()?;
    let report = train::train(&series, labeller.as_ref(), &config)?;
    // The data's own warnings (a skipped incomplete last line) come first in the report's.
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    Ok(report)
}

/// Trains the scheduler's model on the run directories `args.data` names.
pub fn train_scheduler(args: &TrainArgs) -> Result<scheduler::SchedulerReport> {
    let cfg = scheduler::SchedulerConfig {
        runs: args.data.clone(),
        out: args.out.clone(),
        hidden: args.hidden.unwrap_or(16),
        layers: args.layers.unwrap_or(1),
        epochs: args.epochs.unwrap_or(20),
        batch: args.batch.unwrap_or(256),
        lr: args.lr.unwrap_or(2e-3),
        seed: args.seed,
        val_fraction: args.val_fraction,
        per_trial: 20_000,
        quiet: args.quiet,
    };
    cfg.check()?;
    scheduler::train(&cfg)
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"))
}

fn print_report(report: &train::TrainReport, out: &std::path::Path) {
    let m = &report.meta.metrics;
    let t = &report.meta.training;
    println!(
        "{} on {} training / {} validation windows of {}",
        report.meta.architecture.name(),
        t["train_windows"],
        t["val_windows"],
        report.meta.window
    );
    println!("  train loss (MSE)   {}", fmt_opt(m.train_loss));
    println!("  val loss (MSE)     {}", fmt_opt(m.val_loss));
    println!(
        "  at threshold {}:   precision {}  recall {}  (validation positives {})",
        report.meta.threshold,
        fmt_opt(m.val_precision),
        fmt_opt(m.val_recall),
        m.val_positive_rate
            .map_or("n/a".into(), |r| format!("{:.1} %", r * 100.0))
    );
    if let Some(mean) = mean_epoch(&report.epoch_seconds) {
        println!("  time per epoch     {:.1} ms", mean * 1e3);
    }
    println!(
        "  agent inference matches the trained model to {:.1e}",
        report.parity_max_abs_diff
    );
    println!("saved {}", out.display());
}

fn mean_epoch(s: &[f64]) -> Option<f64> {
    (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64)
}

/// Convert a PyTorch state_dict trained by the seed's code into a NeuroGC model.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The `.pth` file (a state_dict saved with torch.save).
    pub file: PathBuf,
    /// Output model directory (model.json + model.safetensors).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Training CSV(s) the model was trained on: the z-score statistics come from them.
    #[arg(long = "data", value_name = "FILE.csv")]
    pub data: Vec<PathBuf>,
    /// Explicit means (10, comma-separated), with --std, instead of --data.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub mean: Vec<f32>,
    /// Explicit standard deviations (10, comma-separated), with --mean, instead of --data.
    #[arg(long, value_delimiter = ',')]
    pub std: Vec<f32>,
    /// Key of the state_dict inside a checkpoint dict (e.g. model_state_dict).
    #[arg(long)]
    pub key: Option<String>,
    /// Trigger threshold stored with the model.
    #[arg(long, default_value_t = 0.7)]
    pub threshold: f32,
    /// Samples per window [default: 10, or what a feed-forward input size implies].
    #[arg(long)]
    pub window: Option<usize>,
}

pub fn run_import(args: ImportArgs) -> Result<i32> {
    let normalization = match (args.data.is_empty(), args.mean.is_empty() && args.std.is_empty()) {
        (false, true) => {
            let series = args.data.iter().map(|p| dataset::load_csv(p)).collect::<Result<Vec<_>, _>>()?;
            let rows: Vec<_> = series.iter().flat_map(|s| s.rows.iter().copied()).collect();
            normalization_of(&rows)
        }
        (true, false) => {
            if args.mean.len() != N_FEATURES || args.std.len() != N_FEATURES {
                bail!("--mean and --std need {N_FEATURES} values each (got {} and {})", args.mean.len(), args.std.len());
            }
            Normalization { mean: args.mean.clone(), std: args.std.clone() }
        }
        (true, true) => bail!("give the training CSV(s) with --data (for the z-score statistics), or --mean and --std"),
        (false, false) => bail!("give either --data or --mean/--std, not both"),
    };
    let meta = import::import(
        &args.file,
        &args.out,
        import::ImportOptions {
            key: args.key.as_deref(),
            normalization,
            threshold: args.threshold,
            window: args.window,
            dropout: 0.0,
        },
    )?;
    println!(
        "imported {} ({}) -> {}",
        args.file.display(),
        meta.architecture.name(),
        args.out.display()
    );
    Ok(0)
}

/// z-score statistics over all rows (sample std), as the seed normalised its training set.
pub fn normalization_of(rows: &[neurogc_model::FeatureVector]) -> Normalization {
    Normalization::fit(rows)
}
