//! Injecting the agent into any Python command with no code change, the way
//! `opentelemetry-instrument` works: a `sitecustomize` on PYTHONPATH starts the agent from
//! NEUROGC_* variables before the program's own code runs. `neurogc run` execs a command with
//! it; `bench`/`collect --cmd` spawn the user's service with it (the same code, no flags to keep
//! in step).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use neurogc_core::policy::PolicySpec;

/// The bootstrap module, embedded so the binary needs no knowledge of where Python keeps packages.
const SITECUSTOMIZE: &str = include_str!("../../../python/neurogc/_bootstrap/sitecustomize.py");

/// The agent a command gets: validated, paths absolute, ready to [`Injection::apply`].
#[derive(Clone, Debug, PartialEq)]
pub struct Injection {
    policy: String,
    interval_s: f64,
    csv: Option<PathBuf>,
    gc_events_csv: Option<PathBuf>,
}

impl Injection {
    /// Checks everything up front, so a typo fails before the program starts, not inside it:
    /// the policy spec, the sample interval (0.001–3600 s), and the two CSV paths (made absolute,
    /// as the program may change directory; their folders created; never the same file). Errors
    /// name the flag (`--policy`, `--interval`, `--csv`, `--gc-events-csv`).
    pub fn new(
        policy: &str,
        interval_s: f64,
        csv: Option<&Path>,
        gc_events_csv: Option<&Path>,
    ) -> Result<Injection> {
        let spec = policy.parse::<PolicySpec>().map_err(anyhow::Error::new)?;
        // A model that cannot be loaded is an error here, naming the file, not a fallback
        // found later in the service's log.
        if spec.model_dir().is_some() {
            spec.build(policy)
                .map_err(|e| anyhow::anyhow!("--policy {policy:?}: {e}"))?;
        }
        if !interval_s.is_finite() || !(0.001..=3600.0).contains(&interval_s) {
            bail!("--interval must be between 0.001 and 3600 seconds, got {interval_s}");
        }
        let csv = csv.map(|p| absolute_writable_csv(p, "--csv")).transpose()?;
        let gc_events_csv = gc_events_csv
            .map(|p| absolute_writable_csv(p, "--gc-events-csv"))
            .transpose()?;
        if csv.is_some() && csv == gc_events_csv {
            bail!("--csv and --gc-events-csv must be different files");
        }
        Ok(Injection {
            policy: policy.trim().to_string(),
            interval_s,
            csv,
            gc_events_csv,
        })
    }

    /// Sets `command`'s environment so the Python it runs starts the agent: the bootstrap folder
    /// first on PYTHONPATH (written now), NEUROGC_* for the policy, interval and files.
    pub fn apply(&self, command: &mut Command) -> Result<()> {
        bootstrap_pythonpath(command)?;
        command
            .env("NEUROGC_POLICY", &self.policy)
            .env("NEUROGC_INTERVAL", self.interval_s.to_string());
        for (name, path) in [
            ("NEUROGC_CSV", &self.csv),
            ("NEUROGC_GC_EVENTS_CSV", &self.gc_events_csv),
        ] {
            match path {
                Some(path) => command.env(name, path),
                None => command.env_remove(name),
            };
        }
        Ok(())
    }
}

/// Puts the bootstrap folder (written now) first on `command`'s PYTHONPATH, before the
/// caller's own entries: the bootstrap then runs in the command's Python and does what the
/// NEUROGC_* variables say (`apply` sets the agent's; `neurogc sweep --step-function` sets
/// NEUROGC_STEP_FUNCTION only).
pub fn bootstrap_pythonpath(command: &mut Command) -> Result<()> {
    let bootstrap = write_bootstrap()?;
    let mut pythonpath = OsString::from(&bootstrap);
    if let Some(existing) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(existing);
    }
    command.env("PYTHONPATH", pythonpath);
    Ok(())
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
