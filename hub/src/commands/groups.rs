//! `group list|show|set|add-members|remove-members` and `sync-groups` (a JupyterHub's groups, read
//! through its REST API, become the users' groups).

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cli::{GroupCommand, GroupMembersArgs, SyncGroupsArgs};
use crate::commands::quota_file;
use crate::commands::target::{segment, Target};

/// Usernames per request when a group's members or a sync's changes are sent in parts (a request
/// body stays far below the engine's 1 MiB limit).
const USERS_PER_REQUEST: usize = 5_000;

pub(super) fn run(command: GroupCommand) -> Result<ExitCode, String> {
    match command {
        GroupCommand::List(t) => {
            let v = Target::open(&t, false)?.ok("GET", "/admin/api/quota/groups", "")?;
            let groups = v["groups"].as_array().cloned().unwrap_or_default();
            println!("Groups ({})", groups.len());
            for g in groups {
                let note = if g["configured"] == true {
                    "  (configured)"
                } else {
                    ""
                };
                println!("{}  {} members{note}", text(&g["name"]), g["members"]);
            }
            Ok(ExitCode::SUCCESS)
        }
        GroupCommand::Show { name, target } => {
            let path = format!("/admin/api/quota/groups/{}", segment(&name));
            let v = Target::open(&target, false)?.ok("GET", &path, "")?;
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        GroupCommand::Set(a) => change(a, "set"),
        GroupCommand::AddMembers(a) => change(a, "add-members"),
        GroupCommand::RemoveMembers(a) => change(a, "remove-members"),
    }
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The users of a members command: arguments, or a file's `username` column (checked whole first).
fn users_of(a: &GroupMembersArgs, cmd: &str) -> Result<Vec<String>, String> {
    if let Some(f) = &a.file {
        let parsed = quota_file::read(f, Some(0), false)?;
        for w in &parsed.warnings {
            eprintln!("warning: {w}");
        }
        return Ok(parsed.entries.into_iter().map(|e| e.username).collect());
    }
    if a.users.is_empty() && cmd != "set" {
        return Err(format!("group {cmd}: name one or more users, or give -f FILE"));
    }
    Ok(a.users.clone())
}

fn change(a: GroupMembersArgs, cmd: &str) -> Result<ExitCode, String> {
    let users = users_of(&a, cmd)?;
    let mut target = Target::open(&a.target, false)?;
    let path = format!("/admin/api/quota/groups/{}", segment(&a.name));
    let mut parts = users.chunks(USERS_PER_REQUEST).peekable();
    let (mut added, mut removed) = (0, 0);
    let mut last = Value::Null;
    let mut first = true;
    // `set` of more users than one request holds: the first part sets, the rest add.
    while first || parts.peek().is_some() {
        let part: &[String] = parts.next().unwrap_or_default();
        let (method, body) = match (cmd, first) {
            ("set", true) => ("PUT", json!({ "members": part })),
            ("set", false) | ("add-members", _) => ("POST", json!({ "add": part })),
            _ => ("POST", json!({ "remove": part })),
        };
        last = target.ok(method, &path, &body.to_string())?;
        added += last["added"].as_u64().unwrap_or(0);
        removed += last["removed"].as_u64().unwrap_or(0);
        first = false;
    }
    println!(
        "group {cmd} {}: {added} added, {removed} removed, {} members",
        a.name, last["members"]
    );
    Ok(ExitCode::SUCCESS)
}

/// The JupyterHub API base (`.../hub/api`) of `--hub-url`.
fn api_base(url: &str) -> String {
    let url = url.trim_end_matches('/');
    if url.ends_with("/hub/api") {
        url.to_string()
    } else {
        format!("{url}/hub/api")
    }
}

/// Every group of the hub with its users, page by page (JupyterHub 2+ paginates when asked; an
/// older hub answers one list).
fn hub_groups(a: &SyncGroupsArgs) -> Result<BTreeMap<String, Vec<String>>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let base = api_base(&a.hub_url);
    let mut out = BTreeMap::new();
    let mut offset = 0u64;
    loop {
        let url = format!("{base}/groups?offset={offset}&limit=200");
        let mut resp = agent
            .get(&url)
            .header("Authorization", &format!("token {}", a.hub_token))
            .header("Accept", "application/jupyterhub-pagination+json")
            .call()
            .map_err(|e| format!("{url}: {e}"))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("{url}: {e}"))?;
        if status != 200 {
            let hint = if status == 403 {
                " (the token needs the `read:groups` scope)"
            } else {
                ""
            };
            return Err(format!("{url}: HTTP {status}{hint}: {body}"));
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("{url}: not JSON: {e}"))?;
        let (items, next) = match &v {
            Value::Array(list) => (list.clone(), None),
            _ => (
                v["items"].as_array().cloned().unwrap_or_default(),
                v["_pagination"]["next"]["offset"].as_u64(),
            ),
        };
        for g in items {
            let users = g["users"]
                .as_array()
                .map(|u| u.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            out.insert(text(&g["name"]).to_string(), users);
        }
        match next {
            Some(n) if n > offset => offset = n,
            _ => return Ok(out),
        }
    }
}

/// Every stored membership (username -> groups), read a page at a time.
fn stored(target: &mut Target) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut out = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        // The engine's largest page of the memberships route.
        let limit = quota_core::limits::USERS_PAGE_MAX;
        let query = match &after {
            None => format!("limit={limit}"),
            Some(a) => format!("limit={limit}&after={}", segment(a)),
        };
        let v = target.ok("GET", &format!("/admin/api/quota/memberships?{query}"), "")?;
        for m in v["memberships"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let groups = m["groups"]
                .as_array()
                .map(|g| g.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            out.insert(text(&m["username"]).to_string(), groups);
        }
        match v["next_after"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => return Ok(out),
        }
    }
}

