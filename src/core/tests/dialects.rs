//! The list of dialects is the only place a dialect is named: these check that what is derived from it (names,
//! the builds that have it, each connection's codec and rules) agrees with it, and that the TypeScript
//! `Dialect` union the package declares lists the same names.

use crate::core::dialect::{Codec, DialectKind, Policy};

#[test]
fn every_dialect_is_found_by_its_name_and_makes_a_codec_of_its_own_kind() {
    assert_eq!(DialectKind::ALL.len(), 4);
    for &d in DialectKind::ALL {
        assert_eq!(DialectKind::parse(d.name()), Some(d));
        assert!(d.built(), "the test build has every dialect ({})", d.name());
        for agent in [true, false] {
            let codec: Codec<serde_json::Value> = Codec::new(d, agent);
            assert_eq!(codec.kind(), d);
            assert_eq!(codec.policy(), d.policy());
        }
    }
    assert_eq!(DialectKind::parse("ABP"), None);
    assert_eq!(DialectKind::parse(""), None);
}

#[test]
fn only_abp_has_abps_rules_and_the_rules_differ_where_the_dialects_do() {
    assert_eq!(DialectKind::Abp.policy(), Policy::ABP);
    for &d in &DialectKind::ALL[1..] {
        assert_ne!(d.policy(), Policy::ABP, "{} would fold to ABP", d.name());
        assert!(!d.policy().cancel_answered, "only ABP answers a cancel");
    }
    assert!(DialectKind::Mcp.policy().list_capabilities);
    assert!(!DialectKind::Mcp.policy().cancelled_call_answered);
    assert!(DialectKind::Tesseron.policy().app_speaks_first);
}

#[test]
fn the_typescript_dialect_union_lists_exactly_the_registered_names() {
    let types = include_str!("../../web/types.rs");
    let line = types
        .lines()
        .find(|l| l.starts_with("export type Dialect ="))
        .expect("src/web/types.rs declares `export type Dialect`");
    let expected: Vec<String> = DialectKind::ALL
        .iter()
        .map(|d| ["'", d.name(), "'"].concat())
        .collect();
    assert_eq!(
        line,
        ["export type Dialect = ", &expected.join(" | "), ";"].concat(),
        "src/web/types.rs: the Dialect union must list the dialects of src/core/dialect/mod.rs"
    );
}
