//! `budget list|show|create|set|add|deduct|delete`: shared budgets through the engine's budget
//! routes, on a database or a running server.

use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cli::{BudgetAmountArgs, BudgetCommand, BudgetDefineArgs};
use crate::commands::target::{segment, Target};

pub(super) fn run(command: BudgetCommand) -> Result<ExitCode, String> {
    match command {
        BudgetCommand::List(t) => {
            let v = Target::open(&t, false)?.ok("GET", "/admin/api/quota/budgets", "")?;
            let budgets = v["budgets"].as_array().cloned().unwrap_or_default();
            println!("Budgets ({})", budgets.len());
            for b in budgets {
                let limit = match b["member_limit"].as_i64() {
                    Some(l) => format!(", {l} per member a month"),
                    None => String::new(),
                };
                println!(
                    "{}  balance {} ({} reserved), {} members{limit}  [{}]",
                    text(&b["name"]),
                    b["balance"],
                    b["reserved"],
                    b["members"],
                    text(&b["source"])
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        BudgetCommand::Show { name, target } => {
            let v = Target::open(&target, false)?.ok("GET", &path(&name), "")?;
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        BudgetCommand::Create(a) => create(a),
        BudgetCommand::Set(a) => change(a, "set"),
        BudgetCommand::Add(a) => change(a, "add"),
        BudgetCommand::Deduct(a) => change(a, "deduct"),
        BudgetCommand::Delete { name, target } => {
            Target::open(&target, false)?.ok("DELETE", &path(&name), "")?;
            println!("budget {name}: deleted");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn path(name: &str) -> String {
    format!("/admin/api/quota/budgets/{}", segment(name))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn create(a: BudgetDefineArgs) -> Result<ExitCode, String> {
    let body = json!({
        "description": a.description,
        "users": a.users,
        "groups": a.groups,
        "accelerators": if a.accelerators.is_empty() { Value::Null } else { json!(a.accelerators) },
        "member_limit": a.member_limit,
    });
    let v = Target::open(&a.target, false)?.ok("PUT", &path(&a.name), &body.to_string())?;
    let what = if v["created"] == true {
        "created"
    } else {
        "redefined"
    };
    println!("budget {}: {what}", a.name);
    Ok(ExitCode::SUCCESS)
}

fn change(a: BudgetAmountArgs, action: &str) -> Result<ExitCode, String> {
    let mut body = json!({"action": action, "amount": a.amount});
    if let Some(at) = &a.expires {
        body["expires_at"] = json!(at);
    }
    if let Some(d) = &a.description {
        body["description"] = json!(d);
    }
    let v = Target::open(&a.target, false)?.ok("POST", &path(&a.name), &body.to_string())?;
    println!("budget {}: balance {}", a.name, v["balance"]);
    Ok(ExitCode::SUCCESS)
}
