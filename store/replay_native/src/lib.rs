//! The replay's common case, compiled: SCHEMA records that add a new version with a new
//! id in the default context, applied to the cache's maps as `Cache._put_version` would.
//!
//! Why by hand, in Rust: a cold start applies every record of the topic once, and in
//! Python decoding and applying one costs 6-10 us (two `orjson.loads`, a dozen checks, a
//! dozen dict operations), most of a cold start (bench/cold_start.py). No library does
//! this: it is our record format and our cache's maps.
//!
//! The rule that keeps it correct: anything this code is not sure of, it leaves to the
//! Python path (`store/reader.py`), which stays the definition. A record is taken here
//! only when decoding it in Python would give a `PlainSchemaValue` (a SCHEMA key, a value
//! with no references, metadata or rule set) and applying it would only add entries
//! (its id, its key and its version unseen, its subject in the default context). At the
//! first record that is not so, `apply_plain_run` stops and returns its position; the
//! caller applies that one record in Python and calls again after it.
//! tests/unit/test_replay_native.py replays the same records both ways and compares
//! every map.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use sonic_rs::{JsonContainerTrait, JsonValueTrait, Value};

/// What `decode_schema_record` gives for a plain SCHEMA record, not yet Python objects.
struct Plain {
    subject: String,
    version: i64,
    id: i64,
    schema: String,
    schema_type: Option<String>, // None: "AVRO" (absent, null or "")
    deleted: bool,
    md5: Option<String>,
}

/// The entries of the JSON object `raw` (None if it is not one), parsed with sonic-rs:
/// strict RFC 8259 like orjson (invalid UTF-8, NaN, trailing commas refused), and as
/// fast as orjson on our records, twice serde_json's speed. Where either parser
/// refuses, or the two could differ (a name given twice: orjson keeps the last),
/// Python decides.
fn object(raw: &[u8]) -> Option<Value> {
    if !shallow(raw) {
        return None;
    }
    let value: Value = sonic_rs::from_slice(raw).ok()?;
    value.is_object().then_some(value)
}

