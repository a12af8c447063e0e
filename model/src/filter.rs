//! RocketMQ's SQL92 message selector (`MessageSelector.bySql`): the grammar of Java's JavaCC
//! `SelectorParser.jj`, the construction checks of its expression classes and their evaluation
//! rules, over a message's properties (`TAGS` is one of them).
//!
//! ```
//! use skiff_model::filter::{Selector, Value};
//!
//! let selector = Selector::parse("TAGS IN ('a', 'b') AND price BETWEEN 10 AND 20.5").unwrap();
//! let props = |name: &str| match name {
//!     "TAGS" => Some(Value::Str("a".into())),
//!     "price" => Some(Value::Str("12".into())),
//!     _ => None,
//! };
//! assert!(selector.matches(&props));
//! assert!(Selector::parse("a BETWEEN 10 AND 0").is_err());
//! ```
//!
//! The rules worth knowing, all Java's:
//! * Properties are strings; a comparison with a number literal converts the string
//!   (`Integer.valueOf`, `Long.valueOf`, `Double.valueOf` after the literal's type); when the
//!   string is not a number the evaluation fails and the message does not match.
//! * `>`, `>=`, `<`, `<=` and `BETWEEN` take number literals only (`a > 'x'` is refused at
//!   parse time); two properties compare as doubles.
//! * Three-valued logic: a missing property makes a comparison `NULL`, `NOT NULL` is `NULL`,
//!   `AND`/`OR` follow SQL, and only `TRUE` matches. `CONTAINS`, `STARTSWITH`, `ENDSWITH` and
//!   their `NOT` forms are `FALSE` (not `NULL`) on a missing property or an empty search string.
//! * Decimal literals are `int` when they fit, else `long`; float literals are `double` and must be
//!   at least `Double.MIN_VALUE` (so `0.0` is refused, as in Java).
//! * `NOT` binds tighter than comparisons (`NOT a = 1` is `(NOT a) = 1`), as in the JavaCC grammar.
//!
//! Parsing uses `nom` for the syntax (JavaCC's LOOKAHEADs are `alt`'s backtracking); the checks Java makes while building its expression tree
//! run in a second pass, so that the refusal texts can be Java's.

use std::cmp::Ordering;
use std::fmt;

use nom::branch::alt;
use nom::bytes::complete::{tag, tag_no_case, take_until, take_while, take_while1};
use nom::character::complete::{char, one_of, satisfy};
use nom::combinator::{all_consuming, map, not, opt, recognize, value, verify};
use nom::multi::{many0, separated_list1};
use nom::sequence::{delimited, pair, preceded, terminated};
use nom::{IResult, Parser};

/// A value an expression can have (Java's `Boolean`, `Integer`, `Long`, `Double`, `String`);
/// `NULL` is `None`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

/// Why an expression was refused, with the text Java's `MQFilterException` carries (its cause's
/// `toString()`), which the Java broker puts in its remark.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FilterError {
    pub message: String,
}

impl FilterError {
    fn runtime(message: impl fmt::Display) -> Self {
        FilterError {
            message: format!("java.lang.RuntimeException: {message}"),
        }
    }
}

/// A compiled SQL92 expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    expr: Expr,
}

/// Longest expression accepted; Java has no limit, but a filter is a few dozen bytes and this
/// bounds the parser's recursion and work on hostile input.
pub const MAX_EXPRESSION_LEN: usize = 16 * 1024;
/// Deepest nesting the parser accepts (parentheses and prefix operators): the parser recurses
/// once per level, and a debug build's frames are large.
const MAX_DEPTH: usize = 32;
/// Deepest expression tree accepted (chains such as `a = b = c` nest one level per operator).
const MAX_TREE_DEPTH: usize = 64;

impl Selector {
    /// Compiles `sql` as Java's `SelectorParser.parse` does.
    pub fn parse(sql: &str) -> Result<Selector, FilterError> {
        if sql.len() > MAX_EXPRESSION_LEN {
            return Err(FilterError {
                message: format!(
                    "org.apache.rocketmq.filter.parser.ParseException: the expression is longer than {MAX_EXPRESSION_LEN} bytes"
                ),
            });
        }
        if nesting(sql) > MAX_DEPTH {
            return Err(FilterError {
                message: format!(
                    "org.apache.rocketmq.filter.parser.ParseException: the expression nests deeper than {MAX_DEPTH}"
                ),
            });
        }
        let raw = match all_consuming(delimited(ws, or_expr, ws)).parse(sql) {
            Ok((_, raw)) => raw,
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                return Err(syntax_error(sql, e.input))
            }
            Err(nom::Err::Incomplete(_)) => return Err(syntax_error(sql, "")),
        };
        if raw.depth() > MAX_TREE_DEPTH {
            return Err(FilterError {
                message: format!(
                    "org.apache.rocketmq.filter.parser.ParseException: the expression nests deeper than {MAX_TREE_DEPTH}"
                ),
            });
        }
        let expr = build(raw)?;
        Ok(Selector {
            expr: as_boolean(expr)?,
        })
    }

    /// Whether a message with these properties matches: only a `TRUE` result does; `NULL`, `FALSE`
    /// and a failed evaluation (a property that is not a number where one is needed) do not.
    pub fn matches(&self, property: &dyn Fn(&str) -> Option<Value>) -> bool {
        matches!(self.expr.eval(property), Ok(Some(Value::Bool(true))))
    }

    /// [`Selector::matches`] over string properties, as a broker has them.
    pub fn matches_properties<'a>(&self, property: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.matches(&|name| property(name).map(|v| Value::Str(v.to_string())))
    }
}

