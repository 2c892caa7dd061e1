//! A world written in Rust with agentsim's public API: a library lends a book.
//!
//! The member asks to borrow a title; the agent finds the book (`find_book`, a
//! read that answers 503 a fifth of the time) and lends it (`lend`, a write
//! whose answer is lost, after it was applied, 30% of the time in the first two
//! minutes). A second loan of a book is the minefield `double_loan`.
//!
//! `cargo run --release -p agentsim-example-world` sweeps it in memory with
//! three agents, then into a folder that `agentsim report` reads.

use agentsim::prelude::*;

const BOOKS: [(&str, &str); 3] = [("B1", "Dune"), ("B2", "Emma"), ("B3", "Ulysses")];

/// One seed's library: the book the member wants, and the loans made.
#[derive(Default)]
pub struct Library {
    wanted: usize,
    loans: Vec<usize>,
}

/// The library, ready to sweep.
pub fn library() -> Result<BuiltWorld, BuildError> {
    WorldBuilder::new("library", |rng| Library { wanted: rng.below(3) as usize, loans: Vec::new() })
        .tool(
            read_tool("find_book", "Finds a book by title.")
                .arg("title", ValueKind::Str, true)
                .field("book_id", ValueKind::Str)
                .field("loans", ValueKind::Int),
        )
        .tool(write_tool("lend", "Lends a book to the member.").id_arg("book_id").field("loan_id", ValueKind::Str))
        .fault("find_book", FaultSpec::error(503).rate(0.2))
        .fault("lend", FaultSpec::lost_answer().rate(0.3).during(0, 120_000))
        .timeout_ms("lend", 5_000)
        .opening(|lib| {
            Says::new(format!("I'd like to borrow {}.", BOOKS[lib.wanted].1)).fact("title", BOOKS[lib.wanted].1)
        })
        .handle("find_book", |lib, call| {
            let title = call.str("title")?;
            let i = BOOKS.iter().position(|(_, t)| *t == title).ok_or_else(|| ToolError::not_found("no such title"))?;
            let loans = lib.loans.iter().filter(|l| **l == i).count() as i64;
            Ok(Value::map([("book_id", Value::str(BOOKS[i].0)), ("loans", Value::Int(loans))]))
        })
        .handle("lend", |lib, call| {
            let id = call.str("book_id")?;
            let i = BOOKS.iter().position(|(b, _)| *b == id).ok_or_else(|| ToolError::not_found("no such book"))?;
            if lib.loans.contains(&i) {
                call.minefield("double_loan", format!("{id} lent twice"));
            }
            lib.loans.push(i);
            call.milestone("lent");
            Ok(Value::map([("loan_id", Value::Str(format!("L{}", lib.loans.len())))]))
        })
        .judge(|lib| lib.loans == [lib.wanted])
        .plan(
            Plan::new()
                .call("find_book", |k| Value::map([("title", k.said("title"))]))
                .call("lend", |k| Value::map([("book_id", k.result("find_book", "book_id"))]))
                // A lend whose answer was lost: look the book up before lending again.
                .verify("find_book", |k| k.result("find_book", "loans").as_int() > Some(0)),
        )
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let world = library()?;
    for agent in ["oracle", "naive", "resilient"] {
        println!("{}", line(agent, &sweep(&world).agent(agent).seeds(0..1000).run()?.summary));
    }
    let out = std::env::args().nth(1).unwrap_or_else(|| "library-naive".into());
    let summary = sweep(&world).agent("naive").seeds(0..1000).write_to(&out)?;
    println!("wrote {out}/ (digest {}): agentsim report {out}", summary.digest);
    Ok(())
}

/// One agent's sweep in a line.
pub fn line(agent: &str, summary: &Summary) -> String {
    let double_loans = summary.minefields.get("double_loan").copied().unwrap_or(0);
    format!("{agent:>9}: completion {:.1}%, double loans {double_loans}", 100.0 * summary.completion.rate)
}
