//! An event's `data:` as [`StreamEvent::from_frame`](super::StreamEvent::from_frame) reads it:
//! straight from the text into the few fields the event uses, strings borrowed when they need no
//! unescaping, with no [`Value`] tree for the frequent events (building one per event was
//! a sixth of a round's instructions). What it reads is what the `Value` path read:
//! - every value is checked as strictly as `Value` checks it, the skipped ones too (UTF-16
//!   surrogate pairs in escapes, number range, nesting depth), so data that is not JSON to `Value`
//!   fails here with the same error at the same position. Serde's `IgnoredAny` and serde_json's
//!   `RawValue` check less (a lone surrogate passes), so neither is used;
//! - no field ever has the wrong type: a field holds what `Value::as_str`, `Value::as_u64` or an
//!   object test would give, and `None` for any other value;
//! - a key given twice keeps its last value, as `Value`'s map does; escaped keys are unescaped;
//! - a top-level value that is not an object has no fields.
//!
//! Sub-objects that are passed on whole (a block, `usage`, a citation) are read as `Value`, as
//! before; a `message_start`'s message is read straight into [`MessagesResponse`] by
//! [`message_start`], once the data passed [`EventData::read`].

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::messages::MessagesResponse;

/// The top-level fields of an event's data.
#[derive(Default)]
pub(super) struct EventData<'a> {
    /// `type`, when a string.
    pub kind: Option<Cow<'a, str>>,
    /// `index`, when a non-negative integer.
    pub index: Option<u64>,
    /// Whether `message` (`message_start`) is an object; [`message_start`] reads it.
    pub message: bool,
    /// `content_block` (`content_block_start`), any value.
    pub content_block: Option<Value>,
    /// `delta`, when an object.
    pub delta: Option<DeltaFields<'a>>,
    /// `usage` (`message_delta`), any value.
    pub usage: Option<Value>,
    /// `error` (`error`), when an object.
    pub error: Option<ErrorFields<'a>>,
}

impl<'a> EventData<'a> {
    /// Reads `data`.
    ///
    /// # Errors
    /// When `data` is not JSON: the error `serde_json::from_str::<Value>` gives.
    pub fn read(data: &'a str) -> Result<Self, serde_json::Error> {
        Ok(serde_json::from_str::<Object<EventData<'a>>>(data)?.0.unwrap_or_default())
    }
}

/// The fields of a `delta` object, of `content_block_delta` and `message_delta` both.
#[derive(Default)]
pub(super) struct DeltaFields<'a> {
    /// `type`, when a string.
    pub kind: Option<Cow<'a, str>>,
    /// `text` (`text_delta`), when a string.
    pub text: Option<Cow<'a, str>>,
    /// `partial_json` (`input_json_delta`), when a string.
    pub partial_json: Option<Cow<'a, str>>,
    /// `thinking` (`thinking_delta`), when a string.
    pub thinking: Option<Cow<'a, str>>,
    /// `signature` (`signature_delta`), when a string.
    pub signature: Option<Cow<'a, str>>,
    /// `citation` (`citations_delta`), any value.
    pub citation: Option<Value>,
    /// `stop_reason` (`message_delta`), any value.
    pub stop_reason: Option<Value>,
    /// `stop_sequence` (`message_delta`), when a string.
    pub stop_sequence: Option<Cow<'a, str>>,
    /// `stop_details` (`message_delta`), any value.
    pub stop_details: Option<Value>,
}

/// The fields of an `error` event's `error` object.
#[derive(Default)]
pub(super) struct ErrorFields<'a> {
    /// `type`, when a string.
    pub kind: Option<Cow<'a, str>>,
    /// `message`, when a string.
    pub message: Option<Cow<'a, str>>,
}

/// The message of a `message_start` whose data [`EventData::read`] accepted with an object
/// `message`, read straight into [`MessagesResponse`] (no `Value` tree, no copy of it).
///
/// `None` where this reading could differ from the `Value` path's (`Value`, `content` set to `[]`
/// when missing or null, then [`MessagesResponse`]): a key given twice, a field of the wrong type,
/// neither `content` nor `stop_reason`. The caller then takes the `Value` path, which gives the
/// event or the error. Where this gives `Some`, it is the `Value` path's message: the data is
/// strict JSON ([`EventData::read`] checked what serde skips here), the same fields are read the
/// same way, and a missing or null `content` is `[]` either way.
pub(super) fn message_start(data: &str) -> Option<MessagesResponse> {
    #[derive(serde::Deserialize)]
    struct Start {
        message: MessagesResponse,
    }
    serde_json::from_str::<Start>(data).ok().map(|start| start.message)
}

