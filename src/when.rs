//! Deadlines as each player reads them: a UTC time in the seat's own time zone, and the time left.
//!
//! Everything here is a pure function of its arguments (never the clock), so that a report that
//! shows a deadline and the time left replays byte for byte in the audit.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;

use crate::error::Error;

/// RFC 3339 text of a time, to the second, in UTC (`2026-11-30T05:00:00Z`).
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses an RFC 3339 time (as given to `--now` or stored in records), refusing one that is not
/// in years 0000 to 9999 in UTC (`9999-12-31T23:00:00-23:00` is in year 10000): pbem could not
/// write it back ([`writable`]).
pub fn parse_time(s: &str) -> crate::error::Result<DateTime<Utc>> {
    let bad = |why: String| Error::Usage(format!("bad time {s:?} (want RFC 3339, e.g. 2026-11-30T18:00:00Z): {why}"));
    let t = DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).map_err(|e| bad(e.to_string()))?;
    if !writable(t) {
        return Err(bad(format!("in UTC not between 0000-01-01T00:00:00Z and {LAST}")));
    }
    Ok(t)
}

/// The last time pbem writes and reads back: RFC 3339 gives the year four digits.
pub const LAST: &str = "9999-12-31T23:59:59Z";

/// [`LAST`] and `0000-01-01T00:00:00Z` in Unix seconds.
const LAST_SECS: i64 = 253_402_300_799;
const FIRST_SECS: i64 = -62_167_219_200;

/// Whether `t` is a time pbem can write and read back (RFC 3339: years 0000 to 9999).
pub fn writable(t: DateTime<Utc>) -> bool {
    (FIRST_SECS..=LAST_SECS).contains(&t.timestamp())
}

/// `t` later by `d` when that is a time pbem can write and read back ([`writable`]); otherwise
/// a sentence saying why not (never a panic, however large `d`).
pub fn later(t: DateTime<Utc>, d: TimeDelta) -> Result<DateTime<Utc>, String> {
    t.checked_add_signed(d).filter(|u| writable(*u)).ok_or_else(|| {
        let by = if d.num_seconds() % 3600 == 0 { format!("{} hours", d.num_hours()) } else { format!("{} minutes", d.num_minutes()) };
        format!("{} and {by} later is past {LAST}, the last time pbem can write", timestamp(t))
    })
}

/// [`later`] by whole hours.
pub fn later_hours(t: DateTime<Utc>, hours: u32) -> Result<DateTime<Utc>, String> {
    later(t, TimeDelta::hours(i64::from(hours)))
}

/// The zone named `name` (an IANA name such as `America/New_York`), or a sentence saying why not.
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>().map_err(|_| format!("{name:?} is not an IANA time zone (e.g. America/New_York, Europe/Berlin, UTC)"))
}

/// The zone of a seat's optional `time_zone` (UTC when unset or, in a hand-edited file, unknown).
pub fn zone(name: Option<&str>) -> Tz {
    name.and_then(|n| n.parse().ok()).unwrap_or(chrono_tz::UTC)
}

/// A time in full: `Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)`, or in UTC
/// `Thu 03 Dec 2026 13:00 UTC`.
pub fn long(t: DateTime<Utc>, tz: Tz) -> String {
    if tz == chrono_tz::UTC {
        format!("{} UTC", t.format("%a %d %b %Y %H:%M"))
    } else {
        format!("{} ({})", t.with_timezone(&tz).format("%a %d %b %Y %H:%M %Z"), timestamp(t))
    }
}

/// A time short enough for a mail subject: `Thu 3 Dec 08:00 EST`.
pub fn short(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%a %-d %b %H:%M %Z").to_string()
}

