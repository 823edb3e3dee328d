//! The course's 5-field cron expressions (s12 `validate_cron`, `cron_matches`): parsed once into a
//! [`CronExpr`], matched against a local minute, and searched forward for the next minute that
//! matches ([`CronExpr::next_after`]), which is what lets the scheduler sleep instead of polling.
//!
//! The grammar is the course's, no more: per field `*`, `*/N`, `a-b`, a number, or a comma list of
//! those. No names (`MON`), no `7` for Sunday, no `a-b/N`. Two details differ from Vixie cron and
//! are kept because the course has them: a step `*/N` matches the values divisible by `N` (a
//! day-of-month `*/5` is the 5th, 10th, … not the 1st, 6th, …), and a step has no upper bound.
//! Day-of-month and day-of-week follow Vixie: when both are restricted (not the plain `*`) a day
//! matches if **either** does.

use std::fmt;

use chrono::{Datelike, Days, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::dialect::Dialect;

/// Why an expression is not a valid 5-field cron expression. `Display` is the course's text, which
/// the `schedule_cron` tool returns after `Error: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// `Expected 5 fields, got {n}`.
    #[error("Expected 5 fields, got {0}")]
    FieldCount(usize),
    /// One field is wrong: `{field name}: {what}`, such as `minute: Value 61 is outside [0-59]`.
    #[error("{name}: {problem}")]
    Field {
        /// `minute`, `hour`, `day-of-month`, `month` or `day-of-week`.
        name: &'static str,
        /// What is wrong with it.
        problem: FieldError,
    },
}

/// What is wrong with one field (the part of [`CronError::Field`] after the field's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// `*/N` where `N` is not a positive number: `Invalid step: */0`.
    #[error("Invalid step: {0}")]
    Step(String),
    /// `a-b` where `a` or `b` is not a number: `Invalid range: 1-10/2`.
    #[error("Invalid range: {0}")]
    Range(String),
    /// `a-b` with `a > b`: `Range start is greater than end: 5-1`.
    #[error("Range start is greater than end: {0}")]
    Backwards(String),
    /// `a-b` not inside the field's bounds: `Range 0-5 is outside [1-31]`.
    #[error("Range {field} is outside [{min}-{max}]")]
    RangeBounds {
        /// The range as written.
        field: String,
        /// The field's least value.
        min: u32,
        /// The field's greatest value.
        max: u32,
    },
    /// A number outside the field's bounds: `Value 61 is outside [0-59]` (the number as Python's
    /// `int` prints it: no leading zeros, any size).
    #[error("Value {value} is outside [{min}-{max}]")]
    ValueBounds {
        /// The number, as `int()` would print it.
        value: String,
        /// The field's least value.
        min: u32,
        /// The field's greatest value.
        max: u32,
    },
    /// Anything else: `Invalid field: MON`.
    #[error("Invalid field: {0}")]
    Invalid(String),
    /// The course's s15: `a-b` not inside the field's bounds, checked before the order:
    /// `Range 0-5 out of bounds [1-31]`.
    #[error("Range {field} out of bounds [{min}-{max}]")]
    RangeOutOfBounds {
        /// The range as written.
        field: String,
        /// The field's least value.
        min: u32,
        /// The field's greatest value.
        max: u32,
    },
    /// The course's s15: `a-b` with `a > b`: `Range start > end: 5-1`.
    #[error("Range start > end: {0}")]
    StartAfterEnd(String),
    /// The course's s15: a number outside the field's bounds: `Value 61 out of bounds [0-59]`.
    #[error("Value {value} out of bounds [{min}-{max}]")]
    ValueOutOfBounds {
        /// The number, as `int()` would print it.
        value: String,
        /// The field's least value.
        min: u32,
        /// The field's greatest value.
        max: u32,
    },
}

