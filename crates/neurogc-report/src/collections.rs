//! The collections each policy's servers ran in their measured windows: how many full ones met
//! requests in flight (a pause delays them), and, for the policies that record why they collect
//! (the GC events' `trigger`), per reason, the pause they predicted against the pause measured.

use std::collections::BTreeMap;
use std::fmt::Write;

use neurogc_core::gcstats::RecordedEvent;
use neurogc_core::policy::Trigger;
use neurogc_stats::median;

use crate::aggregate::Analysis;
use crate::format::{cell_text, num};
use crate::rundir::RunData;
use crate::trial::Usable;

/// A policy's collections of one reason.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerRow {
    pub trigger: Trigger,
    pub count: usize,
    /// Medians over the collections (None where none recorded it).
    pub in_flight: Option<f64>,
    pub predicted_ms: Option<f64>,
    pub measured_ms: f64,
    pub predicted_freed: Option<f64>,
    pub collected: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PolicyCollections {
    pub label: String,
    /// Full collections in the measured windows, all trials.
    pub full: usize,
    /// Of those, the ones that started with requests in flight (None: not recorded).
    pub full_met: Option<usize>,
    /// The median number of objects a full collection freed (None: none recorded it).
    pub full_collected: Option<f64>,
    /// Young and middle collections, and those of them that met requests.
    pub young: usize,
    pub young_met: Option<usize>,
    pub triggers: Vec<TriggerRow>,
    /// The longest collection the policy ran that says why (gc-events `why`): what set its
    /// worst pause, in its own words.
    pub longest: Option<Longest>,
}

/// One collection a policy ran, with its reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Longest {
    pub pause_ms: f64,
    pub predicted_ms: Option<f64>,
    pub collected: Option<u64>,
    pub in_flight: Option<u32>,
    pub why: String,
}

/// One entry per policy, in the analysis' order; policies without GC events are left out.
pub fn summarize(run: &RunData, a: &Analysis) -> Vec<PolicyCollections> {
    a.policies
        .iter()
        .filter_map(|p| {
            let windows: Vec<(u32, (f64, f64))> = p
                .trials
                .iter()
                .map(|&i| &a.trials[i])
                .filter(|m| m.usable != Usable::No)
                .filter_map(|m| m.window.map(|w| (m.repetition, w)))
                .collect();
            let mut events: Vec<&RecordedEvent> = Vec::new();
            let mut any = false;
            for t in run.trials.iter().filter(|t| t.label() == p.label) {
                let Some(evs) = &t.gc_events else { continue };
                any = true;
                let mine: Vec<(f64, f64)> = windows
                    .iter()
                    .filter(|(rep, _)| *rep == t.reference.repetition)
                    .map(|(_, w)| *w)
                    .collect();
                events.extend(
                    evs.iter()
                        .filter(|e| mine.iter().any(|&(s, end)| e.time >= s && e.time <= end)),
                );
            }
            any.then(|| of_events(&p.label, &events))
        })
        .collect()
}

fn of_events(label: &str, events: &[&RecordedEvent]) -> PolicyCollections {
    let (full, young): (Vec<&RecordedEvent>, Vec<&RecordedEvent>) =
        events.iter().partition(|e| e.generation == 2);
    let met = |evs: &[&RecordedEvent]| {
        evs.iter()
            .all(|e| e.in_flight.is_some())
            .then(|| evs.iter().filter(|e| e.in_flight > Some(0)).count())
    };
    let mut by_trigger: BTreeMap<&str, (Trigger, Vec<&RecordedEvent>)> = BTreeMap::new();
    for e in events {
        if let Some(t) = e.trigger {
            by_trigger
                .entry(t.as_str())
                .or_insert((t, vec![]))
                .1
                .push(e);
        }
    }
    let med = |xs: Vec<f64>| median(&xs).ok();
    let triggers = Trigger::ALL
        .iter()
        .filter_map(|t| by_trigger.get(t.as_str()))
        .map(|(trigger, evs)| TriggerRow {
            trigger: *trigger,
            count: evs.len(),
            in_flight: med(evs
                .iter()
                .filter_map(|e| e.in_flight)
                .map(f64::from)
                .collect()),
            predicted_ms: med(evs.iter().filter_map(|e| e.predicted_ms).collect()),
            measured_ms: med(evs.iter().map(|e| e.pause_ms).collect()).unwrap_or(0.0),
            predicted_freed: med(evs.iter().filter_map(|e| e.predicted_freed).collect()),
            collected: med(evs
                .iter()
                .filter_map(|e| e.collected)
                .map(|c| c as f64)
                .collect()),
        })
        .collect();
    PolicyCollections {
        label: label.to_string(),
        full: full.len(),
        full_met: met(&full),
        full_collected: med(full
            .iter()
            .filter_map(|e| e.collected)
            .map(|c| c as f64)
            .collect()),
        young: young.len(),
        young_met: met(&young),
        triggers,
        longest: events
            .iter()
            .filter(|e| !e.why.is_empty())
            .max_by(|a, b| a.pause_ms.total_cmp(&b.pause_ms))
            .map(|e| Longest {
                pause_ms: e.pause_ms,
                predicted_ms: e.predicted_ms,
                collected: e.collected,
                in_flight: e.in_flight,
                why: e.why.clone(),
            }),
    }
}

fn share(met: Option<usize>, of: usize) -> String {
    match met {
        Some(m) if of > 0 => format!("{m} ({:.0} %)", 100.0 * m as f64 / of as f64),
        Some(m) => m.to_string(),
        None => "not recorded".into(),
    }
}