/// Whether `raw` nests arrays and objects at most two deep (a value's `"references":
/// []`), counted outside strings. Checked before parsing: orjson refuses documents
/// nested past 1024 and sonic-rs does not, and nothing this code takes is nested
/// deeper, so a deeper document is left to Python without being parsed here. (For a
/// document that is not JSON the count may be off; the parser then refuses it.)
fn shallow(raw: &[u8]) -> bool {
    let mut depth = 0u32;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in raw {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > 2 {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// `names`' values in the object `value`, None where absent; None in all when a name is
/// given twice.
fn fields<'v, const N: usize>(value: &'v Value, names: [&str; N]) -> Option<[Option<&'v Value>; N]> {
    let mut found: [Option<&Value>; N] = [None; N];
    for (name, item) in value.as_object()?.iter() {
        if let Some(slot) = names.iter().position(|known| *known == name) {
            if found[slot].replace(item).is_some() {
                return None;
            }
        }
    }
    Some(found)
}

fn is_int(value: &Value) -> bool {
    value.is_i64() || value.is_u64()
}

/// The record as `decode_schema_record` would give it when that is a PlainSchemaValue;
/// None for every other case (another key type, a tombstone, a malformed record,
/// references, metadata, a rule set, a value this code is unsure of).
fn decode(raw_key: &[u8], raw_value: &[u8]) -> Option<Plain> {
    let key = object(raw_key)?;
    let [keytype, magic, subject, version] = fields(&key, ["keytype", "magic", "subject", "version"])?;
    if keytype?.as_str()? != "SCHEMA" {
        return None;
    }
    if !magic.map_or(true, is_int) {
        return None;
    }
    let subject = subject?.as_str()?;
    let version = version?.as_i64()?; // as_i64: a number without fraction or exponent
    let value = object(raw_value)?;
    let [references, metadata, rule_set, id, schema, schema_type, deleted, md5] = fields(
        &value,
        ["references", "metadata", "ruleSet", "id", "schema", "schemaType", "deleted", "md5"],
    )?;
    if let Some(references) = references {
        if !(references.is_null() || references.as_array().is_some_and(|items| items.is_empty())) {
            return None;
        }
    }
    if !metadata.map_or(true, |item| item.is_null()) || !rule_set.map_or(true, |item| item.is_null()) {
        return None;
    }
    let id = id?.as_i64()?;
    let schema = schema?.as_str()?;
    let schema_type = match schema_type {
        None => None,
        Some(item) if item.is_null() => None,
        // `or "AVRO"` of a falsy non-string, or an error: Python's to decide.
        Some(item) => match item.as_str()? {
            "" => None,
            text => Some(text.to_owned()),
        },
    };
    let deleted = deleted.and_then(|item| item.as_bool()) == Some(true);
    let md5 = md5.and_then(|item| item.as_str()).filter(|text| !text.is_empty()).map(str::to_owned);
    Some(Plain {
        subject: subject.to_owned(),
        version,
        id,
        schema: schema.to_owned(),
        schema_type,
        deleted,
        md5,
    })
}

/// `tuple.__new__(entry_type, items)` without a Python call: `entry_type` is a subclass
/// of tuple with no fields of its own (a NamedTuple), so it has tuple's layout.
fn new_entry<'py>(
    py: Python<'py>,
    entry_type: &Bound<'py, PyType>,
    items: [Bound<'py, PyAny>; 8],
) -> PyResult<Bound<'py, PyAny>> {
    unsafe {
        // The limited API (abi3, one wheel for every CPython from 3.11): the type's slot
        // through PyType_GetSlot, and PyTuple_SetItem, which steals the reference as the
        // macro does, on a tuple nothing else has seen yet.
        let tp = entry_type.as_type_ptr();
        let slot = ffi::PyType_GetSlot(tp, ffi::Py_tp_alloc);
        let alloc: ffi::allocfunc = if slot.is_null() {
            ffi::PyType_GenericAlloc
        } else {
            std::mem::transmute::<*mut std::ffi::c_void, ffi::allocfunc>(slot)
        };
        let raw = alloc(tp, items.len() as ffi::Py_ssize_t);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        for (index, item) in items.into_iter().enumerate() {
            if ffi::PyTuple_SetItem(raw, index as ffi::Py_ssize_t, item.into_ptr()) != 0 {
                ffi::Py_DECREF(raw);
                return Err(PyErr::fetch(py));
            }
        }
        Ok(Bound::from_owned_ptr(py, raw))
    }
}

/// Apply `records[position:]` (LogRecord tuples: offset, key, value, expected offset)
/// while each is one this code takes (see the module comment), skipping those below
/// `start`. Returns (the position it stopped at, how many it applied, the largest id
/// applied or 0, the ids applied in order, the entries applied in order); the caller
/// appends the last two to the cache's pending queues.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn apply_plain_run<'py>(
    py: Python<'py>,
    records: &Bound<'py, PyList>,
    position: usize,
    start: i64,
    key_bytes: &Bound<'py, PyDict>,
    ids: &Bound<'py, PyDict>,
    versions: &Bound<'py, PyDict>,
    users: &Bound<'py, PyDict>,
    entry_type: &Bound<'py, PyType>,
    schema_keytype: &Bound<'py, PyString>,
    avro: &Bound<'py, PyString>,
) -> PyResult<(usize, usize, i64, Bound<'py, PyList>, Bound<'py, PyList>)> {
    if !entry_type.is_subclass_of::<PyTuple>()? {
        return Err(PyTypeError::new_err("entry_type must be a tuple subclass"));
    }
    let new_ids = PyList::empty(py);
    let new_entries = PyList::empty(py);
    let empty = PyTuple::empty(py).into_any();
    let none = py.None().into_bound(py);
    let mut applied = 0usize;
    let mut max_id = 0i64;
    let mut index = position;
    let count = records.len();
    while index < count {
        let record = records.get_item(index)?;
        let record = record.downcast::<PyTuple>()?;
        if record.len() != 4 {
            break;
        }
        let offset: i64 = record.get_item(0)?.extract()?;
        if offset < start {
            index += 1; // a waiting writer applied it (the reader's own rule)
            continue;
        }
        let expected = record.get_item(3)?;
        if !expected.is_none() && expected.extract::<i64>().ok() != Some(offset) {
            break; // dropped by the reader, which also remembers its key
        }
        let raw_key_obj = record.get_item(1)?;
        let raw_value_obj = record.get_item(2)?;
        let (Ok(raw_key), Ok(raw_value)) = (raw_key_obj.downcast::<PyBytes>(), raw_value_obj.downcast::<PyBytes>())
        else {
            break; // a tombstone (None), or not bytes
        };
        // A panic (a bug, in sonic-rs or here) leaves the record to Python instead of
        // unwinding into the reader.
        let (key_slice, value_slice) = (raw_key.as_bytes(), raw_value.as_bytes());
        let decoded = std::panic::catch_unwind(|| decode(key_slice, value_slice));
        let Ok(Some(plain)) = decoded else {
            break;
        };
        if plain.subject.starts_with(":.") {
            break; // another context: its own maps
        }
        let id = plain.id.into_pyobject(py)?.into_any();
        if ids.contains(&id)? || users.contains(&id)? {
            break; // an id in use: content to compare, users to add
        }
        let subject = PyString::new(py, &plain.subject);
        let version = plain.version.into_pyobject(py)?.into_any();
        let identity = PyTuple::new(py, [schema_keytype.as_any(), subject.as_any(), &version])?;
        if key_bytes.contains(&identity)? {
            break; // a key seen before: byte forms to keep, a version to replace
        }
        let subject_versions = match versions.get_item(&subject)? {
            Some(existing) => {
                let existing = existing.downcast_into::<PyDict>()?;
                if existing.contains(&version)? {
                    break;
                }
                Some(existing)
            }
            None => None,
        };
        let schema_type = match &plain.schema_type {
            None => avro.clone().into_any(),
            Some(text) => PyString::new(py, text).into_any(),
        };
        let md5 = match &plain.md5 {
            None => none.clone(),
            Some(text) => PyString::new(py, text).into_any(),
        };
        let entry = new_entry(
            py,
            entry_type,
            [
                id.clone(),
                PyString::new(py, &plain.schema).into_any(),
                schema_type,
                pyo3::types::PyBool::new(py, plain.deleted).to_owned().into_any(),
                md5,
                empty.clone(),
                none.clone(),
                none.clone(),
            ],
        )?;
        key_bytes.set_item(&identity, raw_key)?;
        ids.set_item(&id, &entry)?;
        let subject_versions = match subject_versions {
            Some(existing) => existing,
            None => {
                let created = PyDict::new(py);
                versions.set_item(&subject, &created)?;
                created
            }
        };
        subject_versions.set_item(&version, &entry)?;
        users.set_item(&id, PyTuple::new(py, [subject.as_any(), &version])?)?;
        new_ids.append(&id)?;
        new_entries.append(&entry)?;
        if plain.id > max_id {
            max_id = plain.id;
        }
        applied += 1;
        index += 1;
    }
    Ok((index, applied, max_id, new_ids, new_entries))
}

#[pymodule]
fn _replay_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(apply_plain_run, module)?)?;
    Ok(())
}
