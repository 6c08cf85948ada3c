//! CSV files for `set-quota -f` / `add-quota -f`: a header `username[,quota]`, one user per row.
//! The whole file is read and checked before anything is written.

use std::path::Path;

/// One user to change, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub username: String,
    pub amount: i64,
    /// 1-based line in the file; 0 for command-line arguments.
    pub line: u64,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub entries: Vec<Entry>,
    /// Rows skipped, each as a message naming its line.
    pub warnings: Vec<String>,
}

/// Reads `path`. `use_quota_column`: per-row quotas win over `default_amount` (set-quota); when
/// false the column is ignored and `default_amount` applies to every row (add-quota).
pub fn read(path: &Path, default_amount: Option<i64>, use_quota_column: bool) -> Result<Parsed, String> {
    let text = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("standard input: {e}"))?;
        buf
    } else {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?
    };
    parse(&text, default_amount, use_quota_column).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(text: &[u8], default_amount: Option<i64>, use_quota_column: bool) -> Result<Parsed, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text);
    let headers = rdr
        .headers()
        .map_err(|e| format!("line 1: {e}"))?
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect::<Vec<_>>();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let user_col = col("username").ok_or("line 1: the header must have a `username` column")?;
    let quota_col = col("quota");
    if let Some(other) = headers.iter().find(|h| *h != "username" && *h != "quota") {
        return Err(format!(
            "line 1: unknown column `{other}` (the header is `username[,quota]`)"
        ));
    }
    // The reader's own line count skips blank lines; count newlines up to the record instead.
    let line_at = |byte: u64| {
        let mut end = usize::try_from(byte).unwrap_or(usize::MAX).min(text.len());
        // A record's position may be that of the blank lines the reader skipped before it.
        while end < text.len() && (text[end] == b'\n' || text[end] == b'\r') {
            end += 1;
        }
        text[..end].iter().filter(|&&b| b == b'\n').count() as u64 + 1
    };
    let mut out = Parsed::default();
    for record in rdr.records() {
        let record = record.map_err(|e| match e.position() {
            Some(p) => format!("line {}: {e}", line_at(p.byte())),
            None => e.to_string(),
        })?;
        let line = record.position().map(|p| line_at(p.byte())).unwrap_or(0);
        if record.iter().all(str::is_empty) {
            continue; // a blank line
        }
        let username = record.get(user_col).unwrap_or("").trim().to_lowercase();
        if username.is_empty() {
            return Err(format!("line {line}: username is empty"));
        }
        let row_quota = match quota_col.and_then(|c| record.get(c)).filter(|q| !q.is_empty()) {
            Some(q) if use_quota_column => Some(
                q.parse::<i64>()
                    .map_err(|_| format!("line {line}: quota `{q}` is not a whole number"))?,
            ),
            _ => None,
        };
        match row_quota.or(default_amount) {
            Some(amount) => out.entries.push(Entry {
                username,
                amount,
                line,
            }),
            None => out.warnings.push(format!(
                "line {line}: {username} has no quota and no --amount was given; skipped"
            )),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(u: &str, a: i64, line: u64) -> Entry {
        Entry {
            username: u.into(),
            amount: a,
            line,
        }
    }

    #[test]
    fn per_row_quota_wins_and_missing_ones_fall_back_or_are_skipped() {
        let csv = b"username,quota\n Alice ,50\nbob,\ncarol,7\n";
        let p = parse(csv, Some(10), true).unwrap();
        assert_eq!(
            p.entries,
            vec![e("alice", 50, 2), e("bob", 10, 3), e("carol", 7, 4)]
        );
        let p = parse(csv, None, true).unwrap();
        assert_eq!(p.entries, vec![e("alice", 50, 2), e("carol", 7, 4)]);
        assert_eq!(
            p.warnings,
            vec!["line 3: bob has no quota and no --amount was given; skipped"]
        );
    }

    #[test]
    fn add_ignores_the_quota_column() {
        let p = parse(b"username,quota\nalice,50\n", Some(3), false).unwrap();
        assert_eq!(p.entries, vec![e("alice", 3, 2)]);
    }

    #[test]
    fn username_only_files_use_the_amount() {
        let p = parse(b"username\nalice\n\nbob\n", Some(4), true).unwrap();
        assert_eq!(p.entries, vec![e("alice", 4, 2), e("bob", 4, 4)]);
    }

    #[test]
    fn malformed_files_are_refused_with_the_line() {
        for (csv, msg) in [
            (
                &b"name,quota\nalice,1\n"[..],
                "line 1: the header must have a `username` column",
            ),
            (b"username,quota,extra\nalice,1,2\n", "unknown column `extra`"),
            (
                b"username,quota\nalice,1\nbob,x\n",
                "line 3: quota `x` is not a whole number",
            ),
            (b"username,quota\nalice,1,9\n", "line 2"),
            (b"username,quota\n,5\n", "line 2: username is empty"),
            (b"username,quota\nalice,1\n\n\nbob,x\n", "line 5: quota `x`"),
        ] {
            let err = parse(csv, Some(1), true).unwrap_err();
            assert!(err.contains(msg), "{err} lacks {msg}");
        }
    }
}