pub(super) fn sync(a: SyncGroupsArgs) -> Result<ExitCode, String> {
    let groups = hub_groups(&a)?;
    let mut snapshot: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (g, users) in &groups {
        for u in users {
            snapshot
                .entry(u.trim().to_lowercase())
                .or_default()
                .insert(g.clone());
        }
    }
    eprintln!(
        "sync-groups: the hub has {} groups with {} users in them",
        groups.len(),
        snapshot.len()
    );
    let mut target = Target::open(&a.target, false)?;
    let before = stored(&mut target)?;
    // What changes: users whose groups differ, and users the hub has in no group any more.
    let mut changes: BTreeMap<String, BTreeSet<String>> = snapshot
        .iter()
        .filter(|(u, g)| before.get(*u) != Some(*g))
        .map(|(u, g)| (u.clone(), g.clone()))
        .collect();
    for (u, g) in &before {
        if !g.is_empty() && !snapshot.contains_key(u) {
            changes.insert(u.clone(), BTreeSet::new());
        }
    }
    if a.dry_run {
        for (u, g) in &changes {
            let now: Vec<&str> = g.iter().map(String::as_str).collect();
            println!("{u}: [{}]", now.join(", "));
        }
        println!("sync-groups (dry run): {} users would change", changes.len());
        return Ok(ExitCode::SUCCESS);
    }
    let changed = match &mut target {
        // Directly on the database: the whole snapshot in one transaction.
        Target::Local(w, _) => {
            let users: Vec<(String, Vec<String>)> = snapshot
                .iter()
                .map(|(u, g)| (u.clone(), g.iter().cloned().collect()))
                .collect();
            let now = crate::clock::Clock::system()?.now();
            w.replace_memberships(&users, true, now)
                .map_err(|e| e.to_string())?
                .changed
        }
        // Through a server: only the changes, in parts that each fit a request.
        Target::Remote { .. } => {
            let list: Vec<(&String, &BTreeSet<String>)> = changes.iter().collect();
            let bar = indicatif::ProgressBar::new(list.len() as u64);
            if list.len() <= USERS_PER_REQUEST {
                bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            let mut n = 0;
            for part in list.chunks(USERS_PER_REQUEST) {
                let users: serde_json::Map<String, Value> =
                    part.iter().map(|(u, g)| ((*u).clone(), json!(g))).collect();
                let body = json!({ "users": users, "complete": false }).to_string();
                let v = target.ok("PUT", "/admin/api/quota/memberships", &body)?;
                n += v["changed"].as_u64().unwrap_or(0);
                bar.inc(part.len() as u64);
            }
            bar.finish_and_clear();
            n
        }
    };
    println!(
        "sync-groups: {} groups, {} users in them; {changed} users' groups changed",
        groups.len(),
        snapshot.len()
    );
    Ok(ExitCode::SUCCESS)
}
