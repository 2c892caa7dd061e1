//! The values of summary.json as the report writes them: escaped for HTML and
//! SVG, exactly as the file has them, or as percentages.

use serde_json::Value as Json;

/// Escapes text for HTML and SVG.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A value as a number (a string holding one is read; anything else is 0).
pub(crate) fn num(v: &Json) -> f64 {
    match v {
        Json::Number(n) => n.as_f64().unwrap_or(0.0),
        Json::String(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// A value exactly as summary.json writes it.
pub(crate) fn raw(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "n/a".to_string(),
        other => other.to_string(),
    }
}

/// A number of summary.json for a table cell: integers as they are, other
/// numbers with six significant digits (a Wilson bound's 17 digits said no more
/// and overflowed the column), text escaped.
pub fn table_number(v: &Json) -> String {
    match v {
        Json::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x == 0.0 || !x.is_finite() {
                return format!("{x}");
            }
            if x.abs() < 1e-3 {
                return format!("{x:.4e}");
            }
            let decimals = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
            let text = format!("{x:.decimals$}");
            let text =
                if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
            escape(&text)
        }
        other => escape(&raw(other)),
    }
}

/// A share in percent, as the CLI prints it.
pub(crate) fn pct(x: f64) -> String {
    agentsim_stats::text::percent(x)
}

/// `rate [lo, hi]` of a `{count, n, rate, lo, hi}` object, in percent.
pub(crate) fn rate_text(r: &Json) -> String {
    if num(&r["n"]) == 0.0 {
        return "n/a (none)".to_string();
    }
    format!("{} [{}, {}]", pct(num(&r["rate"])), pct(num(&r["lo"])), pct(num(&r["hi"])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_numbers_have_six_significant_digits() {
        assert_eq!(table_number(&serde_json::json!(0.9869718317581478)), "0.986972");
        assert_eq!(table_number(&serde_json::json!(1234)), "1234");
        assert_eq!(table_number(&serde_json::json!(0.5)), "0.5");
        assert_eq!(table_number(&serde_json::json!(38613.25)), "38613.2");
        assert_eq!(table_number(&serde_json::json!(0.0)), "0");
        assert_eq!(table_number(&serde_json::json!(0.00035313639455927456)), "3.5314e-4");
        assert_eq!(table_number(&serde_json::json!("a<b")), "a&lt;b");
    }
}
