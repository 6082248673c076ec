//! Avro binary data to Python objects, with the schemas compiled in advance.
//!
//! Why by hand, in Rust: a deserializer's whole cost is its Avro read, and fastavro's
//! (Cython) walks the schema's dicts on every datum: a type-name lookup, a dict lookup
//! per field, a call per value, and, with a reader schema, matching the two schemas
//! again. Here the writer schema, resolved into the reader's if there is one, is
//! compiled once into a table of nodes (`registry/serde/avro_program.py` builds it from
//! fastavro's parsed schemas, following fastavro's reader step for step) and a datum
//! costs only reading its bytes and making its objects. The Rust Avro crates decode
//! into their own value types, which would then have to be converted again.
//!
//! What it gives is what fastavro gives: dicts in fastavro's key order, str, bytes,
//! int, float, bool, None, lists, logical types through fastavro's own functions
//! (except timestamp-millis, timestamp-micros and date, made here with the same value).
//! Where the data is malformed it raises (EOFError for data that ends early, IndexError
//! for a union branch or enum symbol out of range, UnicodeDecodeError, ValueError)
//! where fastavro sometimes returns a value. A datum nested deeper than `MAX_DEPTH` is
//! handed to the fallback decoder (fastavro) whole. tests/unit/test_avro_native.py
//! compares both on random schemas, data and evolutions.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyEOFError, PyIndexError, PyOverflowError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDate, PyDateTime, PyDict, PyFloat, PyList, PyString, PyTuple, PyType,
    PyTzInfo,
};

/// Nesting past this goes to the fallback decoder: a Rust call frame per level must
/// stay well inside the smallest thread stack Python runs on.
const MAX_DEPTH: u32 = 500;

/// date(1970, 1, 1).toordinal(): fastavro reads a date as date.fromordinal(days + this).
const EPOCH_ORDINAL: i64 = 719_163;
/// date(9999, 12, 31).toordinal()
const MAX_ORDINAL: i64 = 3_652_059;

enum Node {
    Null,
    Boolean,
    /// int and long: both zig-zag varints, both Python ints
    Long,
    Float,
    Double,
    Bytes,
    Str,
    Fixed(usize),
    Enum(Vec<Py<PyString>>),
    /// items' node, and whether an item takes at least one byte (then a block cannot
    /// claim more items than bytes remain)
    Array(usize, bool),
    Map(usize),
    Union(Vec<usize>),
    /// fields in the writer's order: the key to read each into (None: read and dropped,
    /// a field the reader does not have), then the reader's fields the writer does not
    /// have, with their default objects
    Record(Vec<(Option<Py<PyString>>, usize)>, Vec<(Py<PyString>, Py<PyAny>)>),
    /// fastavro's reader function for a logical type, called as
    /// fn(value, writer schema, reader schema)
    Logical(usize, Py<PyAny>, Py<PyAny>, Py<PyAny>),
    /// epoch + timedelta(microseconds=value * unit), aware in `tz` (datetime.timezone.utc)
    Timestamp(i128, Py<PyTzInfo>),
    Date,
    /// an int or long read as a float (a reader's promotion)
    LongToFloat,
    /// a string read as bytes (a reader's promotion; the UTF-8 is checked, as fastavro does)
    StringToBytes,
    /// another node (a named type referenced by its name)
    Same(usize),
    /// raises `type(message)` when reached (fastavro's reader raises there)
    Error(Py<PyType>, String),
}

enum Fail {
    Py(PyErr),
    TooDeep,
}

impl From<PyErr> for Fail {
    fn from(err: PyErr) -> Self {
        Fail::Py(err)
    }
}

type Read<'py> = Result<Bound<'py, PyAny>, Fail>;

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn eof() -> Fail {
    Fail::Py(PyEOFError::new_err("the Avro datum ends early"))
}

