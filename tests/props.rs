//! Property tests: normalization is idempotent, forms round-trip through parsing, draws stay in
//! range and are a pure function of the seed.

use pbem::dice::Ctx;
use pbem::orderfile::{self, Header};
use proptest::prelude::*;

proptest! {
    #[test]
    fn normalize_is_idempotent(s in "[ -~\t\r\n\u{a0}-\u{2fff}]{1,200}") {
        if let Ok(n) = pbem::sig::normalize(s.as_bytes()) {
            prop_assert_eq!(pbem::sig::normalize(n.as_bytes()).unwrap(), n.clone());
            prop_assert!(n.ends_with('\n') && !n.ends_with("\n\n"));
            prop_assert!(!n.contains('\r'));
        }
    }

    #[test]
    fn forms_round_trip(step in 1u64..10_000, role in "[a-z]{1,12}", key in "[a-z]{1,8}", val in "[ -~]{0,40}", n in 0u32..1000) {
        let header = Header { game: "g-1".into(), step, role, host_seed_commitment: "ab".repeat(32), nonce: String::new() };
        let mut orders = toml::Table::new();
        orders.insert(key.clone(), toml::Value::String(val));
        orders.insert(format!("{key}_n"), toml::Value::Integer(n as i64));
        let text = orderfile::form_text(&header, &["a comment".into()], &orders);
        let parsed = orderfile::parse(&text).unwrap();
        prop_assert_eq!(&parsed.header, &header);
        prop_assert_eq!(&parsed.orders, &orders);
        let filled = orderfile::fill_nonce(&text).unwrap();
        let again = orderfile::parse(&filled).unwrap();
        prop_assert_eq!(again.header.nonce.len(), 64);
        prop_assert_eq!(&again.orders, &orders);
    }

    #[test]
    fn draws_are_in_range_and_seed_determined(seed in any::<[u8; 32]>(), ns in proptest::collection::vec(1u32..1000, 1..50)) {
        let mut a = Ctx::new(seed);
        let mut b = Ctx::new(seed);
        for &n in &ns {
            let x = a.below(n);
            prop_assert!(x < n);
            prop_assert_eq!(x, b.below(n));
        }
    }
}
