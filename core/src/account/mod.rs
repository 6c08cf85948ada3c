//! An account as of now, and what it allows (credit model 2, "Accounts"): one read builds the view
//! ([`view`]), one pure function decides whether it can pay for an ask ([`decide`]), with the
//! refusal's text. The gate (a start), an extension, its quote, `/me`, `/me/status` and the
//! forecast read these; no other place sums what running servers hold or words a shortfall.

pub mod decide;
pub mod view;

pub use decide::{
    afford, insufficient_text, member_room, needed, within_member_limit, Payer, Price, Shortfall,
};
pub use view::{as_of, held_on_budget, held_personal, AccountView, Paying};
