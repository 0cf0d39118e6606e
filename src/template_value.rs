//! A serde serializer straight into the report templates' values: a game's typed view becomes
//! the template's `view` without a `serde_json::Value` built (and dropped) in between.
//!
//! [`to_value`] gives exactly what `minijinja::Value::from(Serde(serde_json::to_value(v)))`
//! gives, and fails where `serde_json::to_value` fails: numbers as `u64` when not negative, else
//! `i64`, floats as `f64` (not finite: none), `None` and unit as none, a unit variant as its
//! name, a newtype variant as a map of one entry, maps and structs as maps ordered by key (each
//! built in one go, not an entry at a time), map keys as strings (numbers and booleans written
//! out), bytes as a list of numbers.

use std::collections::BTreeMap;
use std::fmt;

use minijinja::Value;
use serde::ser::{self, Serialize};

/// Why a value cannot be a template value: what `serde_json::to_value` refuses (a map key that
/// is not a string, a number or a boolean; an integer beyond 64 bits) or a `Serialize` failure.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// `v` as a template value (see the module doc).
///
/// Errors: where `serde_json::to_value(v)` fails.
pub fn to_value<T: Serialize + ?Sized>(v: &T) -> Result<Value, Error> {
    v.serialize(Ser)
}

/// A map of entries in any order (a later entry of the same key wins, as in a JSON object).
fn map(entries: Vec<(Value, Value)>) -> Value {
    Value::from_object(entries.into_iter().collect::<BTreeMap<Value, Value>>())
}

/// `{name: value}`: an enum variant holding `value`.
fn variant(name: &'static str, value: Value) -> Value {
    map(vec![(Value::from(name), value)])
}

fn out_of_range() -> Error {
    Error("number out of range".into())
}

/// The serializer of a value.
struct Ser;

impl ser::Serializer for Ser {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Seq;
    type SerializeMap = Map;
    type SerializeStruct = Map;
    type SerializeStructVariant = Map;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(if v < 0 { Value::from(v) } else { Value::from(v as u64) })
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        self.serialize_i64(i64::try_from(v).map_err(|_| out_of_range())?)
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        Ok(Value::from(u64::try_from(v).map_err(|_| out_of_range())?))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Ok(if v.is_finite() { Value::from(v) } else { Value::from(()) })
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::from(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Ok(Value::from_object(v.iter().map(|&b| Value::from(u64::from(b))).collect::<Vec<Value>>()))
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::from(()))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Value, Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::from(()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, Error> {
        Ok(Value::from(()))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, name: &'static str) -> Result<Value, Error> {
        Ok(Value::from(name))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<Value, Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, name: &'static str, v: &T) -> Result<Value, Error> {
        Ok(variant(name, v.serialize(Ser)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        Ok(Seq { items: Vec::with_capacity(len.unwrap_or(0)), variant: None })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, name: &'static str, len: usize) -> Result<Seq, Error> {
        Ok(Seq { items: Vec::with_capacity(len), variant: Some(name) })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Map, Error> {
        Ok(Map { entries: Vec::with_capacity(len.unwrap_or(0)), key: None, variant: None })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Map, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, name: &'static str, len: usize) -> Result<Map, Error> {
        Ok(Map { entries: Vec::with_capacity(len), key: None, variant: Some(name) })
    }
}

/// A list being serialized (of a tuple variant: `variant`).
struct Seq {
    items: Vec<Value>,
    variant: Option<&'static str>,
}

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.items.push(v.serialize(Ser)?);
        Ok(())
    }
    fn done(self) -> Value {
        let list = Value::from_object(self.items);
        match self.variant {
            Some(name) => variant(name, list),
            None => list,
        }
    }
}

/// The four sequence traits of serde are one and the same here: each element pushed, the list
/// made at the end.
macro_rules! seq_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Seq {
            type Ok = Value;
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
                self.push(v)
            }
            fn end(self) -> Result<Value, Error> {
                Ok(self.done())
            }
        }
    )*};
}
seq_impl!(SerializeSeq::serialize_element, SerializeTuple::serialize_element, SerializeTupleStruct::serialize_field, SerializeTupleVariant::serialize_field);

/// A map or struct being serialized: its entries in the order given, sorted once at the end
/// (of a struct variant: `variant`); `key`: a map's key waiting for its value.
struct Map {
    entries: Vec<(Value, Value)>,
    key: Option<Value>,
    variant: Option<&'static str>,
}

impl Map {
    fn done(self) -> Value {
        let m = map(self.entries);
        match self.variant {
            Some(name) => variant(name, m),
            None => m,
        }
    }
}