/// An upper bound of the parse tree's depth: parentheses and runs of prefix operators (`-`, `+`,
/// `NOT`). Chains of `AND`/`OR` nest only logarithmically (see `balanced`), and comparisons
/// chain at most a few deep in any expression that also passes the construction checks.
fn nesting(sql: &str) -> usize {
    let (mut depth, mut max, mut prefix) = (0usize, 0usize, 0usize);
    let mut chars = sql.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' => {
                // Skip the string literal ('' is an escaped quote, read as two literals here).
                for (_, c) in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
                prefix = 0;
            }
            '(' => {
                depth += 1;
                prefix = 0;
            }
            ')' => depth = depth.saturating_sub(1),
            '-' | '+' => prefix += 1,
            c if c.is_ascii_alphabetic() || c == '_' || c == '$' => {
                let mut end = at + c.len_utf8();
                while let Some(&(i, c)) = chars.peek() {
                    if !is_id_char(c) {
                        break;
                    }
                    end = i + c.len_utf8();
                    chars.next();
                }
                let word = &sql[at..end];
                if word.eq_ignore_ascii_case("NOT") {
                    prefix += 1;
                } else {
                    prefix = 0;
                }
            }
            c if c.is_whitespace() => {}
            _ => prefix = 0,
        }
        max = max.max(depth + prefix);
    }
    max
}

fn syntax_error(sql: &str, rest: &str) -> FilterError {
    let at = sql.len() - rest.len().min(sql.len());
    let before = &sql[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let token: String = rest
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace())
        .take(32)
        .collect();
    let message = if token.is_empty() {
        format!(
            "org.apache.rocketmq.filter.parser.ParseException: Encountered \"<EOF>\" at line {line}, column {column}."
        )
    } else {
        format!(
            "org.apache.rocketmq.filter.parser.ParseException: Encountered \"{token}\" at line {line}, column {column}."
        )
    };
    FilterError { message }
}

// ---------------------------------------------------------------- syntax (nom)

/// What the grammar read, before Java's construction checks.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Str(String),
    Decimal(String),
    Float(String),
    True,
    False,
    Null,
    Prop(String),
    Neg(Box<Raw>),
    Not(Box<Raw>),
    Or(Box<Raw>, Box<Raw>),
    And(Box<Raw>, Box<Raw>),
    Eq(Box<Raw>, Box<Raw>),
    NotEq(Box<Raw>, Box<Raw>),
    IsNull(Box<Raw>, bool),
    Cmp(CmpOp, Box<Raw>, Box<Raw>),
    StrOp(StrOp, bool, Box<Raw>, String),
    Between(bool, Box<Raw>, Box<Raw>, Box<Raw>),
    In(bool, Box<Raw>, Vec<String>),
}

impl Raw {
    fn children(&self) -> Vec<&Raw> {
        match self {
            Raw::Str(_)
            | Raw::Decimal(_)
            | Raw::Float(_)
            | Raw::True
            | Raw::False
            | Raw::Null
            | Raw::Prop(_) => Vec::new(),
            Raw::Neg(e) | Raw::Not(e) | Raw::IsNull(e, _) | Raw::StrOp(_, _, e, _) => vec![e],
            Raw::In(_, e, _) => vec![e],
            Raw::Or(l, r) | Raw::And(l, r) | Raw::Eq(l, r) | Raw::NotEq(l, r) => vec![l, r],
            Raw::Cmp(_, l, r) => vec![l, r],
            Raw::Between(_, v, l, h) => vec![v, l, h],
        }
    }

    /// The tree's depth, without recursion (the tree may be deeper than the stack allows).
    fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut pending = vec![(self, 1usize)];
        while let Some((node, depth)) = pending.pop() {
            deepest = deepest.max(depth);
            pending.extend(node.children().into_iter().map(|c| (c, depth + 1)));
        }
        deepest
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

type Res<'a, T> = IResult<&'a str, T>;

/// Whitespace (`" \t\n\r\f"`), `-- line` comments (which, as in the grammar, need their end of
/// line) and `/* block */` comments.
fn ws(input: &str) -> Res<'_, ()> {
    value(
        (),
        many0(alt((
            take_while1(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')),
            recognize((
                tag("--"),
                take_while(|c| c != '\n' && c != '\r'),
                one_of("\n\r"),
            )),
            recognize((tag("/*"), take_until("*/"), tag("*/"))),
        ))),
    )
    .parse(input)
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

const KEYWORDS: [&str; 12] = [
    "NOT",
    "AND",
    "OR",
    "BETWEEN",
    "IN",
    "TRUE",
    "FALSE",
    "NULL",
    "IS",
    "CONTAINS",
    "STARTSWITH",
    "ENDSWITH",
];

/// A keyword (any case) that is not the start of a longer identifier, then whitespace.
fn kw<'a>(
    word: &'static str,
) -> impl Parser<&'a str, Output = (), Error = nom::error::Error<&'a str>> {
    value(
        (),
        terminated(tag_no_case(word), pair(not(satisfy(is_id_char)), ws)),
    )
}

/// An operator token, then whitespace.
fn op<'a>(
    token: &'static str,
) -> impl Parser<&'a str, Output = (), Error = nom::error::Error<&'a str>> {
    value((), terminated(tag(token), ws))
}

fn identifier(input: &str) -> Res<'_, String> {
    map(
        terminated(
            verify(
                recognize(pair(
                    satisfy(|c| c.is_ascii_alphabetic() || c == '_' || c == '$'),
                    take_while(is_id_char),
                )),
                |id: &str| !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(id)),
            ),
            ws,
        ),
        str::to_string,
    )
    .parse(input)
}

/// `'…'` with `''` for a quote.
fn string_literal(input: &str) -> Res<'_, String> {
    map(
        terminated(
            delimited(
                char('\''),
                many0(alt((value("'", tag("''")), take_while1(|c| c != '\'')))),
                char('\''),
            ),
            ws,
        ),
        |parts: Vec<&str>| parts.concat(),
    )
    .parse(input)
}

fn digit0(input: &str) -> Res<'_, &str> {
    take_while(|c: char| c.is_ascii_digit()).parse(input)
}

fn digit1(input: &str) -> Res<'_, &str> {
    take_while1(|c: char| c.is_ascii_digit()).parse(input)
}

fn exponent(input: &str) -> Res<'_, &str> {
    recognize((one_of("eE"), opt(one_of("+-")), digit1)).parse(input)
}

