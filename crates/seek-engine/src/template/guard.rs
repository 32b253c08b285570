//! The rewrite that puts a size check on every step of a chat template that can grow a value:
//! the template's syntax tree is copied with each growing expression routed through one of
//! seek's functions (see `budget.rs`), and every piece of raw text turned into an emitted
//! constant so that it passes the output check too.
//!
//! Owns the tree rewrite only. It must not change what a template renders: every rewritten
//! node computes the same value as the original (the functions delegate to minijinja's own
//! operators), and nodes whose shape minijinja's code generator relies on (assignment targets,
//! macro arguments, the calls of `{% call %}` and `{% do %}`, `{{ loop(…) }}` and
//! `{{ super() }}`) are kept as they are.
//!
//! Rewritten: `a + b`, `a * b`, `a ~ b` → `__seek_op("+", a, b)`; a list or map literal that is
//! not a constant, and a call that is not emitted directly → `__seek_check(…)`; the value of
//! `{% set ns.attr = … %}` → `__seek_setattr(…)`; raw text → `{{ "text" }}`.

use minijinja::machinery::Span;
use minijinja::machinery::ast::{
    AutoEscape, BinOp, BinOpKind, Call, CallArg, CallBlock, Compare, CompareOp, Const, Do,
    EmitExpr, Expr, Filter, FilterBlock, ForLoop, GetAttr, GetItem, IfCond, IfExpr, List, Macro,
    Map, Set, SetBlock, Slice, Spanned, Stmt, Template, Test, UnaryOp, Var, WithBlock,
};
use minijinja::value::Value;

/// The binary operator function: `__seek_op(op, left, right)`.
pub const OP: &str = "__seek_op";
/// Checks a freshly built value: `__seek_check(value)` returns it unchanged.
pub const CHECK: &str = "__seek_check";
/// Checks a value assigned to a namespace's attribute.
pub const SETATTR: &str = "__seek_setattr";
/// Names a template may not use itself (it could otherwise replace seek's checks).
pub const RESERVED_PREFIX: &str = "__seek_";

/// The guarded copy of a parsed template.
pub fn rewrite<'a>(stmt: &Stmt<'a>) -> Stmt<'a> {
    match stmt {
        Stmt::Template(s) => Stmt::Template(sp(
            Template {
                children: stmts(&s.children),
            },
            s.span(),
        )),
        Stmt::EmitExpr(s) => Stmt::EmitExpr(sp(
            EmitExpr {
                expr: emitted(&s.expr),
            },
            s.span(),
        )),
        Stmt::EmitRaw(s) => Stmt::EmitExpr(sp(
            EmitExpr {
                expr: Expr::Const(sp(
                    Const {
                        value: Value::from(s.raw),
                    },
                    s.span(),
                )),
            },
            s.span(),
        )),
        Stmt::ForLoop(s) => Stmt::ForLoop(sp(
            ForLoop {
                target: target(&s.target),
                iter: expr(&s.iter),
                filter_expr: s.filter_expr.as_ref().map(expr),
                recursive: s.recursive,
                body: stmts(&s.body),
                else_body: stmts(&s.else_body),
            },
            s.span(),
        )),
        Stmt::IfCond(s) => Stmt::IfCond(sp(
            IfCond {
                expr: expr(&s.expr),
                true_body: stmts(&s.true_body),
                false_body: stmts(&s.false_body),
            },
            s.span(),
        )),
        Stmt::WithBlock(s) => Stmt::WithBlock(sp(
            WithBlock {
                assignments: s
                    .assignments
                    .iter()
                    .map(|(t, e)| (target(t), expr(e)))
                    .collect(),
                body: stmts(&s.body),
            },
            s.span(),
        )),
        Stmt::Set(s) => {
            let value = expr(&s.expr);
            let value = match &s.target {
                Expr::GetAttr(_) => call_named(SETATTR, vec![value], s.span()),
                _ => value,
            };
            Stmt::Set(sp(
                Set {
                    target: target(&s.target),
                    expr: value,
                },
                s.span(),
            ))
        }
        Stmt::SetBlock(s) => Stmt::SetBlock(sp(
            SetBlock {
                target: target(&s.target),
                filter: s.filter.as_ref().map(expr),
                body: stmts(&s.body),
            },
            s.span(),
        )),
        Stmt::AutoEscape(s) => Stmt::AutoEscape(sp(
            AutoEscape {
                enabled: expr(&s.enabled),
                body: stmts(&s.body),
            },
            s.span(),
        )),
        Stmt::FilterBlock(s) => Stmt::FilterBlock(sp(
            FilterBlock {
                filter: expr(&s.filter),
                body: stmts(&s.body),
            },
            s.span(),
        )),
        Stmt::Block(s) => Stmt::Block(sp(
            minijinja::machinery::ast::Block {
                name: s.name,
                required: s.required,
                body: stmts(&s.body),
            },
            s.span(),
        )),
        // A chat template is one template: seek gives it no loader, so these fail at run time
        // as they did before; their expressions are still guarded.
        Stmt::Import(s) => Stmt::Import(sp(
            minijinja::machinery::ast::Import {
                expr: expr(&s.expr),
                name: target(&s.name),
            },
            s.span(),
        )),
        Stmt::FromImport(s) => Stmt::FromImport(sp(
            minijinja::machinery::ast::FromImport {
                expr: expr(&s.expr),
                names: s
                    .names
                    .iter()
                    .map(|(n, a)| (target(n), a.as_ref().map(target)))
                    .collect(),
            },
            s.span(),
        )),
        Stmt::Extends(s) => Stmt::Extends(sp(
            minijinja::machinery::ast::Extends {
                name: expr(&s.name),
            },
            s.span(),
        )),
        Stmt::Include(s) => Stmt::Include(sp(
            minijinja::machinery::ast::Include {
                name: expr(&s.name),
                ignore_missing: s.ignore_missing,
            },
            s.span(),
        )),
        Stmt::Macro(s) => Stmt::Macro(sp(macro_decl(s), s.span())),
        Stmt::CallBlock(s) => Stmt::CallBlock(sp(
            CallBlock {
                call: sp(call_node(&s.call), s.call.span()),
                macro_decl: sp(macro_decl(&s.macro_decl), s.macro_decl.span()),
            },
            s.span(),
        )),
        Stmt::Do(s) => Stmt::Do(sp(
            Do {
                call: sp(call_node(&s.call), s.call.span()),
            },
            s.span(),
        )),
    }
}

