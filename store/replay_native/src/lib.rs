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
use std::sync::mpsc::{sync_channel, Receiver};
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
        let tp = entry_type.as_type_ptr();
        let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        let raw = alloc(tp, items.len() as ffi::Py_ssize_t);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        for (index, item) in items.into_iter().enumerate() {
            ffi::PyTuple_SET_ITEM(raw, index as ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(Bound::from_owned_ptr(py, raw))
    }
}

/// Records per message from the parsing thread to the applying one.
const CHUNK: usize = 32;
/// A run is decoded where it is applied, record by record, until `PARALLEL_AFTER` in a
/// row were taken; then, while at least `PARALLEL_FROM` remain, in windows decoded
/// ahead by a second thread, from `FIRST_WINDOW` records doubling to `LAST_WINDOW`. A
/// run that stops early (a topic mixing kinds of records) so wastes little: once
/// parallel, at most a window's gathering and two chunks decoded past the stop.
const PARALLEL_AFTER: usize = 1024;
const PARALLEL_FROM: usize = 512;
const FIRST_WINDOW: usize = 512;
const LAST_WINDOW: usize = 4096;

/// `decode`, where a panic (a bug, in sonic-rs or here) leaves the record to Python
/// instead of unwinding into the reader.
fn decode_guarded(input: Option<(&[u8], &[u8])>) -> Option<Plain> {
    let (raw_key, raw_value) = input?;
    std::panic::catch_unwind(|| decode(raw_key, raw_value)).ok().flatten()
}

/// The decoded records of a window, in order: decoded here, one at a time, or by a
/// parsing thread ahead of the applying one.
enum Decoded<'a> {
    Here(std::slice::Iter<'a, Option<(&'a [u8], &'a [u8])>>),
    Ahead(Receiver<Vec<Option<Plain>>>, std::vec::IntoIter<Option<Plain>>),
}

impl Decoded<'_> {
    fn next(&mut self) -> Option<Plain> {
        match self {
            Decoded::Here(inputs) => decode_guarded(*inputs.next()?),
            Decoded::Ahead(chunks, current) => loop {
                if let Some(item) = current.next() {
                    return item;
                }
                *current = chunks.recv().ok()?.into_iter();
            },
        }
    }
}

/// A window's records and their bytes (None: a tombstone, or not bytes).
type Held<'py> = Vec<(Bound<'py, PyTuple>, Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>)>;

/// What applying a run has built so far.
struct Run<'py> {
    index: usize,
    applied: usize,
    max_id: i64,
    new_ids: Bound<'py, PyList>,
    new_entries: Bound<'py, PyList>,
}

/// Apply `records[position:]` (LogRecord tuples: offset, key, value, expected offset)
/// while each is one this code takes (see the module comment), skipping those below
/// `start`. Returns (the position it stopped at, how many it applied, the largest id
/// applied or 0, the ids applied in order, the entries applied in order); the caller
/// appends the last two to the cache's pending queues.
///
/// A long run (catching up) is decoded by a second thread while this one, holding the
/// GIL throughout, builds and inserts the Python objects: on two cores the two halves
/// of the work overlap. The parsing thread reads only the records' bytes, which the
/// list keeps alive and nothing can change while the GIL is held here.
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
    let maps = Maps { key_bytes, ids, versions, users, entry_type, schema_keytype, avro };
    let mut run = Run { index: position, applied: 0, max_id: 0, new_ids: PyList::empty(py),
                        new_entries: PyList::empty(py) };
    let count = records.len();
    let mut window = 0; // 0: decoded here, a record at a time
    while run.index < count {
        if window == 0 && run.index - position >= PARALLEL_AFTER && count - run.index >= PARALLEL_FROM {
            window = FIRST_WINDOW;
        }
        let size = if window == 0 { 1 } else { (count - run.index).min(window) };
        let mut held: Held<'py> = Vec::with_capacity(size);
        for index in run.index..run.index + size {
            let record = records.get_item(index)?.downcast_into::<PyTuple>()?;
            if record.len() != 4 {
                break; // not a LogRecord: Python's
            }
            let raw_key = record.get_item(1)?.downcast_into::<PyBytes>().ok();
            let raw_value = record.get_item(2)?.downcast_into::<PyBytes>().ok();
            held.push((record, raw_key.zip(raw_value)));
        }
        let whole = held.len() == size;
        let inputs: Vec<Option<(&[u8], &[u8])>> =
            held.iter().map(|(_, bytes)| bytes.as_ref().map(|(k, v)| (k.as_bytes(), v.as_bytes()))).collect();
        let finished = if window == 0 {
            apply_window(py, &held, Decoded::Here(inputs.iter()), start, &maps, &mut run)?
        } else {
            window = (window * 2).min(LAST_WINDOW);
            std::thread::scope(|scope| {
                let (sender, receiver) = sync_channel::<Vec<Option<Plain>>>(1);
                let ahead = &inputs;
                let parser = std::thread::Builder::new().name("replay-parse".into()).spawn_scoped(scope, move || {
                    for chunk in ahead.chunks(CHUNK) {
                        let parsed = chunk.iter().map(|input| decode_guarded(*input)).collect();
                        if sender.send(parsed).is_err() {
                            return; // the run stopped: the rest is Python's
                        }
                    }
                });
                let decoded = match parser {
                    Ok(_) => Decoded::Ahead(receiver, Vec::new().into_iter()),
                    Err(_) => Decoded::Here(inputs.iter()),
                };
                // Returning drops `decoded` (the receiver), which ends the parsing
                // thread; the scope then waits for it.
                apply_window(py, &held, decoded, start, &maps, &mut run)
            })?
        };
        if !finished || !whole {
            break;
        }
    }
    Ok((run.index, run.applied, run.max_id, run.new_ids, run.new_entries))
}