impl<'a> Cursor<'a> {
    #[inline]
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        if n > self.remaining() {
            return Err(eof());
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, Fail> {
        let b = *self.buf.get(self.pos).ok_or_else(eof)?;
        self.pos += 1;
        Ok(b)
    }

    /// A zig-zag varint of at most 10 bytes.
    #[inline]
    fn long(&mut self) -> Result<i64, Fail> {
        let mut acc: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            acc |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((acc >> 1) as i64 ^ -((acc & 1) as i64));
            }
            shift += 7;
            if shift > 63 {
                return Err(Fail::Py(PyValueError::new_err("an Avro varint longer than 10 bytes")));
            }
        }
    }

    /// A length prefix: a long that must be ≥ 0 and fit what remains.
    #[inline]
    fn length(&mut self) -> Result<usize, Fail> {
        let n = self.long()?;
        if n < 0 {
            return Err(Fail::Py(PyValueError::new_err(format!("a negative Avro length: {n}"))));
        }
        Ok(n as usize)
    }

    /// The item count of the next block of an array or map (0 at the end); a negative
    /// count is followed by the block's size in bytes, which is not needed.
    #[inline]
    fn block(&mut self) -> Result<u64, Fail> {
        let count = self.long()?;
        if count < 0 {
            self.long()?;
            return Ok(count.unsigned_abs());
        }
        Ok(count as u64)
    }
}

