//! The `/metrics` exposition, parsed by a strict OpenMetrics parser (never grepped).

use std::collections::BTreeMap;

use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};

/// Sample values by (metric family, its labels as `k=v,k=v` sorted); a histogram gives its count,
/// and its sum as `<family>_sum`.
pub type Samples = BTreeMap<(String, String), f64>;

pub fn parse(text: &str) -> Samples {
    let exposition: MetricsExposition<OpenMetricsType, OpenMetricsValue> =
        openmetrics_parser::openmetrics::parse_openmetrics(text)
            .unwrap_or_else(|e| panic!("not OpenMetrics text ({e:?}):\n{text}"));
    let mut out = Samples::new();
    for (name, family) in &exposition.families {
        let names = family.get_label_names().to_vec();
        for sample in family.iter_samples() {
            let labelset = sample.get_labelset().expect("labels");
            let mut labels: Vec<String> = names
                .iter()
                .map(|n| format!("{n}={}", labelset.get_label_value(n).unwrap_or_default()))
                .collect();
            labels.sort();
            let value = match &sample.value {
                OpenMetricsValue::Counter(c) => c.value.as_f64(),
                OpenMetricsValue::Gauge(g) => g.as_f64(),
                // An info metric's sample is its labels; its value is 1.
                OpenMetricsValue::Info => 1.0,
                OpenMetricsValue::Histogram(h) => {
                    let sum = h.sum.as_ref().map_or(0.0, |s| s.as_f64());
                    out.insert((format!("{name}_sum"), labels.join(",")), sum);
                    h.count.unwrap_or_default() as f64
                }
                other => panic!("{name}: unexpected sample {other:?}"),
            };
            out.insert((name.clone(), labels.join(",")), value);
        }
    }
    out
}

pub fn get(samples: &Samples, family: &str, labels: &str) -> f64 {
    samples
        .get(&(family.to_string(), labels.to_string()))
        .copied()
        .unwrap_or(0.0)
}

/// Every sample of `family`, as `labels -> value`.
pub fn family(samples: &Samples, family: &str) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter(|((f, _), _)| f == family)
        .map(|((_, l), v)| (l.clone(), *v))
        .collect()
}