/// `5.5`, `5.`, `5.5E10`, `.5`, `.5E10`, `5E10` (tried before decimals: the longer match wins).
fn float_literal(input: &str) -> Res<'_, &str> {
    recognize(alt((
        recognize((digit1, char('.'), digit0, opt(exponent))),
        recognize((char('.'), digit1, opt(exponent))),
        recognize((digit1, exponent)),
    )))
    .parse(input)
}

/// `0`, or a digit 1-9 and more digits with an optional `L`.
fn decimal_literal(input: &str) -> Res<'_, &str> {
    alt((
        recognize((one_of("123456789"), digit0, opt(one_of("lL")))),
        tag("0"),
    ))
    .parse(input)
}

fn literal(input: &str) -> Res<'_, Raw> {
    alt((
        map(string_literal, Raw::Str),
        map(terminated(float_literal, ws), |t| Raw::Float(t.to_string())),
        map(terminated(decimal_literal, ws), |t| {
            Raw::Decimal(t.to_string())
        }),
        value(Raw::True, kw("TRUE")),
        value(Raw::False, kw("FALSE")),
        value(Raw::Null, kw("NULL")),
    ))
    .parse(input)
}

fn primary(input: &str) -> Res<'_, Raw> {
    alt((
        literal,
        map(identifier, Raw::Prop),
        delimited(op("("), or_expr, op(")")),
    ))
    .parse(input)
}

fn unary(input: &str) -> Res<'_, Raw> {
    alt((
        preceded(op("+"), unary),
        map(preceded(op("-"), unary), |e| Raw::Neg(Box::new(e))),
        map(preceded(kw("NOT"), unary), |e| Raw::Not(Box::new(e))),
        primary,
    ))
    .parse(input)
}

/// What may follow the left operand of a comparison.
enum Tail {
    Cmp(CmpOp, Raw),
    StrOp(StrOp, bool, String),
    Between(bool, Raw, Raw),
    In(bool, Vec<String>),
}

fn in_list(input: &str) -> Res<'_, Vec<String>> {
    delimited(op("("), separated_list1(op(","), string_literal), op(")")).parse(input)
}

fn str_op(input: &str) -> Res<'_, StrOp> {
    alt((
        value(StrOp::Contains, kw("CONTAINS")),
        value(StrOp::StartsWith, kw("STARTSWITH")),
        value(StrOp::EndsWith, kw("ENDSWITH")),
    ))
    .parse(input)
}

fn comparison_tail(input: &str) -> Res<'_, Tail> {
    alt((
        map(preceded(op(">="), unary), |r| Tail::Cmp(CmpOp::Ge, r)),
        map(preceded(op(">"), unary), |r| Tail::Cmp(CmpOp::Gt, r)),
        map(preceded(op("<="), unary), |r| Tail::Cmp(CmpOp::Le, r)),
        // `<>` belongs to the equality level: do not read it as `<` then `>`.
        map(
            preceded(terminated(tag("<"), pair(not(char('>')), ws)), unary),
            |r| Tail::Cmp(CmpOp::Lt, r),
        ),
        map(
            pair(opt(kw("NOT")), pair(str_op, string_literal)),
            |(negated, (op, s))| Tail::StrOp(op, negated.is_some(), s),
        ),
        map(
            (opt(kw("NOT")), kw("BETWEEN"), unary, kw("AND"), unary),
            |(negated, _, low, _, high)| Tail::Between(negated.is_some(), low, high),
        ),
        map((opt(kw("NOT")), kw("IN"), in_list), |(negated, _, list)| {
            Tail::In(negated.is_some(), list)
        }),
    ))
    .parse(input)
}

fn comparison(input: &str) -> Res<'_, Raw> {
    let (mut input, mut left) = unary(input)?;
    while let Ok((rest, tail)) = comparison_tail(input) {
        let l = Box::new(left);
        left = match tail {
            Tail::Cmp(op, right) => Raw::Cmp(op, l, Box::new(right)),
            Tail::StrOp(op, negated, search) => Raw::StrOp(op, negated, l, search),
            Tail::Between(negated, low, high) => {
                Raw::Between(negated, l, Box::new(low), Box::new(high))
            }
            Tail::In(negated, list) => Raw::In(negated, l, list),
        };
        input = rest;
    }
    Ok((input, left))
}

enum EqTail {
    Eq(Raw),
    NotEq(Raw),
    IsNull(bool),
}

fn equality(input: &str) -> Res<'_, Raw> {
    let (mut input, mut left) = comparison(input)?;
    loop {
        let tail = alt((
            map(preceded(op("="), comparison), EqTail::Eq),
            map(preceded(op("<>"), comparison), EqTail::NotEq),
            map((kw("IS"), opt(kw("NOT")), kw("NULL")), |(_, n, _)| {
                EqTail::IsNull(n.is_some())
            }),
        ))
        .parse(input);
        let Ok((rest, tail)) = tail else { break };
        let l = Box::new(left);
        left = match tail {
            EqTail::Eq(r) => Raw::Eq(l, Box::new(r)),
            EqTail::NotEq(r) => Raw::NotEq(l, Box::new(r)),
            EqTail::IsNull(negated) => Raw::IsNull(l, negated),
        };
        input = rest;
    }
    Ok((input, left))
}

/// Folds a chain of `AND`s or `OR`s into a balanced tree. Both are associative in Java's
/// three-valued logic and the operands are still evaluated left to right with the same short
/// circuits, so the result is the same as Java's left fold, but a chain of n operands nests only
/// log2(n) deep (a long `OR` list must not exhaust the stack).
fn balanced(mut items: Vec<Raw>, join: fn(Box<Raw>, Box<Raw>) -> Raw) -> Raw {
    if items.len() == 1 {
        return items.pop().expect("one item");
    }
    let right = items.split_off(items.len() / 2);
    join(
        Box::new(balanced(items, join)),
        Box::new(balanced(right, join)),
    )
}

