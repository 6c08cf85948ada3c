//! Whether an account can pay for an ask now, and if not the refusal's words: pure functions of
//! (the ask's price, the paying account as of now, the configuration's minimum). A start, an
//! extension, its quote and the forecast's "when could I start" all decide here.

use super::view::Paying;
use crate::milli::Milli;

/// What an ask costs: the resource's rate, the minutes asked, and `rate x minutes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Price {
    pub rate: Milli,
    pub minutes: i64,
    pub cost: Milli,
}

/// Which account pays (a refusal names a budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payer<'a> {
    Personal,
    Budget(&'a str),
}

/// Why the paying account cannot take an ask now: the byte-exact 403 text and its figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub message: String,
    pub balance: i64,
    /// What running servers hold, rounded up to whole credits.
    pub held: i64,
    pub estimated_cost: Milli,
    /// What the ask needed free (thousandths): its cost, and at least the minimum to start.
    pub needed: i128,
}

/// What an ask needs free (thousandths): its cost, and never less than `minimum` (minimumToStart).
pub fn needed(price: Price, minimum: Milli) -> i128 {
    i128::from(price.cost.raw()).max(i128::from(minimum.raw()))
}

/// May `paying` take `price` now? What is free (the balance less what running servers hold)
/// must cover [`needed`].
pub fn afford(payer: Payer<'_>, paying: Paying, price: Price, minimum: Milli) -> Result<(), Shortfall> {
    let needed = needed(price, minimum);
    if paying.available() >= needed {
        return Ok(());
    }
    Err(Shortfall {
        message: insufficient_text(payer, paying, price),
        balance: paying.balance,
        held: Milli(paying.held).ceil(),
        estimated_cost: price.cost,
        needed,
    })
}

/// The 403 text of an account that cannot pay for `price`.
pub fn insufficient_text(payer: Payer<'_>, paying: Paying, price: Price) -> String {
    let Price { rate, minutes, cost } = price;
    let held = Milli(paying.held);
    let balance_text = if held.raw() > 0 {
        format!("{} ({held} reserved by running servers)", paying.balance)
    } else {
        paying.balance.to_string()
    };
    let which = match payer {
        Payer::Personal => String::new(),
        Payer::Budget(name) => format!(" in budget {name}"),
    };
    format!(
        "Cannot start container: Insufficient quota{which}. Current balance: {balance_text}, estimated cost: {cost} ({rate} quota/min x {minutes} min). Please contact administrator to add quota."
    )
}

/// What is left of a member's monthly `limit` on a budget (thousandths): less what they charged
/// it this month (`spent`, whole credits) and what their running servers hold on it (`reserved`).
pub fn member_room(limit: i64, spent: i64, reserved: i64) -> i128 {
    i128::from(limit) * 1000 - i128::from(spent) * 1000 - i128::from(reserved)
}

/// A budget's monthly limit per member: what the member charged it this month (`spent`, whole
/// credits), what their running servers hold on it (`reserved`, thousandths) and the ask's cost
/// must stay within `limit`.
pub fn within_member_limit(
    budget: &str,
    limit: i64,
    spent: i64,
    reserved: i64,
    price: Price,
    paying: Paying,
) -> Result<(), Shortfall> {
    let cost = price.cost;
    if i128::from(cost.raw()) <= member_room(limit, spent, reserved) {
        return Ok(());
    }
    let reserved = Milli(reserved);
    let reserved_text = if reserved.raw() > 0 {
        format!(" ({reserved} reserved)")
    } else {
        String::new()
    };
    Err(Shortfall {
        message: format!(
            "Cannot start container: monthly limit of budget {budget} reached. Spent this month: {spent}{reserved_text}, limit: {limit}, estimated cost: {cost}."
        ),
        balance: paying.balance,
        held: Milli(paying.held).ceil(),
        estimated_cost: cost,
        needed: i128::from(cost.raw()),
    })
}
