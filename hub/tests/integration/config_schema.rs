//! `config-schema`: the engine's JSON Schema of the values it reads, printed whole; the Helm
//! chart's `values.schema.json` embeds its `custom` part exactly (regenerate with
//! `quota-hub config-schema --into-chart deploy/helm/quota-hub/values.schema.json`). What the
//! schema says is held to the engine's reader by `python/tests/test_config_schema.py`.

use crate::common;

use common::{cli, workspace};
use serde_json::Value;

#[test]
fn the_charts_schema_embeds_the_engines_custom_schema_exactly() {
    let (code, out, err) = cli(&["config-schema"]);
    assert_eq!(code, 0, "{err}");
    let engine: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(engine["$schema"], "http://json-schema.org/draft-07/schema#");
    assert!(engine["properties"]["custom"]["properties"]["quota"]["properties"]["groups"].is_object());
    let chart_path = workspace().join("deploy/helm/quota-hub/values.schema.json");
    let chart: Value =
        serde_json::from_str(&std::fs::read_to_string(&chart_path).expect("chart schema")).expect("JSON");
    assert_eq!(
        chart["properties"]["custom"],
        engine["properties"]["custom"],
        "the chart's schema has drifted from the engine's: run quota-hub config-schema --into-chart {}",
        chart_path.display()
    );
}

#[test]
fn into_chart_replaces_only_custom() {
    let dir = tempfile::tempdir().expect("dir");
    let chart = dir.path().join("values.schema.json");
    std::fs::write(
        &chart,
        r#"{"type": "object", "properties": {"replicas": {"type": "integer"}, "custom": {"type": "object"}}}"#,
    )
    .expect("write");
    let (code, _, err) = cli(&["config-schema", "--into-chart", &chart.to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&chart).expect("read")).expect("JSON");
    assert_eq!(
        doc["properties"]["replicas"],
        serde_json::json!({"type": "integer"})
    );
    assert!(doc["properties"]["custom"]["properties"]["accelerators"].is_object());
    std::fs::write(&chart, r#"{"properties": {}}"#).expect("write");
    let (code, _, err) = cli(&["config-schema", "--into-chart", &chart.to_string_lossy()]);
    assert_ne!(code, 0);
    assert!(err.contains("no properties.custom to replace"), "{err}");
}
