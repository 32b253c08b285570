//! The bounds one rendering of a chat template runs within: the bytes its values and output may
//! take, how deeply its values may nest, and how much measuring the checks may do.
//!
//! Owns the accounting (`Budget`), the bounded measurement of a value, and the checked versions
//! of everything a template can grow a value with: the operators `+`, `*` and `~` (delegated to
//! minijinja once the size of the result is known to fit), list and map literals and call results
//! (`__seek_check`), namespace assignments, every built-in filter and Python string method, and
//! the output itself. It must not render (the template module does) nor change a value a check
//! lets through.
//!
//! The accounting is conservative: a step is charged the bytes its result may take before it
//! runs and nothing is given back, so the sum of the charges bounds what the template can hold
//! at once. Values a template only shares (the conversation, a variable used twice) are charged
//! each time they are copied into something new.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use minijinja::value::{Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, Expression, State, context};

/// Bytes one rendering may produce, values and output together.
pub const MEMORY_LIMIT: u64 = 64 << 20;
/// Levels a value may nest (a list in a list is two); real templates use fewer than ten.
pub const MAX_DEPTH: usize = 64;
/// Values the checks may visit while measuring, in one rendering.
pub const WORK_LIMIT: u64 = 50_000_000;
/// What one element of a list or map is charged besides its own contents.
const NODE: u64 = 32;
/// Bound on how much longer text becomes when written quoted or escaped (`\u0000`, `&quot;`).
const ESCAPED: u64 = 6;
/// Bound on the bytes a string becomes when split into one value per piece.
const PIECES: u64 = 64;

/// Which bound a rendering ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Memory,
    Depth,
    Work,
    /// A namespace was given a value holding a namespace (a chain of them nests without end).
    NamespaceInNamespace,
}

impl Exceeded {
    /// What was exceeded, for the error message.
    pub fn describe(self) -> String {
        match self {
            Self::Memory => format!("{} MiB of values and output", MEMORY_LIMIT >> 20),
            Self::Depth => format!("values nested {MAX_DEPTH} levels deep"),
            Self::Work => format!("{WORK_LIMIT} values measured"),
            Self::NamespaceInNamespace => {
                "namespaces holding namespaces (`{% set ns.x = other_ns %}`)".to_owned()
            }
        }
    }
}

/// The accounting of one rendering.
#[derive(Debug, Default)]
pub struct Budget {
    charged: AtomicU64,
    work: AtomicU64,
    exceeded: Mutex<Option<Exceeded>>,
}

/// What measuring a value found.
#[derive(Debug, Clone, Copy, Default)]
struct Measure {
    /// Bytes its text and elements take, each shared part counted at every place it appears.
    size: u64,
    depth: usize,
}