/// The five fields: name and bounds, in order (course `validate_cron`'s `field_rules`).
const FIELDS: [(&str, u32, u32); 5] =
    [("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31), ("month", 1, 12), ("day-of-week", 0, 6)];

/// One parsed field.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    /// `*`.
    Any,
    /// `*/N`: values divisible by `N` (course: `value % N == 0`).
    Step(u64),
    /// `a-b`, inclusive.
    Range(u32, u32),
    /// A number.
    Value(u32),
    /// `x,y,…`: any of them.
    List(Vec<Field>),
}

impl Field {
    /// The course's `_validate_cron_field`, producing the field instead of `None`. The order of
    /// the checks is the course's: a step first, then a list, then a range, then a number, so
    /// `*/5,10` is an invalid step and `1-5,7` is a list.
    fn parse(text: &str, min: u32, max: u32, dialect: Dialect) -> Result<Field, FieldError> {
        if text == "*" {
            return Ok(Field::Any);
        }
        if let Some(step) = text.strip_prefix("*/") {
            return match digits(step) {
                Some(n) if n > 0 => Ok(Field::Step(n)),
                _ => Err(FieldError::Step(text.to_owned())),
            };
        }
        if text.contains(',') {
            let parts = text.split(',').map(|part| Field::parse(py_strip(part), min, max, dialect));
            return parts.collect::<Result<Vec<_>, _>>().map(Field::List);
        }
        if let Some((start, end)) = text.split_once('-') {
            let (Some(a), Some(b)) = (digits(start), digits(end)) else {
                return Err(FieldError::Range(text.to_owned()));
            };
            let outside = |v: u64| v < u64::from(min) || v > u64::from(max);
            if dialect == Dialect::S15 {
                // s15 checks the bounds of both ends first, then the order.
                if outside(a) || outside(b) {
                    return Err(FieldError::RangeOutOfBounds { field: text.to_owned(), min, max });
                }
                if a > b {
                    return Err(FieldError::StartAfterEnd(text.to_owned()));
                }
            }
            if a > b {
                return Err(FieldError::Backwards(text.to_owned()));
            }
            if a < u64::from(min) || b > u64::from(max) {
                return Err(FieldError::RangeBounds { field: text.to_owned(), min, max });
            }
            // Both are within [min, max], so they fit.
            return Ok(Field::Range(a as u32, b as u32));
        }
        let Some(value) = digits(text) else {
            return Err(FieldError::Invalid(text.to_owned()));
        };
        if value < u64::from(min) || value > u64::from(max) {
            return Err(match dialect {
                Dialect::S12 => FieldError::ValueBounds { value: int_text(text), min, max },
                Dialect::S15 => FieldError::ValueOutOfBounds { value: int_text(text), min, max },
            });
        }
        Ok(Field::Value(value as u32))
    }

    /// The course's `_cron_field_matches`.
    fn matches(&self, value: u32) -> bool {
        match self {
            Field::Any => true,
            Field::Step(n) => u64::from(value) % n == 0,
            Field::Range(a, b) => (*a..=*b).contains(&value),
            Field::Value(v) => *v == value,
            Field::List(parts) => parts.iter().any(|p| p.matches(value)),
        }
    }
}

/// `s.isdigit()` then `int(s)` for ASCII digits: the value, saturating at `u64::MAX` (any such
/// value is out of every field's bounds and only ever compared); `None` for an empty string or
/// any other character.
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0u64, |n, b| n.saturating_mul(10).saturating_add(u64::from(b - b'0'))))
}

/// The digits `s` as Python's `int(s)` prints them: without leading zeros.
fn int_text(s: &str) -> String {
    let trimmed = s.trim_start_matches('0');
    if trimmed.is_empty() { "0".to_owned() } else { trimmed.to_owned() }
}

/// Whether Python's `str.split()` and `str.strip()` treat `c` as whitespace: Unicode White_Space
/// plus the four ASCII information separators (U+001C to U+001F), which Python counts and Rust's
/// `char::is_whitespace` does not.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `s.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// A valid 5-field cron expression, parsed.
///
/// ```
/// use chrono::NaiveDate;
/// use cron::CronExpr;
///
/// let weekdays_at_nine = CronExpr::parse("0 9 * * 1-5").unwrap();
/// let monday = NaiveDate::from_ymd_opt(2026, 8, 10).unwrap();
/// assert!(weekdays_at_nine.matches(monday.and_hms_opt(9, 0, 0).unwrap()));
/// assert_eq!(
///     CronExpr::parse("61 9 * * *").unwrap_err().to_string(),
///     "minute: Value 61 is outside [0-59]"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    minute: Field,
    hour: Field,
    day: Field,
    month: Field,
    weekday: Field,
    /// The day-of-month field is not the plain `*` (Vixie's rule looks at the text: `*/1` counts
    /// as restricted).
    day_restricted: bool,
    /// The day-of-week field is not the plain `*`.
    weekday_restricted: bool,
}

impl CronExpr {
    /// Parses `text` as the course's `validate_cron` checks it: split on whitespace, five fields,
    /// each within its bounds.
    ///
    /// # Errors
    /// The first problem, in the course's words ([`CronError`]).
    pub fn parse(text: &str) -> Result<Self, CronError> {
        Self::parse_in(text, Dialect::S12)
    }