/// An object none of whose fields is read: each is checked, then dropped.
#[derive(Default)]
struct Skipped;

impl<'de> Fields<'de> for Skipped {
    fn read<A: MapAccess<'de>>(&mut self, _: &str, map: &mut A) -> Result<(), A::Error> {
        skip(map)
    }
}

/// An object whose fields are read by name.
trait Fields<'de>: Default {
    /// Reads the value of `key` from `map`, or checks and drops it when nothing uses it.
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

impl<'de> Fields<'de> for EventData<'de> {
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value::<Scalar>()?.into_str(),
            "index" => self.index = map.next_value::<Scalar>()?.as_u64(),
            "message" => self.message = map.next_value::<Object<Skipped>>()?.0.is_some(),
            "content_block" => self.content_block = Some(map.next_value()?),
            "delta" => self.delta = map.next_value::<Object<DeltaFields>>()?.0,
            "usage" => self.usage = Some(map.next_value()?),
            "error" => self.error = map.next_value::<Object<ErrorFields>>()?.0,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for DeltaFields<'de> {
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let string = |map: &mut A| Ok::<_, A::Error>(map.next_value::<Scalar>()?.into_str());
        match key {
            "type" => self.kind = string(map)?,
            "text" => self.text = string(map)?,
            "partial_json" => self.partial_json = string(map)?,
            "thinking" => self.thinking = string(map)?,
            "signature" => self.signature = string(map)?,
            "citation" => self.citation = Some(map.next_value()?),
            "stop_reason" => self.stop_reason = Some(map.next_value()?),
            "stop_sequence" => self.stop_sequence = string(map)?,
            "stop_details" => self.stop_details = Some(map.next_value()?),
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for ErrorFields<'de> {
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value::<Scalar>()?.into_str(),
            "message" => self.message = map.next_value::<Scalar>()?.into_str(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

/// Checks and drops the next value of `map`.
fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<Scalar>().map(drop)
}

/// `Some(fields)` for an object, `None` for any other value (checked, then dropped).
struct Object<T>(Option<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

/// The visitor methods of a value that is not an object: [`ScalarVisitor`] checks it, and the
/// result is `Object(None)`.
macro_rules! not_an_object {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<E: Error>(self, $($arg: $ty),*) -> Result<Self::Value, E> {
            ScalarVisitor.$method($($arg),*).map(|_| Object(None))
        }
    )*};
}

impl<'de, T: Fields<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = T::default();
        while let Some(key) = map.next_key::<Scalar>()? {
            match key {
                Scalar::Str(key) => fields.read(&key, &mut map)?,
                _ => skip(&mut map)?, // JSON keys are strings; kept total all the same
            }
        }
        Ok(Object(Some(fields)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        ScalarVisitor.visit_seq(seq).map(|_| Object(None))
    }

    not_an_object! {
        visit_bool(v: bool),
        visit_i64(v: i64),
        visit_u64(v: u64),
        visit_f64(v: f64),
        visit_str(v: &str),
        visit_unit(),
    }
}

/// Any JSON value, reduced to what `Value::as_str` and `Value::as_u64` would give of it.
enum Scalar<'a> {
    /// A string.
    Str(Cow<'a, str>),
    /// A non-negative integer.
    UInt(u64),
    /// Anything else, checked and dropped.
    Other,
}

impl<'a> Scalar<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::UInt(n) => Some(*n),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_any`, as `Value` does: the same checks on every string and number.
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
        // `Value` stores a non-negative i64 as a u64, which `as_u64` gives.
        Ok(u64::try_from(v).map_or(Scalar::Other, Scalar::UInt))
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::UInt(v))
    }

    fn visit_f64<E: Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }

    fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Scalar>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<Scalar, Scalar>()?.is_some() {}
        Ok(Scalar::Other)
    }
}