impl ser::SerializeMap for Map {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Error> {
        self.key = Some(k.serialize(KeySer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        let k = self.key.take().ok_or_else(|| Error("a map value without its key".into()))?;
        self.entries.push((k, v.serialize(Ser)?));
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(self.done())
    }
}

/// A struct's and a struct variant's fields are entries named by the field.
macro_rules! struct_impl {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Map {
            type Ok = Value;
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Error> {
                self.entries.push((Value::from(name), v.serialize(Ser)?));
                Ok(())
            }
            fn end(self) -> Result<Value, Error> {
                Ok(self.done())
            }
        }
    )*};
}
struct_impl!(SerializeStruct, SerializeStructVariant);

/// The serializer of a map key: a string as it is, a number, boolean or character written out,
/// a unit variant as its name (what a JSON object's key may be); anything else fails.
struct KeySer;

fn not_a_key() -> Error {
    Error("key must be a string".into())
}


/// A key serializer's integer methods: each number as its decimal text.
macro_rules! key_ints {
    ($($method:ident : $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<Value, Error> {
            Ok(Value::from(v.to_string()))
        }
    )*};
}

impl ser::Serializer for KeySer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = ser::Impossible<Value, Error>;
    type SerializeTuple = ser::Impossible<Value, Error>;
    type SerializeTupleStruct = ser::Impossible<Value, Error>;
    type SerializeTupleVariant = ser::Impossible<Value, Error>;
    type SerializeMap = ser::Impossible<Value, Error>;
    type SerializeStruct = ser::Impossible<Value, Error>;
    type SerializeStructVariant = ser::Impossible<Value, Error>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::from(if v { "true" } else { "false" }))
    }
    // A map key that is a number is its decimal text, as a JSON object's key would be.
    key_ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128);
    key_ints!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    fn serialize_f32(self, _: f32) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::from(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, name: &'static str) -> Result<Value, Error> {
        Ok(Value::from(name))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<Value, Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<Value, Error> {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_key())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// What the templates had before: the JSON value, then the template's value of it.
    fn through_json<T: Serialize>(v: &T) -> Option<Value> {
        serde_json::to_value(v).ok().map(|j| Value::from(minijinja::value::Serde(j)))
    }

    fn same<T: Serialize>(v: &T) {
        let (ours, json) = (to_value(v).ok(), through_json(v));
        assert_eq!(format!("{ours:?}"), format!("{json:?}"));
        assert_eq!(ours, json);
    }

    #[derive(Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(i32, String),
        Struct { b: bool, a: Option<f64> },
    }

    #[derive(Serialize)]
    struct Inner<'a> {
        z: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        gone: Option<u32>,
        #[serde(rename = "where")]
        where_: Vec<E>,
    }

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct New(i64);

    #[test]
    fn every_kind_of_value_is_what_json_then_the_template_gives() {
        same(&serde_json::json!({
            "n": 3, "neg": -4, "big": u64::MAX, "f": 1.5, "t": true, "none": null, "s": "a longer string than a small one",
            "list": [1, "x", [], {}, null], "z": {"b": [{"k": 1}], "a": "1"}, "": 0,
        }));
        same(&Inner { z: "zz", gone: None, where_: vec![E::Unit, E::New(7), E::Tuple(-1, "t".into()), E::Struct { b: false, a: Some(f64::NAN) }] });
        same(&(Unit, New(-9), New(9), 'c', 2.5f32, f64::INFINITY, i128::from(i64::MIN), u128::from(u64::MAX), serde_bytes_like()));
        let mut keys: BTreeMap<i32, &str> = BTreeMap::new();
        keys.extend([(-3, "a"), (10, "b"), (2, "c")]);
        same(&keys);
        same(&BTreeMap::from([(true, 1), (false, 2)]));
        same(&BTreeMap::from([('x', 1)]));
        same(&Some(vec![Some(1u8), None]));
    }

    fn serde_bytes_like() -> Vec<u8> {
        vec![0, 255]
    }

    #[test]
    fn what_json_refuses_is_refused() {
        assert!(to_value(&BTreeMap::from([((1, 2), 3)])).is_err() && through_json(&BTreeMap::from([((1, 2), 3)])).is_none());
        assert!(to_value(&u128::MAX).is_err() && through_json(&u128::MAX).is_none());
        assert!(to_value(&i128::MIN).is_err() && through_json(&i128::MIN).is_none());
    }

    #[test]
    fn a_later_entry_of_the_same_key_wins_as_in_json() {
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("k", &1)?;
                m.serialize_entry("a", &0)?;
                m.serialize_entry("k", &2)?;
                m.end()
            }
        }
        same(&Twice);
    }
}