/// (year, month, day) of `days` after 1970-01-01, proleptic Gregorian (H. Hinnant's
/// civil_from_days).
fn civil(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[pyclass(frozen, module = "registry.serde._avro_native")]
struct Decoder {
    nodes: Vec<Node>,
    root: usize,
    offset: usize,
    fallback: Py<PyAny>,
}

impl Decoder {
    fn read<'py>(&self, py: Python<'py>, node: usize, cur: &mut Cursor, depth: u32) -> Read<'py> {
        match &self.nodes[node] {
            Node::Null => Ok(py.None().into_bound(py)),
            Node::Boolean => Ok(PyBool::new(py, cur.byte()? != 0).to_owned().into_any()),
            Node::Long => {
                let v = cur.long()?;
                // SAFETY: PyLong_FromLongLong returns a new reference or NULL with an error set.
                Ok(unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromLongLong(v))? })
            }
            Node::Float => {
                let raw = cur.take(4)?;
                let v = f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
                Ok(PyFloat::new(py, f64::from(v)).into_any())
            }
            Node::Double => {
                let raw = cur.take(8)?;
                Ok(PyFloat::new(py, f64::from_le_bytes(raw.try_into().unwrap())).into_any())
            }
            Node::Bytes => {
                let n = cur.length()?;
                Ok(PyBytes::new(py, cur.take(n)?).into_any())
            }
            Node::Str => {
                let n = cur.length()?;
                Ok(string(py, cur.take(n)?)?)
            }
            Node::Fixed(size) => Ok(PyBytes::new(py, cur.take(*size)?).into_any()),
            Node::Enum(symbols) => Ok(pick(symbols, cur.long()?, "enum symbol")?.bind(py).clone().into_any()),
            Node::Array(items, sized) => {
                let depth = deeper(depth)?;
                let list = PyList::empty(py);
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        return Ok(list.into_any());
                    }
                    if *sized && count > cur.remaining() as u64 {
                        return Err(eof());
                    }
                    for _ in 0..count {
                        list.append(self.read(py, *items, cur, depth)?)?;
                    }
                }
            }
            Node::Map(values) => {
                let depth = deeper(depth)?;
                let dict = PyDict::new(py);
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        return Ok(dict.into_any());
                    }
                    // a key takes at least its length's byte
                    if count > cur.remaining() as u64 {
                        return Err(eof());
                    }
                    for _ in 0..count {
                        let n = cur.length()?;
                        let key = string(py, cur.take(n)?)?;
                        dict.set_item(key, self.read(py, *values, cur, depth)?)?;
                    }
                }
            }
            Node::Union(branches) => {
                let branch = *pick(branches, cur.long()?, "union branch")?;
                self.read(py, branch, cur, deeper(depth)?)
            }
            Node::Record(fields, defaults) => {
                let depth = deeper(depth)?;
                let dict = PyDict::new(py);
                for (name, field) in fields {
                    match name {
                        Some(name) => dict.set_item(name.bind(py), self.read(py, *field, cur, depth)?)?,
                        None => self.skip(py, *field, cur, depth)?,
                    }
                }
                for (name, default) in defaults {
                    dict.set_item(name.bind(py), default.bind(py))?;
                }
                Ok(dict.into_any())
            }
            Node::Logical(inner, function, writer, reader) => {
                let value = self.read(py, *inner, cur, depth)?;
                Ok(function.bind(py).call1((value, writer.bind(py), reader.bind(py)))?)
            }
            Node::LongToFloat => Ok(PyFloat::new(py, cur.long()? as f64).into_any()),
            Node::StringToBytes => {
                let n = cur.length()?;
                let raw = cur.take(n)?;
                if let Err(err) = std::str::from_utf8(raw) {
                    string(py, raw)?; // raises the UnicodeDecodeError fastavro raises
                    return Err(Fail::Py(PyValueError::new_err(err.to_string())));
                }
                Ok(PyBytes::new(py, raw).into_any())
            }
            Node::Same(inner) => self.read(py, *inner, cur, depth),
            Node::Error(kind, message) => Err(Fail::Py(PyErr::from_type(kind.bind(py).clone(), message.clone()))),
            Node::Timestamp(unit, tz) => {
                let micros = i128::from(cur.long()?) * unit;
                let days = micros.div_euclid(86_400_000_000) as i64;
                let in_day = micros.rem_euclid(86_400_000_000) as i64;
                let (year, month, day) = civil(days);
                if !(1..=9999).contains(&year) {
                    return Err(Fail::Py(PyOverflowError::new_err("date value out of range")));
                }
                let seconds = in_day / 1_000_000;
                Ok(PyDateTime::new(
                    py,
                    year as i32,
                    month,
                    day,
                    (seconds / 3600) as u8,
                    (seconds / 60 % 60) as u8,
                    (seconds % 60) as u8,
                    (in_day % 1_000_000) as u32,
                    Some(tz.bind(py)),
                )?
                .into_any())
            }
            Node::Date => {
                let ordinal = cur.long()?.saturating_add(EPOCH_ORDINAL);
                if !(1..=MAX_ORDINAL).contains(&ordinal) {
                    return Err(Fail::Py(PyValueError::new_err(format!(
                        "ordinal {ordinal} out of range"
                    ))));
                }
                let (year, month, day) = civil(ordinal - EPOCH_ORDINAL);
                Ok(PyDate::new(py, year as i32, month, day)?.into_any())
            }
        }
    }

    /// Reads past a datum of node `node` without making its objects (a writer's field the
    /// reader does not have), as fastavro's skip_data does.
    fn skip(&self, py: Python<'_>, node: usize, cur: &mut Cursor, depth: u32) -> Result<(), Fail> {
        match &self.nodes[node] {
            Node::Null => {}
            Node::Boolean => {
                cur.byte()?;
            }
            Node::Long | Node::LongToFloat | Node::Timestamp(..) | Node::Date | Node::Enum(_) => {
                cur.long()?;
            }
            Node::Float => {
                cur.take(4)?;
            }
            Node::Double => {
                cur.take(8)?;
            }
            Node::Bytes | Node::Str | Node::StringToBytes => {
                let n = cur.length()?;
                cur.take(n)?;
            }
            Node::Fixed(size) => {
                cur.take(*size)?;
            }
            Node::Array(items, _) | Node::Map(items) => {
                let keyed = matches!(self.nodes[node], Node::Map(_));
                let depth = deeper(depth)?;
                loop {
                    let count = cur.block()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        if keyed {
                            let n = cur.length()?;
                            cur.take(n)?;
                        }
                        self.skip(py, *items, cur, depth)?;
                    }
                }
            }
            Node::Union(branches) => {
                let branch = *pick(branches, cur.long()?, "union branch")?;
                self.skip(py, branch, cur, deeper(depth)?)?
            }
            Node::Record(fields, _) => {
                let depth = deeper(depth)?;
                for (_, field) in fields {
                    self.skip(py, *field, cur, depth)?;
                }
            }
            Node::Logical(inner, ..) | Node::Same(inner) => self.skip(py, *inner, cur, depth)?,
            Node::Error(kind, message) => {
                return Err(Fail::Py(PyErr::from_type(kind.bind(py).clone(), message.clone())))
            }
        }
        Ok(())
    }

    fn run<'py>(&self, py: Python<'py>, buf: &[u8], data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if buf.len() < self.offset {
            return Err(PyEOFError::new_err("the data ends before the Avro datum"));
        }
        let mut cur = Cursor { buf, pos: self.offset };
        match self.read(py, self.root, &mut cur, 0) {
            Ok(value) => Ok(value),
            Err(Fail::Py(err)) => Err(err),
            Err(Fail::TooDeep) => self.fallback.bind(py).call1((data,)),
        }
    }
}

/// items[index], or IndexError (fastavro would count a negative index from the end).
#[inline]
fn pick<'a, T>(items: &'a [T], index: i64, what: &str) -> Result<&'a T, Fail> {
    usize::try_from(index).ok().and_then(|i| items.get(i)).ok_or_else(|| {
        Fail::Py(PyIndexError::new_err(format!("{what} {index} out of {} in the schema", items.len())))
    })
}

