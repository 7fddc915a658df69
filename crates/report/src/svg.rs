//! Hand-written SVG charts for the HTML report: line charts over time (or against any x, as
//! load for capacity curves) and grouped bar charts.
//! No charting dependency, no script: hover tooltips are SVG `<title>` elements, which every
//! browser shows natively. All text passes through [`esc`].

use crate::fmt::esc;
use std::fmt::Write as _;
use volley_metrics::fmt::short;

const W: f64 = 560.0;
const H: f64 = 230.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 34.0;

/// Colours for files (or for the lines of one file): distinct in print and for common
/// colour-vision deficiencies (Okabe-Ito based).
pub const PALETTE: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];

/// One line of a line chart.
pub struct Line {
    pub label: String,
    pub color: &'static str,
    /// SVG `stroke-dasharray`, e.g. `"6 3"`.
    pub dash: Option<&'static str>,
    /// (x in seconds, y).
    pub points: Vec<(f64, f64)>,
}

/// A step of 1, 2, 2.5 or 5 × 10^k that cuts `range` into about `n` parts.
pub fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Ticks from 0 to at least `max`, and the axis top. `binary` picks steps that are round in
/// KiB/MiB/GiB (for byte values).
fn ticks(max: f64, n: f64, binary: bool) -> (Vec<f64>, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let mut unit = 1.0;
    while binary && max / unit >= 1024.0 {
        unit *= 1024.0;
    }
    let step = nice_step(max / unit, n) * unit;
    let top = (max / step).ceil() * step;
    let k = (top / step).round() as usize;
    ((0..=k).map(|i| i as f64 * step).collect(), top)
}

fn secs_label(s: f64) -> String {
    if s >= 180.0 && (s / 60.0).fract() == 0.0 {
        format!("{}m", s / 60.0)
    } else {
        format!("{}s", short(s))
    }
}

fn frame(o: &mut String, title: &str) {
    let _ = write!(
        o,
        "<figure class=\"chart\"><figcaption>{}</figcaption><svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        esc(title),
        esc(title)
    );
}

fn y_axis(o: &mut String, yt: &[f64], ytop: f64, fmt: &dyn Fn(f64) -> String) {
    let ph = H - TOP - BOTTOM;
    for v in yt {
        let y = TOP + ph - v / ytop * ph;
        let _ = write!(
            o,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"tick\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(&fmt(*v))
        );
    }
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{}\"/><line class=\"axis\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM
    );
}

fn legend(o: &mut String, items: &[(&str, &str, Option<&str>)]) {
    if items.len() < 2 {
        return;
    }
    o.push_str("<div class=\"legend\">");
    for (label, color, dash) in items {
        let _ = write!(
            o,
            "<span><svg width=\"22\" height=\"10\"><line x1=\"1\" x2=\"21\" y1=\"5\" y2=\"5\" stroke=\"{color}\" stroke-width=\"2.5\"{}/></svg>{}</span>",
            dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default(),
            esc(label)
        );
    }
    o.push_str("</div>");
}

/// A fault (or other event) drawn on a chart: a shaded window, or a dashed line when it has
/// no end.
pub struct Mark {
    pub from_s: f64,
    pub to_s: Option<f64>,
    /// The tooltip.
    pub label: String,
}

/// A line chart over time. `tick` formats axis labels, `val` tooltip values; `binary` makes
/// the value axis step in powers of 1024 (bytes).
pub fn line_chart(
    title: &str,
    lines: &[Line],
    binary: bool,
    tick: &dyn Fn(f64) -> String,
    val: &dyn Fn(f64) -> String,
) -> String {
    line_chart_marked(title, lines, binary, tick, val, &[])
}

/// [`line_chart`] with fault windows marked on the time axis.
pub fn line_chart_marked(
    title: &str,
    lines: &[Line],
    binary: bool,
    tick: &dyn Fn(f64) -> String,
    val: &dyn Fn(f64) -> String,
    marks: &[Mark],
) -> String {
    let x = XAxis {
        name: "time",
        tick: &secs_label,
        at: &|x| format!("{:.0}s", x.floor()),
        mark: None,
        marks,
        points: false,
    };
    xy_chart(title, lines, binary, (tick, val), &x)
}