impl Budget {
    /// The bound the rendering ran into, if any.
    pub fn exceeded(&self) -> Option<Exceeded> {
        *self.exceeded.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn trip(&self, what: Exceeded) -> Error {
        let mut slot = self.exceeded.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(what);
        Error::new(
            ErrorKind::InvalidOperation,
            format!("the template exceeded {}", what.describe()),
        )
    }

    fn remaining(&self) -> u64 {
        MEMORY_LIMIT.saturating_sub(self.charged.load(Ordering::Relaxed))
    }

    /// Charges `bytes`, failing when the rendering's total would pass the limit.
    fn charge(&self, bytes: u64) -> Result<(), Error> {
        let before = self.charged.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > MEMORY_LIMIT {
            return Err(self.trip(Exceeded::Memory));
        }
        Ok(())
    }

    /// Measures `value` without recursion, stopping as soon as it is larger than what is left,
    /// deeper than `MAX_DEPTH`, or the rendering's measuring work is spent.
    fn measure(&self, value: &Value) -> Result<Measure, Error> {
        self.measure_with(value, |_| Ok(()))
    }

    fn measure_with(
        &self,
        value: &Value,
        mut visit: impl FnMut(&Value) -> Result<(), Error>,
    ) -> Result<Measure, Error> {
        let cap = self.remaining();
        let mut m = Measure::default();
        // One iterator per open level: the stack is at most MAX_DEPTH long.
        let mut open: Vec<(Value, minijinja::value::ValueIter, bool)> = Vec::new();
        let mut next = Some(value.clone());
        loop {
            let Some(v) = next.take() else {
                let Some((parent, iter, is_map)) = open.last_mut() else {
                    break;
                };
                match iter.next() {
                    Some(key) if *is_map => {
                        let item = parent.get_item(&key).unwrap_or_default();
                        self.count(&key, &mut m, cap)?;
                        next = Some(item);
                    }
                    Some(item) => next = Some(item),
                    None => {
                        open.pop();
                    }
                }
                continue;
            };
            visit(&v)?;
            self.count(&v, &mut m, cap)?;
            let is_map = match v.kind() {
                ValueKind::Seq | ValueKind::Iterable => false,
                ValueKind::Map => true,
                _ => continue,
            };
            if open.len() + 1 > MAX_DEPTH {
                return Err(self.trip(Exceeded::Depth));
            }
            m.depth = m.depth.max(open.len() + 1);
            if let Ok(iter) = v.try_iter() {
                open.push((v, iter, is_map));
            }
        }
        Ok(m)
    }

    /// Adds one visited value to `m`.
    fn count(&self, v: &Value, m: &mut Measure, cap: u64) -> Result<(), Error> {
        if self.work.fetch_add(1, Ordering::Relaxed) >= WORK_LIMIT {
            return Err(self.trip(Exceeded::Work));
        }
        let own = match (v.as_str(), v.as_bytes()) {
            (Some(s), _) => s.len() as u64,
            (None, Some(b)) => b.len() as u64,
            _ => 8,
        };
        m.size = m.size.saturating_add(own).saturating_add(NODE);
        if m.size > cap {
            return Err(self.trip(Exceeded::Memory));
        }
        Ok(())
    }

    /// Bytes `value` takes written out: a string as itself, anything else quoted and escaped.
    fn written(&self, value: &Value) -> Result<u64, Error> {
        match value.as_str() {
            Some(s) => Ok(s.len() as u64),
            None => Ok(self.measure(value)?.size.saturating_mul(ESCAPED)),
        }
    }

    /// A freshly built value (a list or map literal, a call's result): charged what it holds,
    /// refused when it nests too deeply.
    pub fn check(&self, value: Value) -> Result<Value, Error> {
        // A lazy sequence (`range(…)`) holds nothing yet: it is measured where it is copied
        // into something (a list, the output, a container that is itself checked).
        if value.kind() == ValueKind::Iterable {
            return Ok(value);
        }
        let m = self.measure(&value)?;
        self.charge(m.size)?;
        Ok(value)
    }

    /// The value of `{% set ns.attr = … %}`: like `check`, and it may hold no namespace (else
    /// namespaces could be chained without end, beyond what any check sees).
    pub fn setattr(&self, value: Value) -> Result<Value, Error> {
        let m = self.measure_with(&value, |v| {
            let mutable_map = v.kind() == ValueKind::Map
                && v.as_object().is_some()
                && v.downcast_object_ref::<BTreeMap<Value, Value>>().is_none();
            if mutable_map {
                return Err(self.trip(Exceeded::NamespaceInNamespace));
            }
            Ok(())
        })?;
        self.charge(m.size)?;
        Ok(value)
    }

    /// `left op right` for `+`, `*` and `~`, charged its result's size before it is computed.
    pub fn binop(&self, op: &str, left: Value, right: Value) -> Result<Value, Error> {
        let need = match op {
            "~" => self.written(&left)?.saturating_add(self.written(&right)?),
            "*" => {
                let (seq, times) = match (left.as_usize(), right.as_usize()) {
                    (_, Some(n)) if left.kind() != ValueKind::Number => (&left, n),
                    (Some(n), _) if right.kind() != ValueKind::Number => (&right, n),
                    _ => (&left, 0),
                };
                self.measure(seq)?.size.saturating_mul(times as u64)
            }
            _ if left.kind() == ValueKind::Number && right.kind() == ValueKind::Number => 0,
            _ => self
                .measure(&left)?
                .size
                .saturating_add(self.measure(&right)?.size),
        };
        self.charge(need)?;
        let expression = match op {
            "+" => &OPS.add,
            "*" => &OPS.mul,
            _ => &OPS.concat,
        };
        match expression {
            Ok(expression) => expression.eval(context! { a => left, b => right }),
            Err(reason) => Err(Error::new(ErrorKind::InvalidOperation, reason.clone())),
        }
    }

    /// Before `value` is written to the output (or a capture): charged its written size.
    pub fn emit(&self, value: &Value) -> Result<(), Error> {
        let need = self.written(value)?;
        self.charge(need)
    }

    /// Before built-in filter `name` runs on `args` (its input first): charged the most its
    /// result can take. After: a filter that nests (`batch`, `items`, …) has its result measured.
    fn before_filter(&self, name: &str, args: &[Value]) -> Result<(), Error> {
        let input = args.first().cloned().unwrap_or_default();
        let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
        let need = match name {
            // Results no larger than a part of the input, without copying text.
            "length" | "count" | "first" | "last" | "default" | "d" | "attr" | "int" | "float"
            | "abs" | "round" | "bool" | "min" | "max" | "sum" | "trim" => 0,
            "select" | "reject" | "selectattr" | "rejectattr" | "map" | "unique" | "sort"
            | "reverse" | "chain" => self.measure(&input)?.size,
            "items" | "dictsort" | "groupby" | "zip" => {
                self.measure(&input)?.size.saturating_mul(4)
            }
            "list" | "split" | "lines" => match input.as_str() {
                Some(s) => (s.len() as u64 + 1).saturating_mul(PIECES),
                None => self.measure(&input)?.size,
            },
            "batch" | "slice" => {
                let count = arg(1).as_usize().unwrap_or(0) as u64;
                let filler = self.measure(&arg(2))?.size;
                let body = self.measure(&input)?.size.saturating_mul(4);
                body.saturating_add(count.saturating_mul(NODE.saturating_add(filler)))
            }
            "upper" | "lower" | "title" | "capitalize" => self.written(&input)?.saturating_mul(3),
            "replace" => {
                replaced(&input, &arg(1), &arg(2)).map_or_else(|| self.all_written(args), Ok)?
            }
            "join" => {
                let sep = self.written(&arg(1))?;
                let items = self.measure(&input)?.size;
                items
                    .saturating_mul(ESCAPED)
                    .saturating_add(items.saturating_mul(sep))
            }
            "indent" => {
                let text = self.written(&input)?;
                let lines = input
                    .as_str()
                    .map_or(text, |s| s.matches('\n').count() as u64)
                    .saturating_add(1);
                let width = self.width(&arg(1))?.max(self.kwarg_width(args, "width")?);
                text.saturating_add(lines.saturating_mul(width))
            }
            "format" => {
                let spec = input.as_str().map_or(0, numbers_in);
                self.all_written(args)?.saturating_add(spec)
            }
            "tojson" | "pprint" => {
                let m = self.measure(&input)?;
                let indent = self.width(&arg(1))?.max(self.kwarg_width(args, "indent")?);
                let nodes = m.size / NODE + 1;
                let per_line = (m.depth as u64 + 1).saturating_mul(indent.max(4));
                m.size
                    .saturating_mul(ESCAPED)
                    .saturating_add(nodes.saturating_mul(per_line))
            }
            // safe, escape, e, string, urlencode and any other: the arguments written escaped.
            _ => self.all_written(args)?,
        };
        self.charge(need)
    }

    fn after_filter(&self, name: &str, result: &Value) -> Result<(), Error> {
        if matches!(
            name,
            "items" | "dictsort" | "groupby" | "zip" | "batch" | "slice" | "chain"
        ) {
            self.measure(result)?;
        }
        Ok(())
    }

    /// Before Python string method `method` of `value` runs on `args`.
    fn before_method(&self, value: &Value, method: &str, args: &[Value]) -> Result<(), Error> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
        let need = match method {
            "upper" | "lower" | "title" | "capitalize" => self.written(value)?.saturating_mul(3),
            "split" | "splitlines" | "items" | "keys" | "values" => match value.as_str() {
                Some(s) => (s.len() as u64 + 1).saturating_mul(PIECES),
                None => self.measure(value)?.size.saturating_mul(4),
            },
            "replace" => {
                replaced(value, &arg(0), &arg(1)).map_or_else(|| self.all_written(args), Ok)?
            }
            "join" => {
                let sep = self.written(value)?;
                let items = self.measure(&arg(0))?.size;
                items
                    .saturating_mul(ESCAPED)
                    .saturating_add(items.saturating_mul(sep))
            }
            "format" => {
                let spec = value.as_str().map_or(0, numbers_in);
                self.all_written(args)?
                    .saturating_add(self.written(value)?)
                    .saturating_add(spec)
            }
            _ => self.all_written(args)?.saturating_add(self.written(value)?),
        };
        self.charge(need)
    }

