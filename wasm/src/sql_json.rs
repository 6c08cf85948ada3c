//! The bridge's wire format: statement parameters and result rows as JSON text.
//!
//! Every value the engine stores is an integer within +-(2^53-1), a string or null (flags are 0/1),
//! so JSON carries it exactly to every host (JavaScript numbers included). Parameters are written
//! by hand and rows are read straight into [`Cell`]s: no intermediate JSON tree either way.

use quota_core::StoreError;

/// The largest magnitude a value may have on the wire: 2^53 - 1.
pub const JSON_INT_MAX: i64 = quota_core::limits::JSON_INT_ABS_MAX;

/// One statement's parameters (a JSON array), or the rows of a bulk write (an array of arrays).
#[derive(Default)]
pub struct Params {
    text: String,
    /// Values in the current row (for the commas).
    in_row: usize,
    rows: usize,
}

impl Params {
    pub fn new() -> Params {
        Params {
            text: String::from("["),
            in_row: 0,
            rows: 0,
        }
    }

    fn sep(&mut self) {
        if self.in_row > 0 {
            self.text.push(',');
        }
        self.in_row += 1;
    }

    pub fn int(mut self, v: i64) -> Result<Params, StoreError> {
        self.push_int(v)?;
        Ok(self)
    }

    pub fn text(mut self, v: &str) -> Params {
        self.push_text(v);
        self
    }

    pub fn opt_text(mut self, v: Option<&str>) -> Params {
        match v {
            Some(s) => self.push_text(s),
            None => self.push_null(),
        }
        self
    }

    pub fn opt_int(mut self, v: Option<i64>) -> Result<Params, StoreError> {
        match v {
            Some(i) => self.push_int(i)?,
            None => self.push_null(),
        }
        Ok(self)
    }

    pub fn flag(mut self, v: bool) -> Params {
        self.sep();
        self.text.push(if v { '1' } else { '0' });
        self
    }

    pub fn push_int(&mut self, v: i64) -> Result<(), StoreError> {
        if !(-JSON_INT_MAX..=JSON_INT_MAX).contains(&v) {
            return Err(StoreError(format!(
                "value {v} is outside +-(2^53-1) and cannot be stored exactly"
            )));
        }
        self.sep();
        quota_sql_wire::push_int(&mut self.text, v);
        Ok(())
    }

    pub fn push_null(&mut self) {
        self.sep();
        self.text.push_str("null");
    }

    pub fn push_text(&mut self, s: &str) {
        self.sep();
        quota_sql_wire::push_string(&mut self.text, s);
    }

    /// Starts a row of a bulk write (the text becomes an array of arrays).
    pub fn begin_row(&mut self) {
        if self.rows > 0 {
            self.text.push(',');
        }
        self.text.push('[');
        self.rows += 1;
        self.in_row = 0;
    }

    pub fn end_row(&mut self) {
        self.text.push(']');
    }

    pub fn finish(mut self) -> String {
        self.text.push(']');
        self.text
    }
}

pub use quota_sql_wire::SqlCell as Cell;

/// The rows of a query: arrays of column values.
pub fn rows(json: &str) -> Result<Vec<Vec<Cell>>, StoreError> {
    serde_json::from_str(json).map_err(|e| {
        StoreError(format!(
            "the host's rows are not arrays of integers, strings or null: {e}"
        ))
    })
}

/// One row's columns, read in order with the column's name for messages.
pub struct Columns<'a> {
    row: &'a mut [Cell],
    table: &'static str,
}

impl<'a> Columns<'a> {
    pub fn new(row: &'a mut [Cell], table: &'static str, expected: usize) -> Result<Columns<'a>, StoreError> {
        if row.len() != expected {
            return Err(StoreError(format!(
                "{table}: a row has {} columns, expected {expected}",
                row.len()
            )));
        }
        Ok(Columns { row, table })
    }

    fn bad(&self, i: usize, what: &str) -> StoreError {
        StoreError(format!(
            "{}: column {i} is {}, expected {what}",
            self.table, self.row[i]
        ))
    }

    pub fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.row[i].as_int().ok_or_else(|| self.bad(i, "an integer"))
    }

    pub fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match &self.row[i] {
            Cell::Null => Ok(None),
            _ => self.int(i).map(Some),
        }
    }

    pub fn flag(&self, i: usize) -> Result<bool, StoreError> {
        match self.int(i)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.bad(i, "0 or 1")),
        }
    }

    /// The string in column `i`, taken out of the row (no copy).
    pub fn text(&mut self, i: usize) -> Result<String, StoreError> {
        match std::mem::replace(&mut self.row[i], Cell::Null) {
            Cell::Text(s) => Ok(s),
            other => {
                self.row[i] = other;
                Err(self.bad(i, "a string"))
            }
        }
    }

    pub fn opt_text(&mut self, i: usize) -> Result<Option<String>, StoreError> {
        match &self.row[i] {
            Cell::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_exact_json() {
        let p = Params::new()
            .int(-42)
            .unwrap()
            .text("a\"b\\c\n\u{1}é")
            .opt_text(None)
            .flag(true)
            .finish();
        assert_eq!(p, r#"[-42,"a\"b\\c\n\u0001é",null,1]"#);
        let v: serde_json::Value = serde_json::from_str(&p).unwrap();
        assert_eq!(v[1], "a\"b\\c\n\u{1}é");
    }

    #[test]
    fn values_beyond_two_to_the_53_are_refused() {
        assert!(Params::new().int(JSON_INT_MAX).is_ok());
        assert!(Params::new().int(JSON_INT_MAX + 1).is_err());
        assert!(Params::new().int(-JSON_INT_MAX - 1).is_err());
    }

    #[test]
    fn bulk_rows_are_an_array_of_arrays() {
        let mut p = Params::new();
        for i in 0..2 {
            p.begin_row();
            p.push_int(i).unwrap();
            p.push_text("x");
            p.end_row();
        }
        assert_eq!(p.finish(), r#"[[0,"x"],[1,"x"]]"#);
    }

    #[test]
    fn rows_are_checked_column_by_column() {
        let mut r = rows(r#"[[1,"a",null,"x"]]"#).unwrap();
        let mut c = Columns::new(&mut r[0], "t", 4).unwrap();
        assert_eq!(c.int(0).unwrap(), 1);
        assert_eq!(c.text(1).unwrap(), "a");
        assert_eq!(c.opt_int(2).unwrap(), None);
        assert!(c.int(3).unwrap_err().0.contains("column 3"));
        assert!(Columns::new(&mut r[0], "t", 3).is_err());
        assert!(
            rows("[[1.5]]").is_err(),
            "floats are not values the engine stores"
        );
        assert!(rows("[[true]]").is_err());
    }
}