fn and_expr(input: &str) -> Res<'_, Raw> {
    let (input, first) = equality(input)?;
    let (input, mut rest) = many0(preceded(kw("AND"), equality)).parse(input)?;
    rest.insert(0, first);
    Ok((input, balanced(rest, Raw::And)))
}

fn or_expr(input: &str) -> Res<'_, Raw> {
    let (input, first) = and_expr(input)?;
    let (input, mut rest) = many0(preceded(kw("OR"), and_expr)).parse(input)?;
    rest.insert(0, first);
    Ok((input, balanced(rest, Raw::Or)))
}

// ---------------------------------------------------------------- construction checks

/// The evaluable tree (Java's expression classes).
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Const(Option<Value>),
    Prop(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    BoolCast(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Eq(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    StrOp {
        op: StrOp,
        negated: bool,
        expr: Box<Expr>,
        search: String,
    },
    In {
        property: String,
        list: Vec<String>,
        negated: bool,
    },
}

impl Expr {
    /// Java's `BooleanExpression` marker.
    fn is_boolean(&self) -> bool {
        match self {
            Expr::Const(v) => matches!(v, None | Some(Value::Bool(_))),
            Expr::Prop(_) | Expr::Neg(_) => false,
            _ => true,
        }
    }
}

fn as_boolean(expr: Expr) -> Result<Expr, FilterError> {
    match expr {
        e if e.is_boolean() => Ok(e),
        Expr::Prop(name) => Ok(Expr::BoolCast(Box::new(Expr::Prop(name)))),
        other => Err(FilterError {
            message: format!(
                "org.apache.rocketmq.filter.parser.ParseException: Expression will not result in a boolean value: {other}"
            ),
        }),
    }
}

/// `checkLessThanOperand`: constants must be numbers, and boolean expressions are refused.
fn check_less_than_operand(expr: &Expr) -> Result<(), FilterError> {
    let refused = match expr {
        Expr::Const(Some(Value::Int(_) | Value::Long(_) | Value::Double(_))) => false,
        Expr::Const(_) => true,
        e => e.is_boolean(),
    };
    if refused {
        Err(FilterError::runtime(format!(
            "Value '{expr}' cannot be compared."
        )))
    } else {
        Ok(())
    }
}

/// `createEqual`'s checks: no `NULL` constant, and a boolean constant only against a boolean.
fn check_equal(left: &Expr, right: &Expr) -> Result<(), FilterError> {
    for side in [left, right] {
        if let Expr::Const(None) = side {
            return Err(FilterError::runtime(format!(
                "'{side}' cannot be compared."
            )));
        }
    }
    if let (Expr::Const(_), Expr::Const(_)) = (left, right) {
        if left.is_boolean() && !right.is_boolean() {
            return Err(FilterError::runtime(format!(
                "'{left}' cannot be compared with '{right}'"
            )));
        }
    }
    Ok(())
}

fn cmp(op: CmpOp, left: Expr, right: Expr) -> Result<Expr, FilterError> {
    check_less_than_operand(&left)?;
    check_less_than_operand(&right)?;
    Ok(Expr::Cmp(op, Box::new(left), Box::new(right)))
}

fn build(raw: Raw) -> Result<Expr, FilterError> {
    let b = |r: Box<Raw>| build(*r);
    Ok(match raw {
        Raw::Str(s) => Expr::Const(Some(Value::Str(s))),
        Raw::Decimal(text) => Expr::Const(Some(decimal(&text)?)),
        Raw::Float(text) => Expr::Const(Some(float(&text)?)),
        Raw::True => Expr::Const(Some(Value::Bool(true))),
        Raw::False => Expr::Const(Some(Value::Bool(false))),
        Raw::Null => Expr::Const(None),
        Raw::Prop(name) => Expr::Prop(name),
        Raw::Neg(e) => Expr::Neg(Box::new(b(e)?)),
        Raw::Not(e) => Expr::Not(Box::new(as_boolean(b(e)?)?)),
        Raw::Or(l, r) => Expr::Or(Box::new(as_boolean(b(l)?)?), Box::new(as_boolean(b(r)?)?)),
        Raw::And(l, r) => Expr::And(Box::new(as_boolean(b(l)?)?), Box::new(as_boolean(b(r)?)?)),
        Raw::Eq(l, r) => {
            let (l, r) = (b(l)?, b(r)?);
            check_equal(&l, &r)?;
            Expr::Eq(Box::new(l), Box::new(r))
        }
        Raw::NotEq(l, r) => {
            let (l, r) = (b(l)?, b(r)?);
            check_equal(&l, &r)?;
            Expr::Not(Box::new(Expr::Eq(Box::new(l), Box::new(r))))
        }
        Raw::IsNull(e, negated) => {
            let eq = Expr::Eq(Box::new(b(e)?), Box::new(Expr::Const(None)));
            if negated {
                Expr::Not(Box::new(eq))
            } else {
                eq
            }
        }
        Raw::Cmp(op, l, r) => cmp(op, b(l)?, b(r)?)?,
        Raw::StrOp(op, negated, e, search) => Expr::StrOp {
            op,
            negated,
            expr: Box::new(b(e)?),
            search,
        },
        Raw::Between(negated, value, low, high) => {
            let (value, low, high) = (b(value)?, b(low)?, b(high)?);
            if !negated {
                check_between(&low, &high)?;
            }
            let (lower, upper) = if negated {
                (
                    cmp(CmpOp::Lt, value.clone(), low)?,
                    cmp(CmpOp::Gt, value, high)?,
                )
            } else {
                (
                    cmp(CmpOp::Ge, value.clone(), low)?,
                    cmp(CmpOp::Le, value, high)?,
                )
            };
            if negated {
                Expr::Or(Box::new(lower), Box::new(upper))
            } else {
                Expr::And(Box::new(lower), Box::new(upper))
            }
        }
        Raw::In(negated, e, list) => match b(e)? {
            Expr::Prop(property) => Expr::In {
                property,
                list,
                negated,
            },
            other => {
                return Err(FilterError::runtime(format!(
                    "Expected a property for In expression, got: {other}"
                )))
            }
        },
    })
}

/// `createBetween`'s check of two constant bounds.
fn check_between(low: &Expr, high: &Expr) -> Result<(), FilterError> {
    let (Expr::Const(lv), Expr::Const(hv)) = (low, high) else {
        return Ok(());
    };
    let (Some(lv), Some(hv)) = (lv, hv) else {
        return Err(FilterError::runtime(
            "Illegal values of between, values can not be null!",
        ));
    };
    match compare(hv, lv) {
        Ok(Ordering::Less) => Err(FilterError::runtime(format!(
            "Illegal values of between, left value({}) must less than or equal to right value({})",
            java_string(lv),
            java_string(hv)
        ))),
        Ok(_) => Ok(()),
        Err(Failed) => Err(FilterError::runtime("java.lang.NumberFormatException")),
    }
}

/// `ConstantExpression.createFromDecimal`.
fn decimal(text: &str) -> Result<Value, FilterError> {
    let digits = text.trim_end_matches(['l', 'L']);
    let n: i64 = digits.parse().map_err(|_| FilterError {
        message: format!("java.lang.NumberFormatException: For input string: \"{digits}\""),
    })?;
    Ok(i32::try_from(n).map_or(Value::Long(n), Value::Int))
}

/// `ConstantExpression.createFloat`.
fn float(text: &str) -> Result<Value, FilterError> {
    let value: f64 = text.parse().map_err(|_| FilterError {
        message: format!("java.lang.NumberFormatException: For input string: \"{text}\""),
    })?;
    if value > f64::MAX {
        return Err(FilterError::runtime(format!(
            "{text} is greater than 1.7976931348623157E308"
        )));
    }
    // Java compares with Double.MIN_VALUE, the smallest positive double: 0.0 is refused too.
    if value < f64::from_bits(1) {
        return Err(FilterError::runtime(format!(
            "{text} is less than 4.9E-324"
        )));
    }
    Ok(Value::Double(value))
}

// ---------------------------------------------------------------- evaluation

/// An evaluation that threw in Java (a string that is not a number, a cast that fails): the
/// message does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Failed;

type Eval = Result<Option<Value>, Failed>;

fn boolean(value: Option<Value>) -> Result<Option<bool>, Failed> {
    match value {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        // `(Boolean) value` in Java: a ClassCastException.
        Some(_) => Err(Failed),
    }
}

impl Expr {
    fn eval(&self, property: &dyn Fn(&str) -> Option<Value>) -> Eval {
        let bool_value = |b: bool| Ok(Some(Value::Bool(b)));
        match self {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Prop(name) => Ok(property(name)),
            Expr::Neg(e) => Ok(match e.eval(property)? {
                Some(Value::Int(i)) => Some(Value::Int(i.wrapping_neg())),
                Some(Value::Long(l)) => Some(Value::Long(l.wrapping_neg())),
                Some(Value::Double(d)) => Some(Value::Double(-d)),
                _ => None,
            }),
            Expr::Not(e) => Ok(boolean(e.eval(property)?)?.map(|b| Value::Bool(!b))),
            Expr::BoolCast(e) => Ok(match e.eval(property)? {
                None => None,
                Some(Value::Bool(b)) => Some(Value::Bool(b)),
                Some(_) => Some(Value::Bool(false)),
            }),
            Expr::Or(l, r) => {
                let lv = boolean(l.eval(property)?)?;
                if lv == Some(true) {
                    return bool_value(true);
                }
                let rv = boolean(r.eval(property)?)?;
                if rv == Some(true) {
                    return bool_value(true);
                }
                if lv.is_none() || rv.is_none() {
                    return Ok(None);
                }
                bool_value(false)
            }
            Expr::And(l, r) => {
                let lv = boolean(l.eval(property)?)?;
                if lv == Some(false) {
                    return bool_value(false);
                }
                let rv = boolean(r.eval(property)?)?;
                if rv == Some(false) {
                    return bool_value(false);
                }
                if lv.is_none() || rv.is_none() {
                    return Ok(None);
                }
                bool_value(true)
            }
            Expr::Eq(l, r) => {
                let lv = l.eval(property)?;
                let rv = r.eval(property)?;
                match (lv, rv) {
                    (None, None) => bool_value(true),
                    (None, Some(_)) => Ok(None),
                    (Some(_), None) => bool_value(false),
                    (Some(lv), Some(rv)) => {
                        if java_equals(&lv, &rv) {
                            bool_value(true)
                        } else {
                            bool_value(compare(&lv, &rv)? == Ordering::Equal)
                        }
                    }
                }
            }
            Expr::Cmp(op, l, r) => {
                let Some(lv) = l.eval(property)? else {
                    return Ok(None);
                };
                let Some(rv) = r.eval(property)? else {
                    return Ok(None);
                };
                let ordering = match (&lv, &rv) {
                    // Two strings compare as doubles, or the evaluation fails.
                    (Value::Str(a), Value::Str(b)) => {
                        let a = java_parse_double(a).ok_or(Failed)?;
                        let b = java_parse_double(b).ok_or(Failed)?;
                        java_double_cmp(a, b)
                    }
                    _ => compare(&lv, &rv)?,
                };
                bool_value(match op {
                    CmpOp::Gt => ordering == Ordering::Greater,
                    CmpOp::Ge => ordering != Ordering::Less,
                    CmpOp::Lt => ordering == Ordering::Less,
                    CmpOp::Le => ordering != Ordering::Greater,
                })
            }
            Expr::StrOp {
                op,
                negated,
                expr,
                search,
            } => {
                if search.is_empty() {
                    return bool_value(false);
                }
                let Some(Value::Str(s)) = expr.eval(property)? else {
                    return bool_value(false);
                };
                let found = match op {
                    StrOp::Contains => s.contains(search.as_str()),
                    StrOp::StartsWith => s.starts_with(search.as_str()),
                    StrOp::EndsWith => s.ends_with(search.as_str()),
                };
                bool_value(found != *negated)
            }
            Expr::In {
                property: name,
                list,
                negated,
            } => match property(name) {
                Some(Value::Str(s)) => bool_value(list.contains(&s) != *negated),
                _ => Ok(None),
            },
        }
    }
}

/// Java's `equals` across boxed types: same class and value (`Double.equals` by bits).
fn java_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => java_double_bits(*x) == java_double_bits(*y),
        _ => a == b,
    }
}

