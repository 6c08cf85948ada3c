use super::*;

#[test]
fn floats_convert_to_milli_exactly() {
    let v: Value = serde_json::from_str("0.1").unwrap();
    assert_eq!(milli(&v).unwrap(), Milli(100));
    let v: Value = serde_json::from_str("2.675").unwrap();
    assert_eq!(milli(&v).unwrap(), Milli(2675));
    assert!(milli(&Value::Bool(true)).unwrap_err().contains("a boolean"));
}

#[test]
fn integers_and_strings_are_written_as_json() {
    for v in [0, 7, -7, 1234567890, i64::MAX, i64::MIN, -(1 << 53) + 1] {
        let mut out = String::new();
        push_int(&mut out, v);
        assert_eq!(out, v.to_string());
    }
    let text = "a\"b\\c\nd\r\te\u{1}\u{1f}é✓";
    let mut out = String::new();
    push_string(&mut out, text);
    assert_eq!(out, serde_json::to_string(text).unwrap());
    assert_eq!(serde_json::from_str::<String>(&out).unwrap(), text);
}