fn sp<T>(node: T, span: Span) -> Spanned<T> {
    Spanned::new(node, span)
}

fn stmts<'a>(list: &[Stmt<'a>]) -> Vec<Stmt<'a>> {
    list.iter().map(rewrite).collect()
}

fn macro_decl<'a>(m: &Macro<'a>) -> Macro<'a> {
    Macro {
        name: m.name,
        args: m.args.iter().map(target).collect(),
        defaults: m.defaults.iter().map(expr).collect(),
        body: stmts(&m.body),
    }
}

fn call_node<'a>(c: &Call<'a>) -> Call<'a> {
    Call {
        expr: expr(&c.expr),
        args: c.args.iter().map(call_arg).collect(),
    }
}

fn call_arg<'a>(arg: &CallArg<'a>) -> CallArg<'a> {
    match arg {
        CallArg::Pos(e) => CallArg::Pos(expr(e)),
        CallArg::Kwarg(name, e) => CallArg::Kwarg(name, expr(e)),
        CallArg::PosSplat(e) => CallArg::PosSplat(expr(e)),
        CallArg::KwargSplat(e) => CallArg::KwargSplat(expr(e)),
    }
}

/// `name(args…)` as an expression.
fn call_named<'a>(name: &'static str, args: Vec<Expr<'a>>, span: Span) -> Expr<'a> {
    Expr::Call(sp(
        Call {
            expr: Expr::Var(sp(Var { id: name }, span)),
            args: args.into_iter().map(CallArg::Pos).collect(),
        },
        span,
    ))
}

/// The expression of `{{ … }}`: the output check sees its value, so a call emitted directly
/// stays a plain call (minijinja renders `{{ loop(…) }}` and `{{ super() }}` specially).
fn emitted<'a>(e: &Expr<'a>) -> Expr<'a> {
    match e {
        Expr::Call(c) => Expr::Call(sp(call_node(c), c.span())),
        other => expr(other),
    }
}

/// An assignment target (`x`, `a, b`, `ns.attr`): copied, never wrapped.
fn target<'a>(e: &Expr<'a>) -> Expr<'a> {
    match e {
        Expr::Var(v) => Expr::Var(sp(Var { id: v.id }, v.span())),
        Expr::List(l) => Expr::List(sp(
            List {
                items: l.items.iter().map(target).collect(),
            },
            l.span(),
        )),
        Expr::GetAttr(g) => Expr::GetAttr(sp(
            GetAttr {
                expr: target(&g.expr),
                name: g.name,
            },
            g.span(),
        )),
        other => expr(other),
    }
}

