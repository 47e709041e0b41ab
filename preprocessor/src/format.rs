//! How numbers are written, below every view: significant figures, times, parameters, and the
//! SI prefix of a rate. The figures themselves come from [`kernelbook_core::results::figures`];
//! this module only scales and prints them, and is the one place that multiplies by 10^9 or
//! 10^12.

use kernelbook_core::results::LabResults;

/// 10^9: a GB (bytes), a GFLOP.
pub const GIGA: f64 = 1e9;
/// 10^12: a TB, a TFLOP.
pub const TERA: f64 = 1e12;

/// Units per second as billions per second ("GB/s" from bytes per second).
pub fn to_giga(per_second: f64) -> f64 {
    per_second / GIGA
}

/// Billions per second as units per second.
pub fn from_giga(giga: f64) -> f64 {
    giga * GIGA
}

/// 2^20: a MiB.
pub const MEBI: f64 = 1_048_576.0;

/// Bytes as MiB.
pub fn to_mib(bytes: f64) -> f64 {
    bytes / MEBI
}

/// Units per second as trillions per second ("TFLOP/s").
pub fn to_tera(per_second: f64) -> f64 {
    per_second / TERA
}

/// Three significant figures or a whole number: "37.2", "612", "4139".
pub fn format_sig(value: f64) -> String {
    if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A kernel time at a readable scale: "152.3 µs", "1.204 ms".
pub fn format_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.1} µs", ms * 1000.0)
    } else {
        format!("{ms:.3} ms")
    }
}

/// A per cent to one decimal: "74.8 %".
pub fn format_percent(percent: f64) -> String {
    format!("{percent:.1} %")
}

/// Whole GB/s, as the tables print bandwidth: "1634".
pub fn format_gbs(gbs: f64) -> String {
    format!("{gbs:.0}")
}

/// "n = 8192, tile = 32".
pub fn format_params(params: &kernelbook_core::expr::Params) -> String {
    if params.is_empty() {
        return "no parameters".into();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The divisor and header of the rate column: the largest rate sets the prefix ("TFLOP/s",
/// "billion shared loads/s").
pub fn rate_scale(results: &LabResults) -> Option<(f64, String)> {
    let unit = results
        .variants
        .iter()
        .find_map(|v| v.work.as_ref())?
        .unit
        .clone();
    let top = results
        .variants
        .iter()
        .filter_map(kernelbook_core::results::VariantResult::work_per_second)
        .fold(0.0, f64::max);
    Some(rate_prefix(&unit, top))
}

/// The divisor and header for rates of `unit` up to `top` per second.
pub fn rate_prefix(unit: &str, top: f64) -> (f64, String) {
    let (divisor, si, words) = [
        (1e15, "P", "quadrillion"),
        (TERA, "T", "trillion"),
        (GIGA, "G", "billion"),
        (1e6, "M", "million"),
        (1e3, "k", "thousand"),
    ]
    .into_iter()
    .find(|(d, _, _)| top >= *d)
    .unwrap_or((1.0, "", ""));
    let symbol = unit.chars().all(|c| c.is_ascii_uppercase());
    let header = if symbol {
        format!("{si}{unit}/s")
    } else if words.is_empty() {
        format!("{unit}s/s")
    } else {
        format!("{words} {unit}s/s")
    };
    (divisor, header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_tables_write_them() {
        assert_eq!(format_sig(4139.2), "4139");
        assert_eq!(format_sig(37.24), "37.2");
        assert_eq!(format_sig(1.5), "1.50");
        assert_eq!(format_ms(0.1523), "152.3 µs");
        assert_eq!(format_ms(1.2041), "1.204 ms");
        assert_eq!(rate_prefix("FLOP", 6.1e13), (TERA, "TFLOP/s".into()));
        assert_eq!(
            rate_prefix("shared load", 5e12),
            (TERA, "trillion shared loads/s".into())
        );
        assert_eq!(rate_prefix("load", 12.0), (1.0, "loads/s".into()));
    }
}

/// `text` as HTML, escaped, with each `name` in backticks shown as code (as the prose writes
/// it) instead of with its backticks: a note's "the CPU reference `copy`". Templates use it as
/// `{{{code note}}}` (its output is already escaped). A backtick without its pair stays.
pub fn code_spans(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    let paired = parts.len() - usize::from(parts.len().is_multiple_of(2));
    let mut html = String::with_capacity(text.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        let escaped = handlebars::html_escape(part);
        match (i % 2 == 1, i < paired) {
            (true, true) => {
                html.push_str("<code>");
                html.push_str(&escaped);
                html.push_str("</code>");
            }
            (true, false) => {
                html.push('`');
                html.push_str(&escaped);
            }
            (false, _) => html.push_str(&escaped),
        }
    }
    html
}

#[cfg(test)]
mod code_span_tests {
    #[test]
    fn names_in_backticks_become_code_and_everything_is_escaped() {
        assert_eq!(
            super::code_spans("the CPU reference `copy` & <b>`x`"),
            "the CPU reference <code>copy</code> &amp; &lt;b&gt;<code>x</code>"
        );
        assert_eq!(super::code_spans("a ` alone"), "a ` alone");
        assert_eq!(super::code_spans("`a` and `b"), "<code>a</code> and `b");
    }
}
