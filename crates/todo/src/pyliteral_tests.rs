use super::*;
use serde_json::json;

#[test]
fn ints_at_the_edges_of_64_bits() {
    assert_eq!(parse("18446744073709551615").unwrap(), json!(u64::MAX));
    assert_eq!(parse("-9223372036854775808").unwrap(), json!(i64::MIN));
    assert!(parse("18446744073709551616").is_err());
    assert!(parse("-9223372036854775809").is_err());
    assert_eq!(parse("-0").unwrap(), json!(0));
}

#[test]
fn radix_ints_and_separators() {
    assert_eq!(parse("0x_ff").unwrap(), json!(255));
    assert_eq!(parse("0o17").unwrap(), json!(15));
    assert_eq!(parse("0B101").unwrap(), json!(5));
    assert_eq!(parse("1_000_000").unwrap(), json!(1_000_000));
    assert!(parse("1__0").is_err());
    assert!(parse("1_").is_err());
    assert!(parse("0x").is_err());
    assert!(parse("012").is_err());
    assert_eq!(parse("000").unwrap(), json!(0));
}

#[test]
fn floats() {
    assert_eq!(parse("1.5").unwrap(), json!(1.5));
    assert_eq!(parse(".5").unwrap(), json!(0.5));
    assert_eq!(parse("5.").unwrap(), json!(5.0));
    assert_eq!(parse("1e3").unwrap(), json!(1000.0));
    assert_eq!(parse("-2.5E-1").unwrap(), json!(-0.25));
    assert_eq!(parse("1_0.0_1").unwrap(), json!(10.01));
    assert!(parse("1e999").is_err());
    assert!(parse("1j").is_err());
    assert!(parse("1abc").is_err());
    assert!(parse("1.2.3").is_err());
}
