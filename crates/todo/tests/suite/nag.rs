//! The nag reminder's two policies (course s03 and s05).

use todo::nag::{Nag, REMINDER, ResetPolicy, reminder_block};

/// The 1-based rounds, out of `rounds`, in which the nag reminds when the model never calls the todo tool.
fn reminded_rounds(mut nag: Nag, rounds: u32) -> Vec<u32> {
    (1..=rounds).filter(|_| nag.after_round(false)).collect()
}

#[test]
fn reminder_text_and_block_are_exact() {
    assert_eq!(REMINDER, "<reminder>Update your todos.</reminder>");
    assert_eq!(
        reminder_block(),
        serde_json::json!({"type": "text", "text": "<reminder>Update your todos.</reminder>"})
    );
}

#[test]
fn s03_reminds_in_rounds_3_4_5_without_todo() {
    assert_eq!(reminded_rounds(Nag::s03(), 5), [3, 4, 5]);
}

#[test]
fn s03_todo_call_resets_the_counter() {
    let mut nag = Nag::s03();
    assert!(!nag.after_round(false));
    assert!(!nag.after_round(false));
    assert!(nag.after_round(false));
    assert!(!nag.after_round(true));
    assert_eq!(nag.count(), 0);
    assert!(!nag.after_round(false));
    assert!(!nag.after_round(false));
    assert!(nag.after_round(false));
}

#[test]
fn s05_reminds_in_rounds_3_6_9_without_todo() {
    assert_eq!(reminded_rounds(Nag::s05(), 9), [3, 6, 9]);
}

#[test]
fn s05_reminds_exactly_once_in_the_first_three_rounds() {
    assert_eq!(reminded_rounds(Nag::s05(), 3).len(), 1);
}

#[test]
fn s05_todo_call_resets_the_counter() {
    let mut nag = Nag::s05();
    nag.after_round(false);
    nag.after_round(false);
    assert!(!nag.after_round(true));
    assert_eq!(reminded_rounds(nag, 3), [3]);
}

#[test]
fn begin_turn_starts_the_counter_at_zero() {
    let mut nag = Nag::s03();
    nag.after_round(false);
    nag.after_round(false);
    nag.begin_turn();
    assert_eq!(nag.count(), 0);
    assert!(!nag.after_round(false));
}

#[test]
fn constructors_use_threshold_3_and_the_course_policies() {
    assert_eq!((Nag::s03().threshold(), Nag::s03().policy()), (3, ResetPolicy::KeepNagging));
    assert_eq!((Nag::s05().threshold(), Nag::s05().policy()), (3, ResetPolicy::ResetAfterRemind));
}