    fn all_written(&self, args: &[Value]) -> Result<u64, Error> {
        args.iter().try_fold(0u64, |sum, a| {
            Ok(sum.saturating_add(self.written(a)?.saturating_mul(ESCAPED)))
        })
    }

    /// A width argument: a number, or a string repeated as the indent.
    fn width(&self, value: &Value) -> Result<u64, Error> {
        Ok(match value.as_usize() {
            Some(n) => n as u64,
            None if value.is_undefined() || value.is_none() => 0,
            None => self.written(value)?,
        })
    }

    fn kwarg_width(&self, args: &[Value], name: &str) -> Result<u64, Error> {
        match args.last() {
            Some(last) if last.kind() == ValueKind::Map => {
                self.width(&last.get_attr(name).unwrap_or_default())
            }
            _ => Ok(0),
        }
    }
}

/// The exact length of `text` with `old` replaced by `new` (an empty `old` matches between
/// every two characters, as in minijinja), when all three are strings.
fn replaced(text: &Value, old: &Value, new: &Value) -> Option<u64> {
    let (text, old, new) = (text.as_str()?, old.as_str()?, new.as_str()?);
    let matches = if old.is_empty() {
        text.chars().count() + 1
    } else {
        text.matches(old).count()
    };
    Some((text.len() as u64).saturating_add((matches as u64).saturating_mul(new.len() as u64)))
}

