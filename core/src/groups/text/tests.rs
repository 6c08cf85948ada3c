//! The text form of a user's groups held to the set form.

use super::*;

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn every_form_is_the_sets_sorted_text() {
    let names = ["staff", "Zeta", "course-101", "staff", "äb", "a b"];
    let s = set(&names);
    let from_set = GroupNames::from_set(&s);
    assert_eq!(from_set.to_set(), s);
    assert_eq!(GroupNames::from_names("groups", names).unwrap(), from_set);
    assert_eq!(GroupNames::parse("groups", names.join("\n")).unwrap(), from_set);
    let sorted: Vec<&str> = s.iter().map(String::as_str).collect();
    assert_eq!(from_set.iter().collect::<Vec<_>>(), sorted);
    assert_eq!(from_set.as_str(), sorted.join("\n"));
    let none = GroupNames::parse("groups", String::new()).unwrap();
    assert!(none.is_empty() && none.iter().next().is_none() && none.to_set().is_empty());
    assert_eq!(none, GroupNames::from_set(&BTreeSet::new()));
}

#[test]
fn both_forms_agree_on_membership() {
    let user = ["course-101", "course-1010", "lab", "Zeta", "é"];
    let text = GroupNames::from_names("groups", user).unwrap();
    let as_set = set(&user);
    for wanted in [
        &[][..],
        &["lab"],
        &["course-10"],
        &["course-10", "ourse-101", "la", "ab", "zeta"],
        &["a", "course-1010"],
        &["Zeta", "zz"],
        &["é"],
        &["e", "f", "g", "h", "i", "j", "k", "l"],
        &["lab\ncourse-101"],
    ] {
        let wanted = set(wanted);
        let expected = wanted.iter().any(|w| as_set.contains(w));
        assert_eq!(text.in_any(&wanted), expected, "{wanted:?}");
        assert_eq!(as_set.in_any(&wanted), expected, "{wanted:?}");
    }
    assert!(!GroupNames::default().in_any(&set(&["lab"])));
}

#[test]
fn the_line_search_and_the_word_compare_agree_with_plain_ones() {
    let pool: Vec<String> = [
        "",
        "a",
        "ab",
        "abc",
        "b",
        "ba",
        "c",
        "course-101",
        "course-1010",
        "lab",
        "zz",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in 0..pool.len() {
        for skip in 0..pool.len() {
            // Every other name of the pool after `skip`, `n` at most: gaps to search for.
            let names: BTreeSet<String> = pool
                .iter()
                .skip(skip)
                .step_by(2)
                .take(n)
                .filter(|s| !s.is_empty())
                .cloned()
                .collect();
            let g = GroupNames::from_set(&names);
            for probe in &pool {
                assert_eq!(
                    g.has(probe.as_bytes()),
                    names.contains(probe),
                    "{probe:?} in {names:?}"
                );
            }
        }
    }
    let text = "course-101\ncourse-1010\nlab";
    for i in 0..=text.len() {
        let (a, b) = (&text.as_bytes()[..i], text.as_bytes());
        assert!(same(a, a));
        assert_eq!(same(a, b), a == b, "{i}");
        let mut c = b.to_vec();
        if let Some(x) = c.get_mut(i) {
            *x ^= 1;
            assert!(!same(&c, b), "{i}");
        }
    }
}

#[test]
fn a_report_is_checked_only_when_it_differs() {
    let stored = GroupNames::from_names("groups", ["lab", "staff"]).unwrap();
    let same = ReportedGroups::text("lab\nstaff".into());
    assert_eq!(same.changed_from("groups", &stored).unwrap(), None);
    let reordered = ReportedGroups::text("staff\nlab\nlab".into());
    assert_eq!(
        reordered.changed_from("groups", &stored).unwrap(),
        None,
        "the same set"
    );
    let other = ReportedGroups::text("staff".into());
    assert_eq!(
        other.changed_from("groups", &stored).unwrap(),
        Some(GroupNames::from_names("groups", ["staff"]).unwrap())
    );
    let none = ReportedGroups::text(String::new());
    assert_eq!(
        none.changed_from("groups", &stored).unwrap(),
        Some(GroupNames::default())
    );
    assert_eq!(none.changed_from("groups", &GroupNames::default()).unwrap(), None);
    let bad = ReportedGroups::text("lab\nst\u{7f}aff".into());
    let e = bad.changed_from("groups", &stored).unwrap_err();
    assert!(e.to_string().starts_with("groups[1]: must not contain"), "{e}");
    let checked = ReportedGroups::from(stored.clone());
    assert_eq!(checked.as_str(), "lab\nstaff");
    assert_eq!(checked.changed_from("groups", &stored).unwrap(), None);
    assert_eq!(
        checked.changed_from("groups", &GroupNames::default()).unwrap(),
        Some(stored)
    );
}

#[test]
fn a_bad_name_is_named_by_its_line() {
    let e = GroupNames::parse("groups", "lab\n\nstaff".into()).unwrap_err();
    assert_eq!(e.to_string(), "groups[1]: must not be empty");
    let e = GroupNames::parse("groups", "lab\nst\taff".into()).unwrap_err();
    assert!(e.to_string().starts_with("groups[1]: must not contain"), "{e}");
    let e = GroupNames::parse("groups", "a\u{85}b".into()).unwrap_err();
    assert!(e.to_string().starts_with("groups[0]: "), "{e}");
    // Names are data: a path and spaces at either end are names like any other.
    assert_eq!(
        GroupNames::parse("groups", " lab\n/course/101".into())
            .unwrap()
            .to_set(),
        ["/course/101".to_string(), " lab".to_string()].into()
    );
    let e = GroupNames::from_names("groups", ["a", "b\nc"]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("groups[1]: must not contain the control character '\\n'"),
        "{e}"
    );
    let e = GroupNames::from_names("groups", ["a", ""]).unwrap_err();
    assert_eq!(e.to_string(), "groups[1]: must not be empty");
    let many: Vec<String> = (0..=limits::USER_GROUPS_MAX).map(|i| format!("g{i}")).collect();
    let e = GroupNames::parse("groups", many.join("\n")).unwrap_err();
    assert!(e.to_string().starts_with("groups: must list at most"), "{e}");
    let at_most: Vec<String> = many[..limits::USER_GROUPS_MAX].to_vec();
    assert_eq!(
        GroupNames::parse("groups", at_most.join("\n"))
            .unwrap()
            .iter()
            .count(),
        at_most.len()
    );
}
