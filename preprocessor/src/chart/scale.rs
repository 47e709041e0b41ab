//! Axes: where a value lies in SVG units, on a linear or a logarithmic scale, the ticks along
//! them, and how their numbers are written.

use serde::Serialize;

/// The most gridlines an axis gets, whatever the data ([`nice_axis`] gives about six).
pub const MAX_TICKS: usize = 12;

/// One decimal is enough for SVG coordinates.
pub fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A gridline or label position along an axis, in SVG units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tick {
    pub pos: f64,
    pub label: String,
}

/// A mapping from data values to SVG coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    log: bool,
    /// The data values at the two ends (positive on a log scale).
    lo: f64,
    hi: f64,
    /// Where the two ends lie in SVG units (`to_px` may be less than `from_px`: SVG's y grows
    /// downwards).
    from_px: f64,
    to_px: f64,
}

/// What a chart says about its value axis, for a reader of the SVG (a test): the value of a
/// mark follows from its coordinate along `orient`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AxisData {
    /// "x" or "y".
    pub orient: &'static str,
    /// "linear" or "log".
    pub scale: &'static str,
    pub from_px: f64,
    pub to_px: f64,
    pub from: f64,
    pub to: f64,
}

impl Scale {
    /// `lo..hi` onto `from_px..to_px`; a span of zero is widened so that it divides.
    pub fn linear(lo: f64, hi: f64, from_px: f64, to_px: f64) -> Scale {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Scale {
            log: false,
            lo,
            hi,
            from_px,
            to_px,
        }
    }

    /// Logarithmic: equal ratios take equal room. `lo` and `hi` must be positive (a
    /// non-positive or reversed pair is widened around what there is).
    pub fn log(lo: f64, hi: f64, from_px: f64, to_px: f64) -> Scale {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
        let hi = if hi > lo && hi.is_finite() {
            hi
        } else {
            lo * 2.0
        };
        Scale {
            log: true,
            lo,
            hi,
            from_px,
            to_px,
        }
    }

    /// How far along the axis `v` lies, 0 at `lo` and 1 at `hi`, clamped a little beyond both
    /// ends so that no coordinate is ever infinite.
    fn fraction(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(f64::MIN_POSITIVE).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if t.is_nan() {
            0.0
        } else {
            t.clamp(-0.05, 1.05)
        }
    }

    /// The SVG coordinate of `v`.
    pub fn pos(&self, v: f64) -> f64 {
        round(self.from_px + self.fraction(v) * (self.to_px - self.from_px))
    }

    pub fn lo(&self) -> f64 {
        self.lo
    }

    pub fn hi(&self) -> f64 {
        self.hi
    }

    pub fn to_px(&self) -> f64 {
        self.to_px
    }

    pub fn data(&self, orient: &'static str) -> AxisData {
        AxisData {
            orient,
            scale: if self.log { "log" } else { "linear" },
            from_px: self.from_px,
            to_px: self.to_px,
            from: self.lo,
            to: self.hi,
        }
    }
}

/// A linear axis from zero to a round value at or above `top`, with a gridline every step.
pub fn zero_based(top: f64, from_px: f64, to_px: f64) -> (Scale, Vec<Tick>) {
    let (step, max) = nice_axis(top);
    let scale = Scale::linear(0.0, max, from_px, to_px);
    let ticks = (0..MAX_TICKS as u32)
        .map(|i| f64::from(i) * step)
        .take_while(|v| v.is_finite() && *v <= max + step / 2.0)
        .map(|v| Tick {
            pos: scale.pos(v),
            label: format_tick(v, step),
        })
        .collect();
    (scale, ticks)
}

/// A linear axis from `floor` (not zero: a zoomed axis, which its label must say) to a round
/// value at or above `top`, with a gridline every step.
pub fn from_floor(floor: f64, top: f64, from_px: f64, to_px: f64) -> (Scale, Vec<Tick>) {
    let (step, span) = nice_axis(top - floor);
    let scale = Scale::linear(floor, floor + span, from_px, to_px);
    let ticks = (0..MAX_TICKS as u32)
        .map(|i| floor + f64::from(i) * step)
        .take_while(|v| v.is_finite() && *v <= floor + span + step / 2.0)
        .map(|v| Tick {
            pos: scale.pos(v),
            label: format_tick(v, step),
        })
        .collect();
    (scale, ticks)
}