/// The sum of the numbers written in a format string: a bound on the widths it asks for.
fn numbers_in(spec: &str) -> u64 {
    spec.split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .map(|run| run.parse::<u64>().unwrap_or(u64::MAX))
        .fold(0u64, u64::saturating_add)
}

/// minijinja's own `+`, `*` and `~`, applied once a check has let the operands through.
struct Ops {
    add: Result<Expression<'static, 'static>, String>,
    mul: Result<Expression<'static, 'static>, String>,
    concat: Result<Expression<'static, 'static>, String>,
}

static OPS_ENV: LazyLock<Environment<'static>> = LazyLock::new(Environment::new);
static OPS: LazyLock<Ops> = LazyLock::new(|| {
    let compile = |source: &'static str| {
        OPS_ENV
            .compile_expression(source)
            .map_err(|e| format!("cannot compile {source}: {e}"))
    };
    Ops {
        add: compile("a + b"),
        mul: compile("a * b"),
        concat: compile("a ~ b"),
    }
});

/// The built-in filters, each replaced by a checked version of itself.
const FILTERS: &[&str] = &[
    "safe",
    "escape",
    "e",
    "lower",
    "upper",
    "title",
    "capitalize",
    "replace",
    "length",
    "count",
    "dictsort",
    "items",
    "reverse",
    "trim",
    "join",
    "split",
    "lines",
    "default",
    "d",
    "round",
    "abs",
    "int",
    "float",
    "attr",
    "first",
    "last",
    "min",
    "max",
    "sort",
    "list",
    "string",
    "bool",
    "batch",
    "slice",
    "sum",
    "indent",
    "select",
    "reject",
    "selectattr",
    "rejectattr",
    "map",
    "groupby",
    "unique",
    "chain",
    "zip",
    "pprint",
    "format",
    "tojson",
];

