//! No input makes pbem panic (issue 8, point 3): arbitrary bytes and mutated real inputs (a
//! signed order file, a detached signature, mails of several shapes) go through the order
//! parser, the armor parser with signature checking, and mail extraction. Bounded to a few
//! seconds; `cargo bench --bench fuzz` throws a million inputs at the same parsers.

#[path = "fuzz/targets.rs"]
mod targets;

use std::sync::LazyLock;

use proptest::prelude::*;
use targets::{Dice, Kind};

static SEEDS: LazyLock<Vec<(Kind, Vec<u8>)>> = LazyLock::new(targets::seeds);
static GAME_SEEDS: LazyLock<Vec<targets::GameSeed>> = LazyLock::new(targets::game_seeds);
static KEY: LazyLock<ssh_key::PublicKey> = LazyLock::new(|| targets::key().public_key().clone());

/// Mutation numbers made by proptest (so a failure shrinks to few, small mutations).
struct Listed(std::vec::IntoIter<u64>);

impl Dice for Listed {
    fn next(&mut self) -> u64 {
        self.0.next().unwrap_or(0)
    }
}

#[test]
fn the_seeds_are_good_inputs() {
    let key = &*KEY;
    for (kind, bytes) in SEEDS.iter() {
        assert_eq!(targets::no_panic(bytes, key), Ok(()), "{kind:?}");
    }
    let signed = &SEEDS[0].1;
    pbem::sig::verify_order_text(key, pbem::sig::NS_ORDERS, signed, None).unwrap();
    for (_, mail) in SEEDS.iter().filter(|(k, _)| *k == Kind::Mail) {
        let ex = pbem::mail::extract::extract(mail, &|_, _| Some(key.clone())).unwrap();
        assert_eq!(ex.orders.len(), 1, "{}", String::from_utf8_lossy(mail));
        let f = &ex.orders[0];
        pbem::sig::verify_order_text(key, pbem::sig::NS_ORDERS, &f.file, f.detached.as_deref()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        prop_assert_eq!(targets::no_panic(&bytes, &KEY), Ok(()));
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(\\PC|\r|\n|-----BEGIN SSH SIGNATURE-----\n|\\[pbem\\]\n){0,200}") {
        prop_assert_eq!(targets::no_panic(text.as_bytes(), &KEY), Ok(()));
    }

    #[test]
    fn any_sender_name_never_panics(name in "[\x00-\x1f\x7f\u{80}-\u{9f} a-zA-Z,.\"'()<>@=?\u{e9}\u{1F600}]{0,30}") {
        let raw = format!("From: {name} <meade@example.org>\r\nSubject: {name}\r\n\r\nhi\r\n");
        prop_assert_eq!(targets::no_panic(raw.as_bytes(), &KEY), Ok(()));
    }

    #[test]
    fn mutated_real_inputs_never_panic(seed in 0..16usize, count in 1..8usize, numbers in proptest::collection::vec(any::<u64>(), 0..40)) {
        let (_, input) = &SEEDS[seed % SEEDS.len()];
        let bad = targets::mutate(input, &SEEDS, count, &mut Listed(numbers.into_iter()));
        prop_assert_eq!(targets::no_panic(&bad, &KEY), Ok(()));
    }

    #[test]
    fn any_signed_orders_are_checked_without_a_panic(seed in 0..1000usize, count in 1..6usize, numbers in proptest::collection::vec(any::<u64>(), 0..60)) {
        // A player may sign anything: every game's order check (and the resolution of an order
        // it accepts) must take any [orders] table.
        let s = &GAME_SEEDS[seed % GAME_SEEDS.len()];
        let bad = targets::mutate(&s.text, &SEEDS, count, &mut Listed(numbers.clone().into_iter()));
        prop_assert_eq!(targets::no_panic_game(s, &bad), Ok(()));
        let bad = targets::mutate_orders(s, count, &mut Listed(numbers.into_iter()));
        prop_assert_eq!(targets::no_panic_game(s, &bad), Ok(()));
    }

    #[test]
    fn a_non_ascii_character_anywhere_in_the_armor_is_refused_with_a_reason(at in 0..400usize, c in "[^\\x00-\\x7f\\s]") {
        // Not whitespace: a line's trailing whitespace (Unicode's too) is no part of the block.
        let signed = String::from_utf8(SEEDS[0].1.clone()).unwrap();
        let begin = signed.find("-----BEGIN SSH SIGNATURE-----\n").unwrap() + 30;
        let end = signed.find("-----END SSH SIGNATURE-----").unwrap();
        let mut bad = signed.clone();
        bad.insert_str(begin + at % (end - begin), &c);
        prop_assert_eq!(targets::no_panic(bad.as_bytes(), &KEY), Ok(()));
        let err = pbem::sig::verify_order_text(&KEY, pbem::sig::NS_ORDERS, bad.as_bytes(), None).unwrap_err();
        prop_assert!(err.to_string().contains("not base64"), "{}", err);
    }
}

/// The input the property test above shrank to when mail-parser 0.11 panicked inside `parse`
/// ("Invalid part ID, could not find multipart"): kept as a fixed case.
#[test]
fn a_multipart_nesting_that_panics_mail_parser_is_taken_for_unreadable() {
    let numbers = vec![11070038661569164u64, 7333513801742218400, 26605210108701150, 69201599556775, 3594190395712152978, 1253237797287389251, 12750607081276212855, 7962203749714620901];
    let (_, input) = &SEEDS[6 % SEEDS.len()];
    let bad = targets::mutate(input, &SEEDS, 2, &mut Listed(numbers.into_iter()));
    assert_eq!(targets::no_panic(&bad, &KEY), Ok(()));
}
