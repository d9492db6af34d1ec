//! `--policy [LABEL=]SPEC`: checked before anything starts (a typo or a missing model is an
//! error in milliseconds, not after a warm-up), labelled for tables and file names.

use std::path::Path;

use anyhow::{bail, Context, Result};
use neurogc_core::policy::PolicySpec;
use neurogc_model::ModelMeta;
use neurogc_record::PolicyEntry;

/// A policy to bench.
#[derive(Clone, Debug)]
pub struct Policy {
    pub label: String,
    /// The spec as the server gets it (a model directory made absolute).
    pub spec: String,
    pub model: Option<ModelMeta>,
}

impl Policy {
    pub fn entry(&self) -> PolicyEntry {
        PolicyEntry {
            label: self.label.clone(),
            spec: self.spec.clone(),
            model: self.model.clone(),
        }
    }
}

/// Parses, validates (loading models) and labels `--policy` values; labels are unique.
pub fn parse_all(texts: &[String]) -> Result<Vec<Policy>> {
    if texts.is_empty() {
        bail!(
            "give at least one --policy (e.g. --policy default --policy neurogc-seed:models/lstm)"
        );
    }
    let mut out: Vec<Policy> = Vec::new();
    for text in texts {
        let mut p = parse_one(text)?;
        let base = p.label.clone();
        let mut n = 2;
        while out.iter().any(|q| q.label == p.label) {
            p.label = format!("{base}-{n}");
            n += 1;
        }
        out.push(p);
    }
    Ok(out)
}

fn parse_one(text: &str) -> Result<Policy> {
    let (label, spec_text) = match text.split_once('=') {
        Some((l, s)) if !l.is_empty() && !l.contains([':', ',']) => (Some(l.trim()), s.trim()),
        _ => (None, text.trim()),
    };
    let spec: PolicySpec = spec_text
        .parse()
        .map_err(|e| anyhow::anyhow!("--policy {text:?}: {e}"))?;
    spec.build(spec_text)
        .map_err(|e| anyhow::anyhow!("--policy {text:?}: {e}"))?;
    let (spec_text, model, default_label) = match &spec {
        PolicySpec::NeurogcSeed {
            dir,
            threshold,
            stagger,
        } => {
            let abs = std::path::absolute(dir)
                .with_context(|| format!("--policy {text:?}: bad model path"))?;
            let mut s = format!("neurogc-seed:{}", abs.display());
            if let Some(t) = threshold {
                s.push_str(&format!(",threshold={t}"));
            }
            if *stagger {
                s.push_str(",stagger=on");
            }
            (s, read_model_json(&abs), "neurogc-seed".to_string())
        }
        PolicySpec::Neurogc {
            model: Some(dir), ..
        } => {
            let abs = std::path::absolute(dir)
                .with_context(|| format!("--policy {text:?}: bad model path"))?;
            // The options after the directory stay as they were given.
            let options = spec_text
                .split_once(',')
                .map_or(String::new(), |(_, o)| format!(",{o}"));
            (
                format!("neurogc:{}{options}", abs.display()),
                None,
                "neurogc-model".to_string(),
            )
        }
        _ => (spec_text.to_string(), None, spec_text.to_string()),
    };
    Ok(Policy {
        label: label.map_or(default_label, str::to_string),
        spec: spec_text,
        model,
    })
}

fn read_model_json(dir: &Path) -> Option<ModelMeta> {
    let text = std::fs::read_to_string(dir.join("model.json")).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_explicit_labels_win() {
        let ps = parse_all(&[
            "default".into(),
            "default".into(),
            "fast=threshold:5000".into(),
        ])
        .unwrap();
        let labels: Vec<_> = ps.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["default", "default-2", "fast"]);
        assert_eq!(ps[2].spec, "threshold:5000");
    }

    #[test]
    fn bad_specs_and_missing_models_are_errors_naming_the_input() {
        let e = parse_all(&["bogus".into()]).unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = parse_all(&["neurogc-seed:/nonexistent/model".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/model"), "{e}");
        let e = parse_all(&["neurogc:/nonexistent/sched,warmup=5s".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/sched") && e.contains("not found"),
            "{e}"
        );
        assert!(parse_all(&[]).is_err());
    }
}