    /// [`CronExpr::parse`] with `dialect`'s words for a field out of bounds (the course's s15:
    /// `Value 61 out of bounds [0-59]`).
    ///
    /// # Errors
    /// The first problem, in the dialect's words.
    pub fn parse_in(text: &str, dialect: Dialect) -> Result<Self, CronError> {
        let fields: Vec<&str> = text.split(py_space).filter(|f| !f.is_empty()).collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(CronError::FieldCount(fields.len()));
        };
        let parse = |index: usize, text: &str| {
            let (name, min, max) = FIELDS[index];
            Field::parse(text, min, max, dialect).map_err(|problem| CronError::Field { name, problem })
        };
        Ok(Self {
            minute: parse(0, minute)?,
            hour: parse(1, hour)?,
            day: parse(2, day)?,
            month: parse(3, month)?,
            weekday: parse(4, weekday)?,
            day_restricted: day != "*",
            weekday_restricted: weekday != "*",
        })
    }

    /// Whether the expression matches the local minute `moment` (seconds are ignored): the
    /// course's `cron_matches`. Sunday is day-of-week 0.
    pub fn matches(&self, moment: NaiveDateTime) -> bool {
        self.minute.matches(moment.minute())
            && self.hour.matches(moment.hour())
            && self.matches_day(moment.date())
    }

    /// Month, then day-of-month and day-of-week by Vixie's rule: with both restricted, either
    /// one matching is enough.
    fn matches_day(&self, date: NaiveDate) -> bool {
        if !self.month.matches(date.month()) {
            return false;
        }
        let day = self.day.matches(date.day());
        let weekday = self.weekday.matches(date.weekday().num_days_from_sunday());
        match (self.day_restricted, self.weekday_restricted) {
            (false, false) => true,
            (false, true) => weekday,
            (true, false) => day,
            (true, true) => day || weekday,
        }
    }

    /// The first local minute strictly after the minute of `after` that matches, looking up to
    /// [`SEARCH_DAYS`] ahead; `None` when no day in that span matches (`0 0 30 2 *`, which never
    /// fires).
    pub fn next_after(&self, after: NaiveDateTime) -> Option<NaiveDateTime> {
        let start = after.date().and_time(NaiveTime::from_hms_opt(after.hour(), after.minute(), 0)?);
        let mut date = start.date();
        for _ in 0..=SEARCH_DAYS {
            if self.matches_day(date) {
                for hour in (0..24).filter(|h| self.hour.matches(*h)) {
                    for minute in (0..60).filter(|m| self.minute.matches(*m)) {
                        let at = date.and_hms_opt(hour, minute, 0)?;
                        if at > start {
                            return Some(at);
                        }
                    }
                }
            }
            date = date.checked_add_days(Days::new(1))?;
        }
        None
    }
}

/// How far [`CronExpr::next_after`] looks: eight years and a day, enough for a 29 February that
/// skips a century year (`0 0 29 2 *` after 2096 fires next in 2104).
pub const SEARCH_DAYS: u32 = 8 * 366 + 1;

/// The course's `validate_cron`: `None` for a valid expression, else the error text.
pub fn validate_cron(text: &str) -> Option<String> {
    CronExpr::parse(text).err().map(|e| e.to_string())
}