/// Installs the checks on `env`: the functions the rewritten template calls, checked built-in
/// filters and string methods, and the output check.
pub fn install(env: &mut Environment<'_>, budget: &Arc<Budget>) {
    let b = Arc::clone(budget);
    env.add_function(super::guard::CHECK, move |v: Value| b.check(v));
    let b = Arc::clone(budget);
    env.add_function(super::guard::SETATTR, move |v: Value| b.setattr(v));
    let b = Arc::clone(budget);
    env.add_function(super::guard::OP, move |op: String, l: Value, r: Value| {
        b.binop(&op, l, r)
    });
    // `debug()` writes the whole render state into the prompt: no chat template needs it.
    env.add_function("debug", || -> Result<Value, Error> {
        Err(Error::new(
            ErrorKind::InvalidOperation,
            "debug() is not available in a chat template",
        ))
    });
    let b = Arc::clone(budget);
    env.set_formatter(move |out, state, value| {
        b.emit(value)?;
        minijinja::escape_formatter(out, state, value)
    });
    let b = Arc::clone(budget);
    env.set_unknown_method_callback(move |state, value, method, args| {
        b.before_method(value, method, args)?;
        minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
    });
    for &name in FILTERS {
        let Some(inner) = builtin_filter(name) else {
            continue;
        };
        let b = Arc::clone(budget);
        env.add_filter(name, move |state: &State, args: Rest<Value>| {
            b.before_filter(name, &args)?;
            let result = inner.call(state, &args)?;
            b.after_filter(name, &result)?;
            Ok::<Value, Error>(result)
        });
    }
}

/// The built-in filter `name` as a callable value.
fn builtin_filter(name: &str) -> Option<Value> {
    use minijinja::filters as f;
    Some(match name {
        "safe" => Value::from_function(f::safe),
        "escape" | "e" => Value::from_function(f::escape),
        "lower" => Value::from_function(f::lower),
        "upper" => Value::from_function(f::upper),
        "title" => Value::from_function(f::title),
        "capitalize" => Value::from_function(f::capitalize),
        "replace" => Value::from_function(f::replace),
        "length" | "count" => Value::from_function(f::length),
        "dictsort" => Value::from_function(f::dictsort),
        "items" => Value::from_function(f::items),
        "reverse" => Value::from_function(f::reverse),
        "trim" => Value::from_function(f::trim),
        "join" => Value::from_function(f::join),
        "split" => Value::from_function(f::split),
        "lines" => Value::from_function(f::lines),
        "default" | "d" => Value::from_function(f::default),
        "round" => Value::from_function(f::round),
        "abs" => Value::from_function(f::abs),
        "int" => Value::from_function(f::int),
        "float" => Value::from_function(f::float),
        "attr" => Value::from_function(f::attr),
        "first" => Value::from_function(f::first),
        "last" => Value::from_function(f::last),
        "min" => Value::from_function(f::min),
        "max" => Value::from_function(f::max),
        "sort" => Value::from_function(f::sort),
        "list" => Value::from_function(f::list),
        "string" => Value::from_function(f::string),
        "bool" => Value::from_function(f::bool),
        "batch" => Value::from_function(f::batch),
        "slice" => Value::from_function(f::slice),
        "sum" => Value::from_function(f::sum),
        "indent" => Value::from_function(f::indent),
        "select" => Value::from_function(f::select),
        "reject" => Value::from_function(f::reject),
        "selectattr" => Value::from_function(f::selectattr),
        "rejectattr" => Value::from_function(f::rejectattr),
        "map" => Value::from_function(f::map),
        "groupby" => Value::from_function(f::groupby),
        "unique" => Value::from_function(f::unique),
        "chain" => Value::from_function(f::chain),
        "zip" => Value::from_function(f::zip),
        "pprint" => Value::from_function(f::pprint),
        "format" => Value::from_function(f::format),
        "tojson" => Value::from_function(f::tojson),
        _ => return None,
    })
}
