//! The OpenAPI document (`core/src/api/openapi.json`) against the route table it describes: every
//! documented engine path is a route answering exactly the documented methods, every operation a
//! client can call has a scenario that exercises it successfully, and the engine serves the document
//! at `/api/quota/openapi.json` to anyone. (Every scenario exchange is validated against it by
//! `quota_scenarios::replay`.)

use std::collections::BTreeSet;

use quota_core::api::{route_methods, route_template, Request, OPENAPI_JSON};
use quota_core::{handle_request, Config, MemStore, Timestamp};
use serde_json::Value;

fn doc() -> Value {
    serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON")
}

/// A concrete path for a template: `{name}` -> `alice`, `{id}` -> `7`.
fn sample(template: &str) -> String {
    template.replace("{name}", "alice").replace("{id}", "7")
}

fn engine_paths(doc: &Value) -> Vec<(String, Value)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, item)| {
            item.as_object().unwrap().values().any(|op| {
                op["tags"]
                    .as_array()
                    .is_some_and(|t| t.contains(&Value::from("quota")))
            })
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn methods(item: &Value) -> BTreeSet<String> {
    item.as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "parameters")
        .map(|k| k.to_ascii_uppercase())
        .collect()
}

#[test]
fn every_documented_engine_path_is_a_route_with_exactly_its_methods() {
    let doc = doc();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = engine_paths(&doc);
    assert!(paths.len() >= 14, "{} engine paths", paths.len());
    let mut templates = BTreeSet::new();
    for (template, item) in &paths {
        let concrete = sample(template);
        let routed = route_template(&concrete).unwrap_or_else(|| panic!("{template}: no route"));
        templates.insert(routed);
        let deprecated = item
            .as_object()
            .unwrap()
            .values()
            .any(|op| op["deprecated"] == true);
        if !deprecated {
            assert_eq!(routed, template, "{template} routes as {routed}");
        }
        let engine: BTreeSet<String> = route_methods(&concrete)
            .unwrap()
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert_eq!(
            engine,
            methods(item),
            "{template}: the engine's methods and the document's differ"
        );
    }
    // And the other way: a route the engine has that the document lacks would show here as a
    // template without its own path (the legacy aliases route to documented templates).
    let documented: BTreeSet<&str> = paths.iter().map(|(t, _)| t.as_str()).collect();
    for t in &templates {
        assert!(
            documented.contains(t),
            "the engine routes {t}, which is not documented"
        );
    }
}

#[test]
fn every_operation_is_named_and_documents_its_refusals() {
    let doc = doc();
    let mut ids = BTreeSet::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != "parameters")
        {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {template}: no operationId"));
            assert!(ids.insert(id.to_string()), "operationId {id} twice");
            let responses = op["responses"].as_object().unwrap();
            let secured = op["security"].as_array().is_none_or(|s| !s.is_empty());
            if secured {
                for code in ["401", "403"] {
                    assert!(responses.contains_key(code), "{method} {template}: no {code}");
                }
            }
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("413"), "{method} {template}: no 413");
            }
        }
    }
}

#[test]
fn every_reference_resolves() {
    let doc = doc();
    fn walk(v: &Value, doc: &Value) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    let ptr = r.strip_prefix('#').unwrap_or_else(|| panic!("{r}: not local"));
                    assert!(doc.pointer(ptr).is_some(), "{r} resolves to nothing");
                }
                m.values().for_each(|x| walk(x, doc));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, doc)),
            _ => {}
        }
    }
    walk(&doc, &doc);
}

#[test]
fn every_engine_operation_succeeds_in_some_scenario() {
    // (method, template) of every 2xx exchange of every scenario.
    let mut seen = BTreeSet::new();
    for file in quota_scenarios::files(&quota_scenarios::scenario_dir()).unwrap() {
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let r = quota_scenarios::replay(&mut quota_scenarios::NativeHost::default(), &scenario).unwrap();
        for x in r.transcript {
            let (method, target) = x.request.split_once(' ').unwrap();
            let path = target.split('?').next().unwrap();
            if (200..300).contains(&x.status) {
                if let Some(t) = quota_scenarios::openapi_check::template_of(path) {
                    seen.insert(format!("{method} {t}"));
                }
            }
        }
    }
    let doc = doc();
    let mut missing = Vec::new();
    for (template, item) in engine_paths(&doc) {
        for m in methods(&item) {
            let key = format!("{m} {template}");
            if !seen.contains(&key) {
                missing.push(key);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no scenario exercises these successfully: {missing:?}"
    );
}

#[test]
fn the_document_is_served_to_anyone_and_only_read() {
    let config = Config::from_values(&quota_scenarios::fixture_values()).unwrap();
    let mut store = MemStore::new();
    let now = Timestamp(1_795_341_600);
    let ask = |store: &mut MemStore, method: &str, query: &str| {
        let req = Request {
            method,
            path: "/api/quota/openapi.json",
            query,
            body: "",
            caller: None,
        };
        handle_request(&config, store, &req, now).unwrap().answer
    };
    let r = ask(&mut store, "GET", "");
    assert_eq!((r.status, r.body.as_str()), (200, OPENAPI_JSON));
    assert_eq!(ask(&mut store, "POST", "").status, 405);
    let r = ask(&mut store, "GET", "x=1");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("x: unknown query parameter"), "{}", r.body);
}