fn java_double_bits(d: f64) -> u64 {
    if d.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        d.to_bits()
    }
}

/// `Double.compareTo`: numeric order, `-0.0 < 0.0`, NaN above everything and equal to itself.
fn java_double_cmp(a: f64, b: f64) -> Ordering {
    if a < b {
        Ordering::Less
    } else if a > b {
        Ordering::Greater
    } else {
        (java_double_bits(a) as i64).cmp(&(java_double_bits(b) as i64))
    }
}

/// `Double.valueOf(String)`: surrounding whitespace allowed, an optional `d`/`f` suffix, `NaN`
/// and `Infinity` spelled as Java spells them.
fn java_parse_double(text: &str) -> Option<f64> {
    let text = text.trim_matches(|c: char| c <= ' ');
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if unsigned == "NaN" || unsigned == "Infinity" {
        return text.replace("Infinity", "inf").parse().ok();
    }
    let body = text.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(text);
    let valid = !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    if valid {
        body.parse().ok()
    } else {
        None
    }
}

/// `Integer.valueOf` / `Long.valueOf`: an optional sign and ASCII digits.
fn java_parse_int<T: std::str::FromStr>(text: &str) -> Option<T> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `ComparisonExpression.__compare` with `convertStringExpressions` (which `SelectorParser.parse`
/// always sets): mixed numbers widen, a string converts to the other side's type, and unrelated
/// types compare as "less" (-1).
fn compare(lv: &Value, rv: &Value) -> Result<Ordering, Failed> {
    use Value::*;
    let widen = |a: f64, b: f64| Ok(java_double_cmp(a, b));
    match (lv, rv) {
        (Bool(a), Bool(b)) => Ok(a.cmp(b)),
        (Int(a), Int(b)) => Ok(a.cmp(b)),
        (Long(a), Long(b)) => Ok(a.cmp(b)),
        (Double(a), Double(b)) => Ok(java_double_cmp(*a, *b)),
        (Str(a), Str(b)) => Ok(java_string_cmp(a, b)),
        // `lv = Boolean.valueOf((String) lv)` on a Boolean: a ClassCastException in Java.
        (Bool(_), Str(_)) => Err(Failed),
        (Int(a), Long(b)) => Ok(i64::from(*a).cmp(b)),
        (Long(a), Int(b)) => Ok(a.cmp(&i64::from(*b))),
        (Int(a), Double(b)) => widen(f64::from(*a), *b),
        (Long(a), Double(b)) => widen(*a as f64, *b),
        (Double(a), Int(b)) => widen(*a, f64::from(*b)),
        (Double(a), Long(b)) => widen(*a, *b as f64),
        (Int(a), Str(s)) => Ok(a.cmp(&java_parse_int::<i32>(s).ok_or(Failed)?)),
        (Long(a), Str(s)) => Ok(a.cmp(&java_parse_int::<i64>(s).ok_or(Failed)?)),
        (Double(a), Str(s)) => widen(*a, java_parse_double(s).ok_or(Failed)?),
        (Str(s), Bool(b)) => Ok(s.eq_ignore_ascii_case("true").cmp(b)),
        (Str(s), Int(b)) => Ok(java_parse_int::<i32>(s).ok_or(Failed)?.cmp(b)),
        (Str(s), Long(b)) => Ok(java_parse_int::<i64>(s).ok_or(Failed)?.cmp(b)),
        (Str(s), Double(b)) => widen(java_parse_double(s).ok_or(Failed)?, *b),
        _ => Ok(Ordering::Less),
    }
}

/// `String.compareTo`: by UTF-16 code units.
fn java_string_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `String.valueOf` of a value, for messages.
fn java_string(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Long(l) => l.to_string(),
        Value::Double(d) => java_double_string(*d),
        Value::Str(s) => s.clone(),
    }
}