fn expr<'a>(e: &Expr<'a>) -> Expr<'a> {
    match e {
        Expr::Var(v) => Expr::Var(sp(Var { id: v.id }, v.span())),
        Expr::Const(c) => Expr::Const(sp(
            Const {
                value: c.value.clone(),
            },
            c.span(),
        )),
        Expr::Slice(s) => Expr::Slice(sp(
            Slice {
                expr: expr(&s.expr),
                start: s.start.as_ref().map(expr),
                stop: s.stop.as_ref().map(expr),
                step: s.step.as_ref().map(expr),
            },
            s.span(),
        )),
        Expr::UnaryOp(u) => Expr::UnaryOp(sp(
            UnaryOp {
                op: match u.op {
                    minijinja::machinery::ast::UnaryOpKind::Not => {
                        minijinja::machinery::ast::UnaryOpKind::Not
                    }
                    minijinja::machinery::ast::UnaryOpKind::Neg => {
                        minijinja::machinery::ast::UnaryOpKind::Neg
                    }
                },
                expr: expr(&u.expr),
            },
            u.span(),
        )),
        Expr::BinOp(b) => binop(b),
        Expr::Compare(c) => Expr::Compare(sp(
            Compare {
                expr: expr(&c.expr),
                ops: c
                    .ops
                    .iter()
                    .map(|o| CompareOp {
                        op: compare_kind(&o.op),
                        expr: expr(&o.expr),
                    })
                    .collect(),
            },
            c.span(),
        )),
        Expr::IfExpr(i) => Expr::IfExpr(sp(
            IfExpr {
                test_expr: expr(&i.test_expr),
                true_expr: expr(&i.true_expr),
                false_expr: i.false_expr.as_ref().map(expr),
            },
            i.span(),
        )),
        Expr::Filter(f) => Expr::Filter(sp(
            Filter {
                name: f.name,
                expr: f.expr.as_ref().map(expr),
                args: f.args.iter().map(call_arg).collect(),
            },
            f.span(),
        )),
        Expr::Test(t) => Expr::Test(sp(
            Test {
                name: t.name,
                expr: expr(&t.expr),
                args: t.args.iter().map(call_arg).collect(),
            },
            t.span(),
        )),
        Expr::GetAttr(g) => Expr::GetAttr(sp(
            GetAttr {
                expr: expr(&g.expr),
                name: g.name,
            },
            g.span(),
        )),
        Expr::GetItem(g) => Expr::GetItem(sp(
            GetItem {
                expr: expr(&g.expr),
                subscript_expr: expr(&g.subscript_expr),
            },
            g.span(),
        )),
        Expr::Call(c) => call_named(
            CHECK,
            vec![Expr::Call(sp(call_node(c), c.span()))],
            c.span(),
        ),
        Expr::List(l) => {
            let list = List {
                items: l.items.iter().map(expr).collect(),
            };
            if l.as_const().is_some() {
                Expr::List(sp(list, l.span()))
            } else {
                call_named(CHECK, vec![Expr::List(sp(list, l.span()))], l.span())
            }
        }
        Expr::Map(m) => {
            let map = Map {
                keys: m.keys.iter().map(expr).collect(),
                values: m.values.iter().map(expr).collect(),
            };
            if m.as_const().is_some() {
                Expr::Map(sp(map, m.span()))
            } else {
                call_named(CHECK, vec![Expr::Map(sp(map, m.span()))], m.span())
            }
        }
    }
}

fn binop<'a>(b: &Spanned<BinOp<'a>>) -> Expr<'a> {
    let symbol = match b.op {
        BinOpKind::Add => Some("+"),
        BinOpKind::Mul => Some("*"),
        BinOpKind::Concat => Some("~"),
        _ => None,
    };
    let (left, right) = (expr(&b.left), expr(&b.right));
    match symbol {
        Some(symbol) => {
            let op = Expr::Const(sp(
                Const {
                    value: Value::from(symbol),
                },
                b.span(),
            ));
            call_named(OP, vec![op, left, right], b.span())
        }
        None => Expr::BinOp(sp(
            BinOp {
                op: binop_kind(&b.op),
                left,
                right,
            },
            b.span(),
        )),
    }
}

fn binop_kind(k: &BinOpKind) -> BinOpKind {
    match k {
        BinOpKind::Eq => BinOpKind::Eq,
        BinOpKind::Ne => BinOpKind::Ne,
        BinOpKind::Lt => BinOpKind::Lt,
        BinOpKind::Lte => BinOpKind::Lte,
        BinOpKind::Gt => BinOpKind::Gt,
        BinOpKind::Gte => BinOpKind::Gte,
        BinOpKind::ScAnd => BinOpKind::ScAnd,
        BinOpKind::ScOr => BinOpKind::ScOr,
        BinOpKind::Add => BinOpKind::Add,
        BinOpKind::Sub => BinOpKind::Sub,
        BinOpKind::Mul => BinOpKind::Mul,
        BinOpKind::Div => BinOpKind::Div,
        BinOpKind::FloorDiv => BinOpKind::FloorDiv,
        BinOpKind::Rem => BinOpKind::Rem,
        BinOpKind::Pow => BinOpKind::Pow,
        BinOpKind::Concat => BinOpKind::Concat,
        BinOpKind::In => BinOpKind::In,
    }
}

fn compare_kind(
    k: &minijinja::machinery::ast::CompareOpKind,
) -> minijinja::machinery::ast::CompareOpKind {
    use minijinja::machinery::ast::CompareOpKind as K;
    match k {
        K::Eq => K::Eq,
        K::Ne => K::Ne,
        K::Lt => K::Lt,
        K::Lte => K::Lte,
        K::Gt => K::Gt,
        K::Gte => K::Gte,
        K::In => K::In,
        K::NotIn => K::NotIn,
    }
}