/// How long from `from` until `deadline`, in whole units, the largest two: `2 days 19 hours`,
/// `5 hours 30 minutes`, `under a minute`; `None` when the deadline is not after `from`.
pub fn left(deadline: DateTime<Utc>, from: DateTime<Utc>) -> Option<String> {
    let secs = (deadline - from).num_seconds();
    if secs <= 0 {
        return None;
    }
    let (days, hours, minutes) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    let unit = |n: i64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let parts: Vec<String> = [(days, "day"), (hours, "hour"), (minutes, "minute")]
        .into_iter()
        .skip_while(|(n, _)| *n == 0)
        .take(2)
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| unit(n, u))
        .collect();
    Some(if parts.is_empty() { "under a minute".to_string() } else { parts.join(" ") })
}

/// A stored deadline (RFC 3339) as a player reads it: the time in their zone ([`long`]), and the
/// time left from `from` (`2 days 19 hours`, or `none: the deadline has passed`). A deadline
/// that is not a time is shown as it is, with nothing said about the time left.
pub fn deadline(deadline: &str, tz: Tz, from: DateTime<Utc>) -> (String, Option<String>) {
    match parse_time(deadline) {
        Ok(t) => (long(t, tz), Some(left(t, from).unwrap_or_else(|| "none: the deadline has passed".into()))),
        Err(_) => (deadline.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_time(s).unwrap()
    }

    #[test]
    fn later_refuses_a_time_past_year_9999_however_far() {
        assert_eq!(later_hours(t("2026-12-03T13:00:00Z"), 72), Ok(t("2026-12-06T13:00:00Z")));
        assert_eq!(later_hours(t("9999-12-28T23:59:59Z"), 72), Ok(t(LAST)));
        let e = later_hours(t("9999-12-31T00:00:00Z"), 72).unwrap_err();
        assert_eq!(e, "9999-12-31T00:00:00Z and 72 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write");
        assert!(later_hours(t("2026-12-03T13:00:00Z"), u32::MAX).is_err());
        assert!(later(t(LAST), TimeDelta::MAX).is_err() && later(t("0000-01-01T00:00:00Z"), TimeDelta::MIN).is_err());
        assert!(writable(t("0000-01-01T00:00:00Z")) && writable(t(LAST)));
        // An offset cannot carry a time past the years pbem writes.
        for s in ["9999-12-31T23:00:00-23:00", "0000-01-01T00:00:00+01:00"] {
            let e = parse_time(s).unwrap_err().to_string();
            assert!(e.ends_with("in UTC not between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z"), "{e}");
        }
    }

    #[test]
    fn a_deadline_reads_in_the_seats_zone_with_the_time_left() {
        let ny = parse_zone("America/New_York").unwrap();
        assert_eq!(long(t("2026-12-03T13:00:00Z"), ny), "Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)");
        assert_eq!(long(t("2026-07-01T13:00:00Z"), chrono_tz::UTC), "Wed 01 Jul 2026 13:00 UTC");
        assert_eq!(short(t("2026-12-03T13:00:00Z"), ny), "Thu 3 Dec 08:00 EST");
        let (at, left) = deadline("2026-12-03T13:00:00Z", ny, t("2026-11-30T17:30:00Z"));
        assert_eq!((at.as_str(), left.as_deref()), ("Thu 03 Dec 2026 08:00 EST (2026-12-03T13:00:00Z)", Some("2 days 19 hours")));
        assert_eq!(deadline("2026-12-03T13:00:00Z", ny, t("2026-12-04T00:00:00Z")).1.as_deref(), Some("none: the deadline has passed"));
        assert!(parse_zone("Mars/Olympus").unwrap_err().contains("not an IANA time zone"));
    }

    #[test]
    fn time_left_names_the_two_largest_units() {
        let from = t("2026-12-01T00:00:00Z");
        assert_eq!(left(t("2026-12-02T00:00:00Z"), from).as_deref(), Some("1 day"));
        assert_eq!(left(t("2026-12-01T05:30:59Z"), from).as_deref(), Some("5 hours 30 minutes"));
        assert_eq!(left(t("2026-12-04T00:07:00Z"), from).as_deref(), Some("3 days"), "minutes under days are dropped");
        assert_eq!(left(t("2026-12-01T00:00:30Z"), from).as_deref(), Some("under a minute"));
        assert_eq!(left(from, from), None);
    }
}
