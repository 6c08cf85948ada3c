//! What an admin types into a quota field (the admin page's inline edit and batch input), read the
//! same way in every host: `-1`, `∞` or `unlimited` (any case) mean no limit; a whole number from 0
//! sets the balance; anything else is refused with a message and nothing is sent.

use crate::error::QuotaError;
use crate::limits;

/// A quota field's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaInput {
    /// Mark the user unlimited.
    Unlimited,
    /// Set the balance (and clear the unlimited flag).
    Set(i64),
}

/// Reads a quota field (`field` names it in the message).
pub fn parse_quota_input(field: &str, text: &str) -> Result<QuotaInput, QuotaError> {
    let t = text.trim();
    if t == "-1" || t == "∞" || t.eq_ignore_ascii_case("unlimited") {
        return Ok(QuotaInput::Unlimited);
    }
    let refused = || {
        QuotaError::invalid(
            field,
            format!(
                "must be a whole number from 0 to {}, or -1, ∞ or unlimited for no limit; got `{t}`",
                limits::AMOUNT_ABS_MAX
            ),
        )
    };
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    match t.parse::<i64>() {
        Ok(n) if n <= limits::AMOUNT_ABS_MAX => Ok(QuotaInput::Set(n)),
        _ => Err(refused()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_tokens_in_any_case() {
        for t in ["-1", "∞", "unlimited", "UNLIMITED", " Unlimited ", " ∞"] {
            assert_eq!(
                parse_quota_input("quota", t).unwrap(),
                QuotaInput::Unlimited,
                "{t}"
            );
        }
    }

    #[test]
    fn whole_numbers_from_zero_set_the_balance() {
        assert_eq!(parse_quota_input("quota", "0").unwrap(), QuotaInput::Set(0));
        assert_eq!(parse_quota_input("quota", " 250 ").unwrap(), QuotaInput::Set(250));
        assert_eq!(
            parse_quota_input("quota", "10000000").unwrap(),
            QuotaInput::Set(limits::AMOUNT_ABS_MAX)
        );
    }

    #[test]
    fn anything_else_is_refused_naming_the_field() {
        for t in [
            "",
            " ",
            "-2",
            "-0",
            "+5",
            "1.5",
            "1e3",
            "10000001",
            "abc",
            "٣",
            "99999999999999999999",
            "inf",
        ] {
            let e = parse_quota_input("Quota for alice", t).unwrap_err();
            assert!(e.to_string().starts_with("Quota for alice:"), "{t}: {e}");
        }
    }
}