/// The x axis of an [`xy_chart`].
pub struct XAxis<'a> {
    /// Shown at the axis' end (`time`, `offered rate (requests/s)`).
    pub name: &'a str,
    /// Axis labels.
    pub tick: &'a dyn Fn(f64) -> String,
    /// A point's x in its tooltip.
    pub at: &'a dyn Fn(f64) -> String,
    /// A dashed vertical line at this x, labelled (the knee of a capacity sweep).
    pub mark: Option<(f64, &'a str)>,
    /// Windows shaded on the axis (faults on a time axis).
    pub marks: &'a [Mark],
    /// Draw every point (otherwise they show on hover only).
    pub points: bool,
}

/// A line chart of y against x: `tick` formats the value axis, `val` tooltip values;
/// `binary` makes the value axis step in powers of 1024 (bytes).
pub fn xy_chart(
    title: &str,
    lines: &[Line],
    binary: bool,
    (tick, val): (&dyn Fn(f64) -> String, &dyn Fn(f64) -> String),
    x_axis: &XAxis,
) -> String {
    let mut o = String::new();
    frame(&mut o, title);
    let xmax = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let ymax = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    if lines.iter().all(|l| l.points.is_empty()) {
        let _ = write!(
            o,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text></svg></figure>",
            W / 2.0,
            H / 2.0
        );
        return o;
    }
    let (yt, ytop) = ticks(ymax, 4.0, binary);
    let (xt, xtop) = ticks(xmax.max(1.0), 6.0, false);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| LEFT + x / xtop * pw;
    let sy = |y: f64| TOP + ph - y / ytop * ph;
    y_axis(&mut o, &yt, ytop, tick);
    for x in &xt {
        let _ = write!(
            o,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            sx(*x),
            H - BOTTOM + 16.0,
            esc(&(x_axis.tick)(*x))
        );
    }
    let _ = write!(
        o,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        W - RIGHT,
        H - 3.0,
        esc(x_axis.name)
    );
    for m in x_axis.marks {
        let x0 = sx(m.from_s.clamp(0.0, xtop));
        let _ = match m.to_s {
            Some(to) => write!(
                o,
                "<rect class=\"mark\" x=\"{x0:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{ph:.1}\" fill=\"#d55e00\" fill-opacity=\"0.13\"><title>{}</title></rect>",
                (sx(to.clamp(0.0, xtop)) - x0).max(1.5),
                esc(&m.label)
            ),
            None => write!(
                o,
                "<line class=\"mark\" x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#d55e00\" stroke-dasharray=\"4 3\"><title>{}</title></line>",
                TOP + ph,
                esc(&m.label)
            ),
        };
    }
    if let Some((x, label)) = x_axis.mark {
        let _ = write!(
            o,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{TOP}\" y2=\"{1}\" stroke=\"#cf222e\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><text class=\"tick\" x=\"{2:.1}\" y=\"{3}\" fill=\"#cf222e\">{4}</text>",
            sx(x),
            H - BOTTOM,
            sx(x) + 4.0,
            TOP + 10.0,
            esc(label)
        );
    }
    let (class, r) = if x_axis.points {
        ("", 3.0)
    } else {
        (" class=\"pt\"", 2.5)
    };
    for l in lines {
        let pts: Vec<String> = l
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        let _ = write!(
            o,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\"{} points=\"{}\"/>",
            l.color,
            l.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default(),
            pts.join(" ")
        );
        if l.points.len() <= 400 {
            for (x, y) in &l.points {
                let _ = write!(
                    o,
                    "<circle{class} cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{}\"><title>{} at {}: {}</title></circle>",
                    sx(*x),
                    sy(*y),
                    l.color,
                    esc(&l.label),
                    esc(&(x_axis.at)(*x)),
                    esc(&val(*y))
                );
            }
        }
    }
    o.push_str("</svg>");
    let items: Vec<_> = lines
        .iter()
        .map(|l| (l.label.as_str(), l.color, l.dash))
        .collect();
    legend(&mut o, &items);
    o.push_str("</figure>");
    o
}

