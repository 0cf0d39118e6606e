//! Reading a MIME part that mail-parser gave up on, as Python's `email` package reads it.
//!
//! mail-parser decodes a base64 or quoted-printable part only up to its closing boundary; when the
//! boundary is missing (a last part with no `--XYZ--`, which RFC 2046 5.1.1 requires but some
//! scripts and cut-off deliveries leave out) or the encoding has a stray character, it keeps the
//! part's encoded text as if it were the content (`is_encoding_problem`). Python's `email` takes
//! the rest of the message as the part (a `CloseBoundaryNotFoundDefect`) and decodes it leniently
//! (base64: characters outside the alphabet skipped, a short last group decoded as far as it
//! goes). We do the same: what was signed is still checked by its signature, so reading more
//! leniently lets nothing wrong in; it only stops a good order from being refused for its
//! packaging.

use mail_parser::{Message, MessagePart, MimeHeaders};

/// A part's content as recovered from its encoded text.
#[derive(Debug, PartialEq, Eq)]
pub struct Recovered {
    /// The decoded bytes.
    pub bytes: Vec<u8>,
    /// The base64 stopped in the middle of a group of four characters with no `=` padding: the
    /// part was cut off (the message ends inside it).
    pub cut: bool,
    /// The message ends inside the part: no closing boundary follows it.
    pub unclosed: bool,
}

/// The content of `part` when mail-parser could not decode it (`is_encoding_problem`) and its
/// `Content-Transfer-Encoding` is `base64` or `quoted-printable`; `None` for every other part (they
/// are read as mail-parser read them).
pub fn recover(msg: &Message<'_>, part: &MessagePart<'_>) -> Option<Recovered> {
    if !part.is_encoding_problem {
        return None;
    }
    let cte = part.content_transfer_encoding()?.trim().to_ascii_lowercase();
    let raw = msg.raw_message().get(part.raw_body_offset() as usize..part.raw_end_offset() as usize)?;
    let unclosed = part.raw_end_offset() as usize >= msg.raw_message().len();
    match cte.as_str() {
        "base64" => {
            let (bytes, cut) = base64_lenient(raw);
            Some(Recovered { bytes, cut, unclosed })
        }
        "quoted-printable" => {
            let bytes = mail_parser::decoders::quoted_printable::quoted_printable_decode(raw).unwrap_or_else(|| raw.to_vec());
            Some(Recovered { bytes, cut: false, unclosed })
        }
        _ => None,
    }
}

/// Whether `part`, which mail-parser decoded, is base64 that stops inside a group of four
/// characters with no `=` padding: cut off, though its closing boundary follows (what Python's
/// `email` flags as `InvalidBase64PaddingDefect`).
pub fn cut_base64(msg: &Message<'_>, part: &MessagePart<'_>) -> bool {
    let is_base64 = part.content_transfer_encoding().is_some_and(|c| c.trim().eq_ignore_ascii_case("base64"));
    let raw = msg.raw_message().get(part.raw_body_offset() as usize..part.raw_end_offset() as usize);
    is_base64 && raw.is_some_and(|r| base64_lenient(r).1)
}

/// Base64 as Python's `binascii.a2b_base64` reads it when not strict: characters outside the
/// alphabet are skipped, the first `=` ends the data, a last group of two or three characters
/// gives one or two bytes. Also whether the data stopped inside a group with no padding (cut off).
pub fn base64_lenient(text: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut n, mut padded) = (0u32, 0u8, false);
    for &c in text {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padded = true;
                break;
            }
            _ => continue,
        };
        acc = acc << 6 | u32::from(v);
        n += 1;
        if n == 4 {
            out.extend_from_slice(&acc.to_be_bytes()[1..]);
            (acc, n) = (0, 0);
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&((acc >> 2) as u16).to_be_bytes()),
        _ => {}
    }
    (out, n != 0 && !padded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_read_as_python_reads_it() {
        assert_eq!(base64_lenient(b"aGVsbG8=\r\n"), (b"hello".to_vec(), false));
        assert_eq!(base64_lenient(b"aGVs\nbG8h\n"), (b"hello!".to_vec(), false));
        // Stray characters skipped; a short last group decoded as far as it goes, and said cut.
        assert_eq!(base64_lenient(b"aG!Vs bG8"), (b"hello".to_vec(), true));
        assert_eq!(base64_lenient(b"aGVsbG"), (b"hell".to_vec(), true));
        assert_eq!(base64_lenient(b"aGVsb"), (b"hel".to_vec(), true));
        assert_eq!(base64_lenient(b""), (vec![], false));
    }

    #[test]
    fn a_last_base64_part_without_its_closing_boundary_is_decoded() {
        let raw = b"From: a@b.c\r\nContent-Type: multipart/mixed; boundary=XYZ\r\n\r\n--XYZ\r\nContent-Type: text/plain\r\n\r\nhi\r\n--XYZ\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=o.toml\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n";
        let msg = crate::mail::extract::parse_message(raw).unwrap();
        let got: Vec<Recovered> = msg.parts.iter().filter_map(|p| recover(&msg, p)).collect();
        assert_eq!(got, [Recovered { bytes: b"hello".to_vec(), cut: false, unclosed: true }]);
    }

    #[test]
    fn a_base64_part_cut_inside_a_group_is_cut_though_its_boundary_closes_it() {
        // tester18 T18-1: mail-parser decodes it (no encoding problem), so it was never named.
        let mail = |b64: &str| format!("From: a@b.c\r\nContent-Type: multipart/mixed; boundary=XYZ\r\n\r\n--XYZ\r\nContent-Type: text/plain\r\n\r\nhi\r\n--XYZ\r\nContent-Disposition: attachment; filename=o.toml\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}\r\n--XYZ--\r\n");
        for (b64, cut) in [("aGVsbG8=", false), ("aGVsbG8h", false), ("aGVsbG", true)] {
            let raw = mail(b64);
            let msg = crate::mail::extract::parse_message(raw.as_bytes()).unwrap();
            assert_eq!(msg.parts.iter().filter(|p| cut_base64(&msg, p)).count(), usize::from(cut), "{b64}");
        }
    }
}
