//! `neurogc run --policy P -- <command ...>`: runs any Python command with the agent injected and
//! no code change, the way `opentelemetry-instrument` works: a `sitecustomize` on PYTHONPATH starts
//! the agent from NEUROGC_* variables before the program's own code runs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use neurogc_core::policy::PolicySpec;

/// The bootstrap module, embedded so the binary needs no knowledge of where Python keeps packages.
const SITECUSTOMIZE: &str = include_str!("../../../python/neurogc/_bootstrap/sitecustomize.py");

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[arg(long, default_value = "default", help = format!("Policy spec: {}", neurogc_core::policy::spec::KNOWN_POLICIES))]
    policy: String,
    /// Sample interval in seconds.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Append one row per sample to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Append one row per collection to this CSV file
    /// (time,generation,pause_ms,collected,uncollectable,reason).
    #[arg(long, value_name = "PATH")]
    gc_events_csv: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

pub fn run(args: RunArgs) -> Result<i32> {
    // Validate here so a typo fails before the program starts, not inside it.
    args.policy
        .parse::<PolicySpec>()
        .map_err(anyhow::Error::new)?;
    if !args.interval.is_finite() || !(0.001..=3600.0).contains(&args.interval) {
        bail!(
            "--interval must be between 0.001 and 3600 seconds, got {}",
            args.interval
        );
    }
    let csv = match &args.csv {
        Some(path) => Some(absolute_writable_csv(path, "--csv")?),
        None => None,
    };
    let gc_events_csv = match &args.gc_events_csv {
        Some(path) => Some(absolute_writable_csv(path, "--gc-events-csv")?),
        None => None,
    };
    if csv.is_some() && csv == gc_events_csv {
        bail!("--csv and --gc-events-csv must be different files");
    }
    let bootstrap = write_bootstrap()?;
    let mut pythonpath = OsString::from(&bootstrap);
    if let Some(existing) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(existing);
    }
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let mut command = Command::new(program);
    command
        .args(rest)
        .env("PYTHONPATH", pythonpath)
        .env("NEUROGC_POLICY", args.policy.trim())
        .env("NEUROGC_INTERVAL", args.interval.to_string());
    for (name, path) in [
        ("NEUROGC_CSV", &csv),
        ("NEUROGC_GC_EVENTS_CSV", &gc_events_csv),
    ] {
        match path {
            Some(path) => command.env(name, path),
            None => command.env_remove(name),
        };
    }
    // exec: the program takes over this process, so signals and the exit code are its own.
    let err = command.exec();
    bail!("cannot run {:?}: {err}", program)
}

/// A CSV path made absolute (the program may change directory) with its folder created; `flag`
/// names it in errors.
fn absolute_writable_csv(path: &Path, flag: &str) -> Result<PathBuf> {
    let path = std::path::absolute(path).with_context(|| format!("bad {flag} path {path:?}"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder for {flag} {}", path.display()))?;
    }
    Ok(path)
}

/// Writes `sitecustomize.py` into a private folder (atomically, so concurrent runs never see a
/// partial file) and returns the folder. The folder is the user's own: under the temporary
/// directory anyone can create a folder by the name we would use and plant a `sitecustomize.py`
/// that our Python would then run, so a folder that is not a directory owned by this user with
/// no access for others is never used; a fresh one with a unique name is made instead.
fn write_bootstrap() -> Result<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let name = format!("neurogc-bootstrap-{uid}-{}", env!("CARGO_PKG_VERSION"));
    let shared = std::env::temp_dir().join(&name);
    let dir = if private_dir(&shared, uid)? {
        shared
    } else {
        unique_private_dir(&name, uid)?
    };
    let target = dir.join("sitecustomize.py");
    if std::fs::read_to_string(&target).ok().as_deref() == Some(SITECUSTOMIZE) {
        return Ok(dir);
    }
    let tmp = dir.join(format!(".sitecustomize.{}.tmp", std::process::id()));
    std::fs::write(&tmp, SITECUSTOMIZE)
        .and_then(|_| std::fs::rename(&tmp, &target))
        .with_context(|| format!("cannot write {}", target.display()))?;
    Ok(dir)
}

/// Creates `dir` (mode 0700) unless it exists; whether it is a directory, not a symlink, owned
/// by `uid`, that no one else could ever write into. One that others could only read (an older
/// version's, made 0755) is made private; one that others could write into is refused.
fn private_dir(dir: &Path, uid: u32) -> Result<bool> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot create bootstrap folder {}", dir.display()))
        }
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot inspect bootstrap folder {}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Ok(false);
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make bootstrap folder {} private", dir.display()))?;
    }
    Ok(true)
}

/// A new folder under the temporary directory, named `name` plus a unique suffix, created
/// (mode 0700) by this call: it cannot have been planted.
fn unique_private_dir(name: &str, uid: u32) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..100u32 {
        let dir =
            std::env::temp_dir().join(format!("{name}-{}-{nanos:x}-{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) if private_dir(&dir, uid)? => return Ok(dir),
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create bootstrap folder {}", dir.display()))
            }
        }
    }
    bail!(
        "cannot create a private bootstrap folder under {}",
        std::env::temp_dir().display()
    )
}