/// A tick's value with as many decimals as its step has, so that an axis's labels agree: "0.5,
/// 1.0, 1.5", "0, 1000, 2000".
pub fn format_tick(v: f64, step: f64) -> String {
    let decimals = (0..6)
        .find(|d| {
            let scaled = step * 10f64.powi(*d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(6) as usize;
    format!("{v:.decimals$}")
}

/// A round step and the axis top it gives: about five gridlines above `top`. Both are finite
/// and positive for any `top`: where a round top would overflow, the axis ends at `top` itself
/// with one step.
pub fn nice_axis(top: f64) -> (f64, f64) {
    if top <= 0.0 || !top.is_finite() {
        return (1.0, 1.0);
    }
    let rough = top / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    let max = (top / step).ceil() * step;
    if step.is_finite() && step > 0.0 && max.is_finite() && max / step <= MAX_TICKS as f64 {
        (step, max)
    } else {
        (top, top)
    }
}

/// The powers of `base` from the one at or below `lo` to the one at or above `hi`, as
/// exponents: the ends of a logarithmic axis that shows whole powers.
pub fn power_span(lo: f64, hi: f64, base: f64) -> (i32, i32) {
    let exponent = |v: f64| {
        let e = v.ln() / base.ln();
        if e.is_finite() {
            e.clamp(-300.0, 300.0)
        } else {
            0.0
        }
    };
    let (first, last) = (exponent(lo).floor() as i32, exponent(hi).ceil() as i32);
    (first, last.max(first + 1))
}

/// Ticks at every `every`-th power of `base` from `first` to `last`, at most [`MAX_TICKS`]
/// (every other one is dropped until they fit), labelled by `label`.
pub fn power_ticks(
    scale: &Scale,
    base: f64,
    (first, last): (i32, i32),
    label: impl Fn(f64) -> String,
) -> Vec<Tick> {
    let mut every = 1;
    while (last - first) / every + 1 > MAX_TICKS as i32 {
        every *= 2;
    }
    (first..=last)
        .filter(|e| (e - first) % every == 0)
        .map(|e| {
            let v = base.powi(e);
            Tick {
                pos: scale.pos(v),
                label: label(v),
            }
        })
        .collect()
}

/// A size in bytes with a binary prefix: "8 KiB", "64 MiB", "4 GiB".
pub fn format_bytes(bytes: f64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        let size = size as f64;
        if bytes >= size {
            return format!(
                "{} {unit}",
                format_number((bytes / size * 10.0).round() / 10.0)
            );
        }
    }
    format!("{} B", format_number(bytes))
}

/// A value on an axis or beside a mark: whole numbers from 10 up, one or two decimals below.
pub fn format_value(v: f64) -> String {
    if v == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A number as written: no decimals for a whole one.
pub fn format_number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// A power of two or a fraction of one on a log axis: "1/4", "1", "4096".
pub fn format_power(v: f64) -> String {
    if v >= 1.0 {
        format_number(v)
    } else {
        format!("1/{}", format_number(1.0 / v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_get_binary_prefixes() {
        assert_eq!(format_bytes(8192.0), "8 KiB");
        assert_eq!(format_bytes(50331648.0), "48 MiB");
        assert_eq!(format_bytes(4294967296.0), "4 GiB");
        assert_eq!(format_bytes(512.0), "512 B");
    }

    #[test]
    fn axes_get_round_steps() {
        assert_eq!(nice_axis(4100.0), (1000.0, 5000.0));
        assert_eq!(nice_axis(870.0), (200.0, 1000.0));
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
    }

    #[test]
    fn degenerate_axes_stay_finite_and_bounded() {
        for top in [
            f64::MAX,
            1.7e308,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            -1.0,
        ] {
            let (step, max) = nice_axis(top);
            assert!(step.is_finite() && step > 0.0 && max.is_finite(), "{top}");
            let (_, ticks) = zero_based(top, 0.0, 100.0);
            assert!(
                !ticks.is_empty() && ticks.len() <= MAX_TICKS,
                "{top}: {ticks:?}"
            );
            assert!(ticks.iter().all(|t| t.pos.is_finite()), "{top}");
        }
    }

    #[test]
    fn an_axis_writes_its_ticks_with_its_steps_decimals() {
        assert_eq!(format_tick(1.0, 0.5), "1.0");
        assert_eq!(format_tick(0.5, 0.25), "0.50");
        assert_eq!(format_tick(2000.0, 1000.0), "2000");
        let (_, ticks) = zero_based(2.47, 0.0, 100.0);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5"]);
    }

    #[test]
    fn a_linear_scale_maps_its_ends_and_halfway() {
        let scale = Scale::linear(0.0, 4000.0, 16.0, 616.0);
        assert_eq!(scale.pos(0.0), 16.0);
        assert_eq!(scale.pos(4000.0), 616.0);
        assert_eq!(scale.pos(2000.0), 316.0);
        // Upside down, as a y axis is.
        let y = Scale::linear(0.0, 10.0, 300.0, 100.0);
        assert_eq!(y.pos(5.0), 200.0);
    }

    #[test]
    fn a_log_scale_gives_equal_ratios_equal_room() {
        let scale = Scale::log(1.0, 1024.0, 0.0, 100.0);
        assert_eq!(scale.pos(32.0), 50.0);
        assert_eq!(
            scale.pos(2.0) - scale.pos(1.0),
            scale.pos(1024.0) - scale.pos(512.0)
        );
        // Nothing drawn from zero, a negative or a huge value is infinite.
        for v in [0.0, -3.0, f64::MAX, f64::NAN] {
            let pos = scale.pos(v);
            assert!((-5.0..=105.0).contains(&pos), "{v}: {pos}");
        }
    }

    #[test]
    fn log_axes_span_whole_powers_with_bounded_ticks() {
        assert_eq!(power_span(0.3, 5000.0, 2.0), (-2, 13));
        assert_eq!(power_span(2.0e12, 6.0e13, 10.0), (12, 14));
        assert_eq!(
            power_span(8.0, 8.0, 2.0),
            (3, 4),
            "one value still spans a power"
        );
        let scale = Scale::log(2f64.powi(-40), 2f64.powi(40), 0.0, 100.0);
        let ticks = power_ticks(&scale, 2.0, (-40, 40), format_power);
        assert!(ticks.len() <= MAX_TICKS, "{} ticks", ticks.len());
        assert_eq!(format_power(0.25), "1/4");
        assert_eq!(format_power(4096.0), "4096");
    }
}