/// One group (file) of a bar chart: a value per bucket.
pub struct Bars {
    pub label: String,
    pub color: &'static str,
    pub values: Vec<f64>,
}

/// Grouped bars over labelled buckets (the latency histogram).
pub fn bar_chart(
    title: &str,
    buckets: &[String],
    groups: &[Bars],
    tick: &dyn Fn(f64) -> String,
) -> String {
    let mut o = String::new();
    frame(&mut o, title);
    let ymax = groups
        .iter()
        .flat_map(|g| g.values.iter().copied())
        .fold(0.0f64, f64::max);
    if buckets.is_empty() || groups.is_empty() {
        let _ = write!(
            o,
            "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text></svg></figure>",
            W / 2.0,
            H / 2.0
        );
        return o;
    }
    let (yt, ytop) = ticks(ymax, 4.0, false);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    y_axis(&mut o, &yt, ytop, tick);
    let slot = pw / buckets.len() as f64;
    let bw = (slot * 0.8) / groups.len() as f64;
    let every = buckets.len().div_ceil(6).max(1);
    for (i, b) in buckets.iter().enumerate() {
        let x0 = LEFT + i as f64 * slot + slot * 0.1;
        for (g, grp) in groups.iter().enumerate() {
            let v = grp.values.get(i).copied().unwrap_or(0.0);
            let h = v / ytop * ph;
            let _ = write!(
                o,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: ≤ {}: {}</title></rect>",
                x0 + g as f64 * bw,
                TOP + ph - h,
                (bw - 0.5).max(0.5),
                h,
                grp.color,
                esc(&grp.label),
                esc(b),
                esc(&tick(v))
            );
        }
        if i % every == every - 1 || i + 1 == buckets.len() {
            let last = i + 1 == buckets.len();
            let _ = write!(
                o,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{}\" text-anchor=\"{}\">≤{}</text>",
                if last { W - RIGHT } else { x0 + slot * 0.4 },
                H - BOTTOM + 16.0,
                if last { "end" } else { "middle" },
                esc(b)
            );
        }
    }
    o.push_str("</svg>");
    let items: Vec<_> = groups
        .iter()
        .map(|g| (g.label.as_str(), g.color, None))
        .collect();
    legend(&mut o, &items);
    o.push_str("</figure>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 4.0), 2.5);
        assert_eq!(nice_step(0.9, 4.0), 0.25);
        assert_eq!(nice_step(38000.0, 4.0), 10000.0);
        let (t, top) = ticks(37.0, 4.0, false);
        assert_eq!(top, 40.0);
        assert_eq!(t.len(), 5);
        let (t, _) = ticks(5.5 * 1048576.0, 4.0, true);
        assert_eq!(t[1], 2.0 * 1048576.0, "MiB steps");
    }

    #[test]
    fn charts_escape_labels_and_handle_no_data() {
        let l = Line {
            label: "<script>x</script>".into(),
            color: PALETTE[0],
            dash: None,
            points: vec![(0.5, 1.0), (1.5, 2.0)],
        };
        let s = line_chart("t<", &[l], false, &short, &short);
        assert!(s.contains("<svg") && s.contains("<polyline"));
        assert!(s.contains("&lt;script&gt;") && !s.contains("<script>"));
        assert!(s.contains("t&lt;"));
        assert!(line_chart("e", &[], false, &short, &short).contains("no data"));
        let b = bar_chart(
            "h",
            &["1ms".into(), "2ms".into()],
            &[Bars {
                label: "a".into(),
                color: PALETTE[1],
                values: vec![3.0, 4.0],
            }],
            &short,
        );
        assert_eq!(b.matches("<rect").count(), 2);
    }
}