fn java_double_string(d: f64) -> String {
    if d.is_finite() && d == d.trunc() && d.abs() < 1e7 {
        format!("{d:.1}")
    } else {
        format!("{d}")
    }
}

/// Java's `toString()` of the expression classes, used in refusal texts.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(None) => f.write_str("NULL"),
            Expr::Const(Some(Value::Bool(b))) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Expr::Const(Some(Value::Str(s))) => write!(f, "'{}'", s.replace('\'', "''")),
            Expr::Const(Some(v)) => f.write_str(&java_string(v)),
            Expr::Prop(name) => f.write_str(name),
            Expr::Neg(e) => write!(f, "(- {e})"),
            Expr::Not(e) => write!(f, "(NOT {e})"),
            Expr::BoolCast(e) => write!(f, "{e}"),
            Expr::And(l, r) => write!(f, "({l} && {r})"),
            Expr::Or(l, r) => write!(f, "({l} || {r})"),
            Expr::Eq(l, r) => write!(f, "({l} == {r})"),
            Expr::Cmp(op, l, r) => {
                let symbol = match op {
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                };
                write!(f, "({l} {symbol} {r})")
            }
            Expr::StrOp {
                op,
                negated,
                expr,
                search,
            } => {
                let symbol = match op {
                    StrOp::Contains => "CONTAINS",
                    StrOp::StartsWith => "STARTSWITH",
                    StrOp::EndsWith => "ENDSWITH",
                };
                let not = if *negated { "NOT " } else { "" };
                write!(f, "({expr} {not}{symbol} '{search}')")
            }
            Expr::In {
                property,
                list,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(f, "{property} {not}IN ( {} )", list.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn props<'a>(pairs: &'a [(&'a str, Value)]) -> impl Fn(&str) -> Option<Value> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
    }

    fn s(v: &str) -> Value {
        Value::Str(v.to_string())
    }

    fn eval(sql: &str, pairs: &[(&str, Value)]) -> bool {
        Selector::parse(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .matches(&props(pairs))
    }

    /// `ParserTest`: what parses and what does not.
    #[test]
    fn java_parser_cases() {
        for valid in [
            "a=3 and b<>4 And c>5 AND d<=4",
            "a=3  and    b<>4 And c>5 AND d<=4",
            "a=3 or b<>4 Or c>5 OR d<=4",
            "a in ('3', '4', '5')",
            "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
            "(a between 2 and 10) AND (b not between 6 and 9)",
            "a is null",
            "a is not null",
            "a <= now",
            "a=3 and b contains 'xxx' and c not contains 'xxx'",
            "TAGS is not null and TAGS='''''tag'''''",
            "a = -5 -- a comment\n",
            "/* block */ a > .5E3",
            "a > 5L",
        ] {
            assert!(Selector::parse(valid).is_ok(), "{valid}");
        }
        for invalid in [
            "a and between 2 and 10",
            " a between 10 and 0",
            "a > 100000000000000000000000",
            "value contains x",
            "value contains 123",
            "'axb' contains ",
            "",
            "a = NULL",
            "a > 'abc'",
            "a > TRUE",
            "a between 'x' and 'y'",
            "5",
            "'abc'",
            "-a",
            "a in ()",
            "5 in ('a')",
            "TRUE = 1",
            "a > 0.0",
            "a > 1e400",
            "a == 1",
            "a != 1",
            "007 = a",
            "a = 1 and",
            "(a = 1",
            "a = 'unterminated",
        ] {
            assert!(Selector::parse(invalid).is_err(), "{invalid}");
        }
        assert_eq!(
            Selector::parse(" a between 10 and 0").unwrap_err().message,
            "java.lang.RuntimeException: Illegal values of between, left value(10) must less than or equal to right value(0)"
        );
        assert_eq!(
            Selector::parse("a > 'abc'").unwrap_err().message,
            "java.lang.RuntimeException: Value ''abc'' cannot be compared."
        );
        assert!(Selector::parse("a and between 2 and 10")
            .unwrap_err()
            .message
            .starts_with("org.apache.rocketmq.filter.parser.ParseException: Encountered"));
    }

    /// `ExpressionTest`: CONTAINS, STARTSWITH, ENDSWITH and their NOT forms.
    #[test]
    fn java_string_operator_cases() {
        let axb = [("value", s("axb"))];
        for (sql, expected) in [
            ("value contains 'x'", true),
            ("value startswith 'ax'", true),
            ("value endswith 'xb'", true),
            ("value not contains 'x'", false),
            ("value not startswith 'ax'", false),
            ("value not endswith 'xb'", false),
            ("value contains ''", false),
            ("value not contains ''", false),
            ("value startswith ''", false),
            ("value not endswith ''", false),
            ("'axb' contains 'x'", true),
            ("'axb' not contains 'u'", true),
            ("' ' contains ' '", true),
            ("' ' not startswith ' '", false),
            ("'axb' contains '.'", false),
            ("'s' endswith '\\'", false),
        ] {
            assert_eq!(eval(sql, &axb), expected, "{sql}");
        }
        for value in [None, Some(Value::Double(1.23)), Some(Value::Bool(true))] {
            let pairs: Vec<(&str, Value)> = value.into_iter().map(|v| ("value", v)).collect();
            for sql in [
                "value contains 'x'",
                "value not contains 'x'",
                "value startswith 'x'",
                "value not startswith 'x'",
                "value endswith 'x'",
                "value not endswith 'x'",
            ] {
                assert!(!eval(sql, &pairs), "{sql} over {pairs:?}");
            }
        }
    }

    /// `ExpressionTest`: the rest, with typed context values as Java's tests use them.
    #[test]
    fn java_expression_cases() {
        let ctx = [("a", s("3")), ("b", Value::Int(3)), ("c", s("axbdc"))];
        assert!(eval(
            "a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'",
            &ctx
        ));
        assert!(eval(
            "TAGS is not null and TAGS='''''tag'''''",
            &[("TAGS", s("''tag''"))]
        ));
        assert!(eval("a > 3.1E10", &[("a", s("3.1415E10"))]));
        assert!(eval("a > 3.14", &[("a", s("3.1415"))]));
        assert!(!eval("a between up and low", &[("a", s("3.14"))]));
        assert!(!eval(
            "a between up and low",
            &[("a", s("3.14")), ("up", s("up")), ("low", s("low"))]
        ));
        assert!(!eval(
            "key is not null and key between 0 and 100",
            &[("key", s("con"))]
        ));
        assert!(!eval("a between 0 and 100", &[("a", s("abc"))]));
        assert!(eval("a=b", &[("a", s("3.14")), ("b", s("3.14"))]));
        assert!(!eval("a<>b", &[("a", s("3.14")), ("b", s("3.14"))]));
        assert!(eval("a<>b", &[("a", s("3.14")), ("b", s("3.141"))]));
        let typed = [
            ("a", Value::Int(3)),
            ("b", Value::Int(3)),
            ("c", Value::Int(6)),
            ("d", Value::Int(1)),
        ];
        assert!(eval("a=3 and b<>4 And c>5 AND d<=4", &typed));
        assert!(eval(
            "a=3 or b<>4 Or c>5 OR d<=4",
            &[("a", Value::Int(4)), ("b", Value::Int(3))]
        ));
        assert!(eval("a in ('3', '4', '5')", &[("a", s("4"))]));
        assert!(!eval("a in ('3', '4', '5')", &[("a", Value::Int(4))]));
        assert!(eval("a not in ('3', '4', '5')", &[("a", s("6"))]));
        assert!(eval("a between 2 and 10", &[("a", Value::Long(10))]));
        assert!(eval(
            "a not between 2 and 10",
            &[("a", Value::Double(10.5))]
        ));
        assert!(eval("a is null", &[]));
        assert!(eval("a is not null", &[("a", s(""))]));
        assert!(eval("a is not null and a='hello'", &[("a", s("hello"))]));
        assert!(eval("a=TRUE OR b=FALSE", &[("a", Value::Bool(true))]));
        assert!(eval("a=TRUE OR b=FALSE", &[("b", Value::Bool(false))]));
        assert!(eval("a is null OR a='hello'", &[]));
    }

    #[test]
    fn properties_are_strings_converted_after_the_literal() {
        let a = |v: &str| [("a", s(v))];
        assert!(eval("a > 5", &a("10")));
        assert!(eval("a = 5", &a("5")));
        assert!(eval("5 = a", &a("5")));
        assert!(!eval("a > 5", &a("5.5")), "Integer.valueOf(\"5.5\") fails");
        assert!(eval("a > 5.0", &a("5.5")));
        assert!(eval("a > 5", &a("+6")));
        assert!(!eval("a > 5", &a(" 6")), "Integer.valueOf does not trim");
        assert!(eval("a > 5.0", &a(" 6 ")), "Double.valueOf trims");
        assert!(eval("a = 3000000000", &a("3000000000")));
        assert!(!eval("a = 3", &a("3000000000")));
        assert!(eval("a = TRUE", &a("True")));
        assert!(eval("a = FALSE", &a("yes")));
        assert!(
            eval("a > b", &[("a", s("10")), ("b", s("9"))]),
            "doubles, not text"
        );
        assert!(eval("a = 'x'", &a("x")));
        assert!(!eval("a = 'x'", &a("y")));
        assert!(
            !eval("a", &a("true")),
            "a string property is never TRUE by itself"
        );
        assert!(eval("a > -2147483648", &a("0")));
        assert!(eval("a < -5", &a("-6")));
        assert!(eval("a >= -5.5", &a("-5.5")));
    }

    #[test]
    fn three_valued_logic_and_failures() {
        // NULL AND FALSE is FALSE; NULL OR TRUE is TRUE; NOT NULL is NULL.
        assert!(!eval("a = 1 AND b = 1", &[("b", s("1"))]));
        assert!(eval("a = 1 OR b = 1", &[("b", s("1"))]));
        assert!(eval("NOT (a = 1 AND b = 1)", &[("b", s("2"))]));
        assert!(!eval("NOT (a = 1)", &[]));
        assert!(!eval("a <> 1", &[]));
        // A failed conversion fails the whole evaluation, even under NOT.
        assert!(!eval("NOT (a > 1)", &[("a", s("x"))]));
        // ...unless a short circuit never evaluates it.
        assert!(eval("b = 1 OR a > 1", &[("a", s("x")), ("b", s("1"))]));
        // NOT binds tighter than `=`: (NOT a) = 1, Boolean vs Integer, never equal.
        assert!(!eval("NOT a = 1", &[("a", s("1"))]));
        assert!(eval("TRUE", &[]) && !eval("FALSE", &[]) && !eval("NULL", &[]));
    }

    #[test]
    fn keywords_are_case_insensitive_and_do_not_swallow_identifiers() {
        assert!(eval(
            "andy = 'x' AnD ORDER = 'y'",
            &[("andy", s("x")), ("ORDER", s("y"))]
        ));
        assert!(eval("a NoT iN ('x')", &[("a", s("y"))]));
        assert!(eval("$a_1 = 1", &[("$a_1", s("1"))]));
        assert!(Selector::parse("and = 1").is_err());
    }

    /// Runs `f` on a thread with a 1 MiB stack: half of a tokio worker's, in a debug build.
    fn on_small_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn hostile_input_is_bounded() {
        on_small_stack(|| {
            assert!(Selector::parse(&"(".repeat(100_000)).is_err());
            assert!(Selector::parse(&format!("{}a = 1", "NOT ".repeat(1000))).is_err());
            assert!(Selector::parse(&"-".repeat(10_000)).is_err());
            assert!(Selector::parse(&"a".repeat(MAX_EXPRESSION_LEN + 1)).is_err());
            let deep = format!("{}a = 1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
            assert!(eval(&deep, &[("a", s("1"))]));
            let prefixes = format!("{}a", "NOT ".repeat(MAX_DEPTH));
            assert!(!eval(&prefixes, &[]));
            let long_or = vec!["a = 1"; 1000].join(" OR ");
            assert!(eval(&long_or, &[("a", s("1"))]));
            let long_and = vec!["a = 1"; 1000].join(" AND ");
            assert!(!eval(&long_and, &[("a", s("2"))]));
            let chained = vec!["a"; 2000].join(" = ");
            assert!(Selector::parse(&chained).is_err());
            let chained = vec!["a"; 60].join(" = ");
            assert!(!eval(&chained, &[]));
        });
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}") {
            let _ = Selector::parse(&text);
        }

        #[test]
        fn sql_like_text_never_panics_and_evaluates(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "b", "NOT", "AND", "OR", "IN", "IS", "NULL", "BETWEEN", "CONTAINS",
                    "TRUE", "'x'", "1", "2.5", "(", ")", "=", "<>", ">", "<=", ",", "-",
                ]),
                0..16,
            ),
            a in proptest::option::of("[0-9x.]{0,4}"),
        ) {
            let text = words.join(" ");
            if let Ok(selector) = Selector::parse(&text) {
                let _ = selector
                    .matches_properties(|name| if name == "a" { a.as_deref() } else { None });
            }
        }

        /// Integer comparisons agree with Rust's on numeric strings.
        #[test]
        fn numeric_comparisons_agree(x in any::<i32>(), y in any::<i32>()) {
            let v = x.to_string();
            let selector = Selector::parse(&format!("a > {y}")).unwrap();
            prop_assert_eq!(selector.matches_properties(|_| Some(v.as_str())), x > y);
            let selector = Selector::parse(&format!("a = {y}")).unwrap();
            prop_assert_eq!(selector.matches_properties(|_| Some(v.as_str())), x == y);
        }
    }
}
