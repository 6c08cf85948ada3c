use super::*;

#[test]
fn floats_convert_to_milli_exactly() {
    let v: Value = serde_json::from_str("0.1").unwrap();
    assert_eq!(milli(&v).unwrap(), Milli(100));
    let v: Value = serde_json::from_str("2.675").unwrap();
    assert_eq!(milli(&v).unwrap(), Milli(2675));
    assert!(milli(&Value::Bool(true)).unwrap_err().contains("a boolean"));
}
