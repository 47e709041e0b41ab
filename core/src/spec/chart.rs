//! `[chart]`: which chart a lab's results are drawn as beside its table. Every lab gets one;
//! the section only chooses another than the default or names what the chart needs.

use serde::Deserialize;

/// The chart a lab file asks for (`[chart]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartSpec {
    pub kind: ChartKind,
    /// The row a `speedup` chart compares every row with (its bar is 1×).
    #[serde(default)]
    pub baseline: Option<String>,
    /// The rows a bars chart draws, where the lab's other rows count their work another way and
    /// would share its axis only in name; the table shows every row.
    #[serde(default)]
    pub rows: Option<Vec<String>>,
    /// A bars chart of each row's % of the ceiling, its axis starting at this percentage: for
    /// rows whose differences lie in the last few percent.
    #[serde(default)]
    pub floor: Option<u32>,
}

/// What a chart draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    /// One horizontal bar per row (its GB/s, work rate or counter), the ceiling row as a line.
    Bars,
    /// One bar per row: how many times as fast as the baseline row.
    Speedup,
    /// The measured roofline: the `ridge`'s bandwidth slope and compute roof, on log axes.
    Roofline,
    /// The rows at their `plot_x`, as `[plot]` describes the axes.
    Points,
    /// No chart.
    None,
}

impl ChartKind {
    /// The kind a lab without `[chart]` gets: points with a `[plot]`, a roofline with a
    /// `ridge`, bars otherwise.
    pub fn default_for(has_plot: bool, has_ridge: bool) -> ChartKind {
        if has_plot {
            ChartKind::Points
        } else if has_ridge {
            ChartKind::Roofline
        } else {
            ChartKind::Bars
        }
    }

    /// The name lab files use.
    pub fn name(self) -> &'static str {
        match self {
            ChartKind::Bars => "bars",
            ChartKind::Speedup => "speedup",
            ChartKind::Roofline => "roofline",
            ChartKind::Points => "points",
            ChartKind::None => "none",
        }
    }
}

/// What is wrong with a chart section, given what the rest of the lab declares; `None` if
/// nothing is. `is_variant` says whether the lab defines a variant of that name.
pub fn chart_problem(
    chart: &ChartSpec,
    has_plot: bool,
    has_ridge: bool,
    is_variant: impl Fn(&str) -> bool,
) -> Option<String> {
    let kind = chart.kind.name();
    if let Some(row) = chart.rows.iter().flatten().find(|row| !is_variant(row)) {
        return Some(format!(
            "the chart's row `{row}` is not a variant of this lab"
        ));
    }
    if chart.kind != ChartKind::Bars && (chart.rows.is_some() || chart.floor.is_some()) {
        return Some(format!(
            "`rows` and `floor` are for a bars chart; a {kind} chart has neither"
        ));
    }
    if chart.floor.is_some_and(|floor| floor >= 100) {
        return Some("the chart's `floor` is a percentage of the ceiling below 100".into());
    }
    match (chart.kind, &chart.baseline) {
        (ChartKind::Speedup, None) => {
            Some("a speedup chart needs `baseline = \"VARIANT\"`, the row it compares with".into())
        }
        (ChartKind::Speedup, Some(baseline)) if !is_variant(baseline) => Some(format!(
            "the chart's baseline `{baseline}` is not a variant of this lab"
        )),
        (ChartKind::Speedup, Some(_)) => None,
        (_, Some(_)) => Some(format!(
            "`baseline` is for a speedup chart; a {kind} chart has none"
        )),
        (ChartKind::Points, None) if !has_plot => {
            Some("a points chart needs `[plot]` to say what its x axis is".into())
        }
        (ChartKind::Roofline, None) if !has_ridge => Some(
            "a roofline chart needs the lab's `ridge` (its compute and memory variants)".into(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(kind: ChartKind, baseline: Option<&str>) -> ChartSpec {
        ChartSpec {
            kind,
            baseline: baseline.map(str::to_string),
            rows: None,
            floor: None,
        }
    }

    #[test]
    fn the_default_follows_what_the_lab_declares() {
        assert_eq!(ChartKind::default_for(true, true), ChartKind::Points);
        assert_eq!(ChartKind::default_for(false, true), ChartKind::Roofline);
        assert_eq!(ChartKind::default_for(false, false), ChartKind::Bars);
    }

    #[test]
    fn each_kind_needs_what_it_draws() {
        let known = |name: &str| name == "starter";
        let problem = |c: ChartSpec, plot, ridge| chart_problem(&c, plot, ridge, known);
        assert_eq!(
            problem(chart(ChartKind::Speedup, Some("starter")), false, false),
            None
        );
        assert!(
            problem(chart(ChartKind::Speedup, None), false, false)
                .is_some_and(|p| p.contains("needs `baseline"))
        );
        assert!(
            problem(chart(ChartKind::Speedup, Some("start")), false, false)
                .is_some_and(|p| p.contains("`start` is not a variant"))
        );
        assert!(
            problem(chart(ChartKind::Bars, Some("starter")), false, false)
                .is_some_and(|p| p.contains("a bars chart has none"))
        );
        assert!(problem(chart(ChartKind::Points, None), false, false).is_some());
        assert_eq!(problem(chart(ChartKind::Points, None), true, false), None);
        assert!(problem(chart(ChartKind::Roofline, None), false, false).is_some());
        assert_eq!(problem(chart(ChartKind::Roofline, None), false, true), None);
        assert_eq!(problem(chart(ChartKind::None, None), false, false), None);
        let bars = |rows: &[&str], floor| ChartSpec {
            rows: Some(rows.iter().map(|r| r.to_string()).collect()),
            floor,
            ..chart(ChartKind::Bars, None)
        };
        assert_eq!(problem(bars(&["starter"], Some(80)), false, false), None);
        assert!(
            problem(bars(&["nope"], None), false, false)
                .is_some_and(|p| p.contains("row `nope` is not a variant"))
        );
        assert!(
            problem(bars(&[], Some(100)), false, false).is_some_and(|p| p.contains("below 100"))
        );
        let points = ChartSpec {
            floor: Some(80),
            ..chart(ChartKind::Points, None)
        };
        assert!(problem(points, true, false).is_some_and(|p| p.contains("for a bars chart")));
    }
}