/// The course's `cron_matches`: `false` for an invalid expression.
pub fn cron_matches(text: &str, moment: NaiveDateTime) -> bool {
    CronExpr::parse(text).is_ok_and(|e| e.matches(moment))
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Any => f.write_str("*"),
            Field::Step(n) => write!(f, "*/{n}"),
            Field::Range(a, b) => write!(f, "{a}-{b}"),
            Field::Value(v) => write!(f, "{v}"),
            Field::List(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{part}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d).and_then(|d| d.and_hms_opt(h, mi, 0)).unwrap()
    }

    #[test]
    fn every_validation_text_is_the_courses() {
        // The texts the course printed for each case (COURSE-s10-s17 §3.3, ran).
        let cases = [
            ("0 9 * *", "Expected 5 fields, got 4"),
            ("", "Expected 5 fields, got 0"),
            ("* * * * * *", "Expected 5 fields, got 6"),
            ("61 * * * *", "minute: Value 61 is outside [0-59]"),
            ("0 24 * * *", "hour: Value 24 is outside [0-23]"),
            ("0 0 0 * *", "day-of-month: Value 0 is outside [1-31]"),
            ("0 0 * 13 *", "month: Value 13 is outside [1-12]"),
            ("0 0 * * 7", "day-of-week: Value 7 is outside [0-6]"),
            ("0 0 * * MON", "day-of-week: Invalid field: MON"),
            ("*/0 * * * *", "minute: Invalid step: */0"),
            ("*/ * * * *", "minute: Invalid step: */"),
            ("*/x * * * *", "minute: Invalid step: */x"),
            ("*/5,10 * * * *", "minute: Invalid step: */5,10"),
            ("1-10/2 * * * *", "minute: Invalid range: 1-10/2"),
            ("-5 * * * *", "minute: Invalid range: -5"),
            ("5-1 * * * *", "minute: Range start is greater than end: 5-1"),
            ("0 0 0-5 * *", "day-of-month: Range 0-5 is outside [1-31]"),
            ("1,61 * * * *", "minute: Value 61 is outside [0-59]"),
            ("1,,2 * * * *", "minute: Invalid field: "),
            ("007 * * * *", ""),
            ("0099 * * * *", "minute: Value 99 is outside [0-59]"),
            ("99999999999999999999999 * * * *", "minute: Value 99999999999999999999999 is outside [0-59]"),
        ];
        for (expr, want) in cases {
            let got = validate_cron(expr).unwrap_or_default();
            assert_eq!(got, want, "{expr:?}");
        }
    }

    #[test]
    fn vixie_day_rules_and_course_steps() {
        let monday_nine = at(2026, 8, 10, 9, 0);
        assert!(cron_matches("0 9 * * 1-5", monday_nine));
        assert!(!cron_matches("30 9 * * 1-5", monday_nine));
        // Both restricted: either matches (10 August 2026 is a Monday, not the 1st).
        assert!(cron_matches("0 9 1 * 1", monday_nine));
        assert!(!cron_matches("0 9 1 * 2", monday_nine));
        // Only day-of-month restricted: day-of-week is ignored.
        assert!(cron_matches("0 9 10 * *", monday_nine));
        assert!(!cron_matches("0 9 11 * *", monday_nine));
        // `*/1` is restricted in Vixie's sense, and matches every day.
        assert!(cron_matches("0 9 */1 * 2", monday_nine));
        // Sunday is 0.
        assert!(cron_matches("0 9 * * 0", at(2026, 8, 9, 9, 0)));
        // Steps divide: day-of-month */5 is the 5th, 10th, …; month */2 the even months.
        assert!(cron_matches("0 9 */5 * *", monday_nine));
        assert!(!cron_matches("0 9 */5 * *", at(2026, 8, 6, 9, 0)));
        assert!(cron_matches("0 9 * */2 *", monday_nine));
        assert!(!cron_matches("0 9 * */2 *", at(2026, 7, 10, 9, 0)));
        assert!(cron_matches("1,2-4,*/30 * * * *", at(2026, 1, 1, 0, 3)));
        assert!(!cron_matches("invalid", monday_nine));
    }

    #[test]
    fn next_after_is_the_next_matching_minute() {
        let e = CronExpr::parse("0 9 * * 1-5").unwrap();
        // Friday 14 August 2026 at 09:00 exactly: the next is Monday.
        assert_eq!(e.next_after(at(2026, 8, 14, 9, 0)), Some(at(2026, 8, 17, 9, 0)));
        assert_eq!(e.next_after(at(2026, 8, 14, 8, 59)), Some(at(2026, 8, 14, 9, 0)));
        let every = CronExpr::parse("* * * * *").unwrap();
        let half = at(2026, 8, 14, 8, 59).with_second(30).unwrap();
        assert_eq!(every.next_after(half), Some(at(2026, 8, 14, 9, 0)));
        let leap = CronExpr::parse("0 0 29 2 *").unwrap();
        assert_eq!(leap.next_after(at(2097, 1, 1, 0, 0)), Some(at(2104, 2, 29, 0, 0)));
        assert_eq!(CronExpr::parse("0 0 30 2 *").unwrap().next_after(at(2026, 1, 1, 0, 0)), None);
        // Vixie: the 13th or any Friday.
        let either = CronExpr::parse("0 0 13 * 5").unwrap();
        assert_eq!(either.next_after(at(2026, 8, 10, 0, 0)), Some(at(2026, 8, 13, 0, 0)));
        assert_eq!(either.next_after(at(2026, 8, 13, 0, 0)), Some(at(2026, 8, 14, 0, 0)));
    }

    #[test]
    fn python_whitespace_separates_fields() {
        assert_eq!(validate_cron("0\t9\u{1f}*\u{a0}*  *"), None);
        assert_eq!(CronExpr::parse("1,2-4,*/30 * * * *").unwrap().minute.to_string(), "1,2-4,*/30");
    }
}