#[inline]
fn deeper(depth: u32) -> Result<u32, Fail> {
    if depth >= MAX_DEPTH {
        return Err(Fail::TooDeep);
    }
    Ok(depth + 1)
}

/// A str from UTF-8, strictly, as fastavro reads one: invalid bytes raise UnicodeDecodeError.
#[inline]
fn string<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `raw` is valid for its length; PyUnicode_DecodeUTF8 copies it and returns a
    // new reference, or NULL with the error set (a NULL `errors` means "strict").
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            ffi::PyUnicode_DecodeUTF8(raw.as_ptr().cast(), raw.len() as ffi::Py_ssize_t, std::ptr::null()),
        )
    }
}

fn index(item: &Bound<PyAny>, count: usize) -> PyResult<usize> {
    let i: usize = item.extract()?;
    if i >= count {
        return Err(PyValueError::new_err(format!("node {i} is not in a program of {count}")));
    }
    Ok(i)
}

/// One entry of the program: a tuple whose first item names the node's kind.
fn node(entry: &Bound<PyTuple>, count: usize) -> PyResult<Node> {
    let kind: String = entry.get_item(0)?.extract()?;
    let arg = |i: usize| entry.get_item(i);
    Ok(match kind.as_str() {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "bytes" => Node::Bytes,
        "string" => Node::Str,
        "fixed" => Node::Fixed(arg(1)?.extract()?),
        "enum" => Node::Enum(arg(1)?.extract()?),
        "array" => Node::Array(index(&arg(1)?, count)?, arg(2)?.extract()?),
        "map" => Node::Map(index(&arg(1)?, count)?),
        "union" => {
            let branches = arg(1)?;
            let mut out = Vec::new();
            for branch in branches.try_iter()? {
                out.push(index(&branch?, count)?);
            }
            Node::Union(out)
        }
        "record" => {
            let mut fields = Vec::new();
            for field in arg(1)?.try_iter()? {
                let field = field?;
                let name = field.get_item(0)?;
                let name = if name.is_none() { None } else { Some(name.downcast_into::<PyString>()?.unbind()) };
                fields.push((name, index(&field.get_item(1)?, count)?));
            }
            let mut defaults = Vec::new();
            for default in arg(2)?.try_iter()? {
                let default = default?;
                let name: Bound<PyString> = default.get_item(0)?.downcast_into()?;
                defaults.push((name.unbind(), default.get_item(1)?.unbind()));
            }
            Node::Record(fields, defaults)
        }
        "logical" => Node::Logical(
            index(&arg(1)?, count)?,
            arg(2)?.unbind(),
            arg(3)?.unbind(),
            arg(4)?.unbind(),
        ),
        "long-to-float" => Node::LongToFloat,
        "string-to-bytes" => Node::StringToBytes,
        "same" => Node::Same(index(&arg(1)?, count)?),
        "error" => Node::Error(arg(1)?.downcast_into::<PyType>()?.unbind(), arg(2)?.extract()?),
        "timestamp-millis" => Node::Timestamp(1000, arg(1)?.downcast_into::<PyTzInfo>()?.unbind()),
        "timestamp-micros" => Node::Timestamp(1, arg(1)?.downcast_into::<PyTzInfo>()?.unbind()),
        "date" => Node::Date,
        other => return Err(PyValueError::new_err(format!("no node kind {other:?}"))),
    })
}

#[pymethods]
impl Decoder {
    /// Decoder(program, root, offset, fallback): `program` is a list of node tuples
    /// (see avro_program.py), `root` the index of the datum's node, `offset` where the
    /// datum starts in the data, `fallback` a decoder for data nested too deep.
    #[new]
    fn new(program: &Bound<PyList>, root: usize, offset: usize, fallback: Py<PyAny>) -> PyResult<Self> {
        let count = program.len();
        let mut nodes = Vec::with_capacity(count);
        for entry in program.iter() {
            nodes.push(node(entry.downcast::<PyTuple>()?, count)?);
        }
        if root >= count {
            return Err(PyValueError::new_err("the root is not in the program"));
        }
        Ok(Decoder { nodes, root, offset, fallback })
    }

    /// The datum in `data` (bytes, or anything with a byte buffer) from the offset on.
    fn decode<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(bytes) = data.downcast::<PyBytes>() {
            return self.run(py, bytes.as_bytes(), data);
        }
        let copy = PyBuffer::<u8>::get(data)?.to_vec(py)?;
        self.run(py, &copy, data)
    }
}

#[pymodule]
fn _avro_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Decoder>()
}