/// The report's section; nothing when no policy has GC events.
pub fn section(md: &mut String, rows: &[PolicyCollections]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Collections: what they met, and why they ran\n\n\
         Every collection in the measured windows, all trials: those that started with requests \
         in flight delayed them (gc-events `in_flight`, where a middleware counts requests).\n\n\
         | policy | full collections | of them with requests in flight | young and middle | of them with requests in flight |\n\
         |---|---|---|---|---|"
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            cell_text(&r.label),
            r.full,
            share(r.full_met, r.full),
            r.young,
            share(r.young_met, r.young)
        );
    }
    md.push('\n');
    if rows.iter().all(|r| r.triggers.is_empty()) {
        return;
    }
    let _ = writeln!(
        md,
        "What the policies collected for (gc-events `trigger`), medians per reason: the pause a \
         policy predicted against the pause measured, and the objects it expected to free against \
         those freed.\n\n\
         | policy | trigger | collections | in flight | predicted ms | measured ms | predicted freed | objects freed |\n\
         |---|---|---|---|---|---|---|---|"
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_string(), num);
    // Medians of counts: whole, or halfway between two.
    let count = |v: Option<f64>| {
        v.map_or_else(
            || "–".to_string(),
            |x| {
                if x.fract() == 0.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x:.1}")
                }
            },
        )
    };
    for r in rows {
        for t in &r.triggers {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                cell_text(&r.label),
                t.trigger.as_str(),
                t.count,
                count(t.in_flight),
                ms(t.predicted_ms),
                num(t.measured_ms),
                count(t.predicted_freed.map(f64::round)),
                count(t.collected)
            );
        }
    }
    md.push('\n');
    if rows.iter().all(|r| r.longest.is_none()) {
        return;
    }
    let _ = writeln!(
        md,
        "The longest collection each policy ran, and why (gc-events `why`: the need and the \
         moment, as the policy gave them):\n"
    );
    for r in rows {
        let Some(l) = &r.longest else { continue };
        let predicted = l
            .predicted_ms
            .map_or(String::new(), |p| format!(", predicted {} ms", num(p)));
        let freed = l
            .collected
            .map_or(String::new(), |n| format!(", freed {n} objects"));
        let in_flight = l
            .in_flight
            .map_or(String::new(), |n| format!(", {n} in flight"));
        let _ = writeln!(
            md,
            "- {}: {} ms{predicted}{freed}{in_flight}: {}",
            cell_text(&r.label),
            num(l.pause_ms),
            l.why
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(generation: u8, in_flight: Option<u32>, trigger: Option<Trigger>) -> RecordedEvent {
        RecordedEvent {
            time: 1.0,
            generation,
            pause_ms: 10.0,
            collected: Some(100),
            reason: if trigger.is_some() {
                "policy"
            } else {
                "runtime"
            }
            .into(),
            in_flight,
            trigger,
            pid: None,
            predicted_ms: trigger.map(|_| 8.0),
            predicted_freed: trigger.map(|_| 90.0),
            why: trigger.map_or(String::new(), |t| format!("{}: because", t.as_str())),
        }
    }

    #[test]
    fn counts_what_met_requests_and_groups_by_trigger() {
        let evs = [
            ev(2, Some(0), Some(Trigger::Quiet)),
            ev(2, Some(3), Some(Trigger::Due)),
            ev(2, Some(0), Some(Trigger::Quiet)),
            ev(0, Some(1), None),
            ev(1, Some(0), None),
        ];
        let refs: Vec<&RecordedEvent> = evs.iter().collect();
        let c = of_events("neurogc", &refs);
        assert_eq!(
            (c.full, c.full_met, c.young, c.young_met),
            (3, Some(1), 2, Some(1))
        );
        let t: Vec<(Trigger, usize)> = c.triggers.iter().map(|t| (t.trigger, t.count)).collect();
        assert_eq!(t, [(Trigger::Due, 1), (Trigger::Quiet, 2)]);
        assert_eq!(c.triggers[1].predicted_ms, Some(8.0));
        assert_eq!(c.triggers[1].in_flight, Some(0.0));
        let mut md = String::new();
        section(&mut md, &[c]);
        assert!(
            md.contains("| neurogc | 3 | 1 (33 %) | 2 | 1 (50 %) |"),
            "{md}"
        );
        assert!(
            md.contains("| neurogc | quiet | 2 | 0 | 8.00 | 10.00 | 90 | 100 |"),
            "{md}"
        );
        // The longest with a reason: the due one, made longer here.
        let mut evs = evs;
        evs[1].pause_ms = 40.0;
        let refs: Vec<&RecordedEvent> = evs.iter().collect();
        let mut md = String::new();
        section(&mut md, &[of_events("neurogc", &refs)]);
        assert!(
            md.contains(
                "- neurogc: 40.00 ms, predicted 8.00 ms, freed 100 objects, 3 in flight: due: because"
            ),
            "{md}"
        );
    }

    #[test]
    fn unrecorded_in_flight_is_said_not_zero() {
        let evs = [ev(2, None, None)];
        let refs: Vec<&RecordedEvent> = evs.iter().collect();
        let c = of_events("default", &refs);
        assert_eq!(c.full_met, None);
        let mut md = String::new();
        section(&mut md, &[c]);
        assert!(
            md.contains("| default | 1 | not recorded | 0 | 0 |"),
            "{md}"
        );
        assert!(!md.contains("trigger |"), "{md}");
        assert!(!md.contains("and why (gc-events `why`"), "{md}");
    }
}
