//! The configurations a sweep runs: step policy specs of `neurogc.training`, as a list.
//!
//! `--configs default,disable,every:100,every:1000,gen=2` is five configurations: a policy's own
//! options (`gen=2`, `rss=8G`, …) are `KEY=VALUE` items that belong to the configuration before
//! them, so the list reads as the specs are written. The specs are checked by the step hook's
//! own parser (`python -m neurogc.training validate`) in the interpreter that runs the script,
//! before anything runs: one grammar, in one place.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The configurations swept when `--configs` is not given: CPython as is; automatic collection
/// off with only the memory guard; torchtitan's cadence (`gc.collect(1)` every N steps, here
/// 50); Megatron's `--manual-gc` (a full collection every N steps, here 100);
/// a freeze after 10 warm-up steps; the learned policy.
pub const DEFAULT_CONFIGS: &str =
    "default,disable,every:50,gen=1,every:100,gen=2,freeze:10,learned";

/// The configuration the others are compared with: `default` when swept, else the first.
pub fn baseline<S: AsRef<str>>(names: &[S]) -> usize {
    names
        .iter()
        .position(|n| n.as_ref() == "default")
        .unwrap_or(0)
}

/// `--aa`'s second copy of the baseline: the same policy under another name, so that its runs
/// are compared with the baseline's like any configuration's, as two identical ones.
pub fn aa_name(baseline: &str) -> String {
    format!("{baseline} (A/A)")
}

/// Splits a `--configs` list into specs: an item with `=` continues the spec before it.
/// Errors name the item.
pub fn split(list: &str) -> Result<Vec<String>> {
    let mut specs: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            bail!("--configs {list:?}: an empty item (two commas, or one at an end)");
        }
        if item.contains('=') && !item.contains(':') {
            match specs.last_mut() {
                Some(last) => {
                    last.push(',');
                    last.push_str(item);
                }
                None => bail!(
                    "--configs {list:?}: {item:?} is an option of a configuration (as in \
                     every:100,{item}) but comes first"
                ),
            }
        } else {
            specs.push(item.to_string());
        }
    }
    Ok(specs)
}

/// The interpreter that checks the specs: the command's program when it is a Python, else
/// `python3` from PATH.
pub fn checking_python(program: &OsStr) -> &OsStr {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if name.starts_with("python") {
        program
    } else {
        OsStr::new("python3")
    }
}

/// Checks every spec with the step hook's parser in `python`; returns them as the hook names
/// them (its CSV's `policy` column). Errors name the bad spec, or say that `python` cannot run
/// the hook (neurogc not installed in it).
pub fn validate(python: &OsStr, specs: &[String]) -> Result<Vec<String>> {
    let out = Command::new(python)
        .args(["-m", "neurogc.training", "validate"])
        .args(specs)
        .env_remove("NEUROGC_STEP_POLICY")
        .output()
        .with_context(|| {
            format!(
                "cannot run {} to check the configurations",
                Path::new(python).display()
            )
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stderr.contains("No module named neurogc") {
            bail!(
                "{} cannot import neurogc.training: install neurogc into the interpreter that \
                 runs the script (pip install neurogc)",
                Path::new(python).display()
            );
        }
        let bad: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("python -m neurogc.training: "))
            .collect();
        if bad.is_empty() {
            bail!(
                "checking --configs with {} failed: {}",
                Path::new(python).display(),
                stderr.trim()
            );
        }
        bail!("unknown configuration in --configs: {}", bad.join("; "));
    }
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if names.len() != specs.len() {
        bail!(
            "checking --configs with {}: {} specs in, {} names out",
            Path::new(python).display(),
            specs.len(),
            names.len()
        );
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            bail!("--configs names {n:?} twice");
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_belong_to_the_configuration_before_them() {
        assert_eq!(
            split("default,disable,every:100,every:1000,gen=2").unwrap(),
            ["default", "disable", "every:100", "every:1000,gen=2"]
        );
        assert_eq!(
            split(DEFAULT_CONFIGS).unwrap(),
            [
                "default",
                "disable",
                "every:50,gen=1",
                "every:100,gen=2",
                "freeze:10",
                "learned"
            ]
        );
        assert_eq!(
            split(" learned , budget=0.1,rss=2G ").unwrap(),
            ["learned,budget=0.1,rss=2G"]
        );
        assert!(split("gen=2,default")
            .unwrap_err()
            .to_string()
            .contains("\"gen=2\""));
        assert!(split("default,,learned").is_err());
    }

    #[test]
    fn the_baseline_is_default_when_swept_and_its_aa_copy_is_named_apart() {
        assert_eq!(baseline(&["every:100", "default", "learned"]), 1);
        assert_eq!(baseline(&["every:100", "learned"]), 0);
        assert_eq!(aa_name("default"), "default (A/A)");
        assert_ne!(neurogc_units::slug(&aa_name("default")), "default");
    }

    #[test]
    fn the_checking_interpreter_is_the_commands_python() {
        assert_eq!(
            checking_python(OsStr::new("/v/bin/python3.11")),
            "/v/bin/python3.11"
        );
        assert_eq!(checking_python(OsStr::new("python")), "python");
        assert_eq!(checking_python(OsStr::new("torchrun")), "python3");
    }
}