/// The cache's maps and the constants entries are built with.
struct Maps<'a, 'py> {
    key_bytes: &'a Bound<'py, PyDict>,
    ids: &'a Bound<'py, PyDict>,
    versions: &'a Bound<'py, PyDict>,
    users: &'a Bound<'py, PyDict>,
    entry_type: &'a Bound<'py, PyType>,
    schema_keytype: &'a Bound<'py, PyString>,
    avro: &'a Bound<'py, PyString>,
}

/// Apply `held`, decoded by `decoded`, into `run` while each record is taken; true
/// if all were.
fn apply_window<'py>(
    py: Python<'py>,
    held: &Held<'py>,
    mut decoded: Decoded<'_>,
    start: i64,
    maps: &Maps<'_, 'py>,
    run: &mut Run<'py>,
) -> PyResult<bool> {
    let Maps { key_bytes, ids, versions, users, entry_type, schema_keytype, avro } = *maps;
    let empty = PyTuple::empty(py).into_any();
    let none = py.None().into_bound(py);
    for (record, bytes) in held {
        let plain = decoded.next(); // in step with `held`, taken or not
        let offset: i64 = record.get_item(0)?.extract()?;
        if offset < start {
            run.index += 1; // a waiting writer applied it (the reader's own rule)
            continue;
        }
        let expected = record.get_item(3)?;
        if !expected.is_none() && expected.extract::<i64>().ok() != Some(offset) {
            return Ok(false); // dropped by the reader, which also remembers its key
        }
        let (Some((raw_key, _)), Some(plain)) = (bytes, plain) else {
            return Ok(false); // a tombstone, not bytes, or not a plain SCHEMA record
        };
        if plain.subject.starts_with(":.") {
            return Ok(false); // another context: its own maps
        }
        let id = plain.id.into_pyobject(py)?.into_any();
        if ids.contains(&id)? || users.contains(&id)? {
            return Ok(false); // an id in use: content to compare, users to add
        }
        let subject = PyString::new(py, &plain.subject);
        let version = plain.version.into_pyobject(py)?.into_any();
        let identity = PyTuple::new(py, [schema_keytype.as_any(), subject.as_any(), &version])?;
        if key_bytes.contains(&identity)? {
            return Ok(false); // a key seen before: byte forms to keep, a version to replace
        }
        let subject_versions = match versions.get_item(&subject)? {
            Some(existing) => {
                let existing = existing.downcast_into::<PyDict>()?;
                if existing.contains(&version)? {
                    return Ok(false);
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
        run.new_ids.append(&id)?;
        run.new_entries.append(&entry)?;
        if plain.id > run.max_id {
            run.max_id = plain.id;
        }
        run.applied += 1;
        run.index += 1;
    }
    Ok(true)
}

#[pymodule]
fn _replay_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(apply_plain_run, module)?)?;
    Ok(())
}
