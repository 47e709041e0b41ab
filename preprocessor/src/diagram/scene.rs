//! The drawing of one panel: rectangles, labels and connectors placed in SVG coordinates. The
//! layout is computed here from the model; `templates/diagram-svg.hbs` only writes the
//! elements out (escaped). Colours are CSS classes (`book/theme/kernelbook.css`) with
//! `currentColor` fallbacks in the template, so both the light and the dark themes read it.

use super::model::Footprint;
use super::spec::MemoryOp;
use kernelbook_core::access::{
    BANK_WORD_BYTES, BankFootprint, BankWord, GlobalFootprint, LINE_BYTES, SECTOR_BYTES, SectorUse,
    WarpAccess, lane_list,
};
use serde::Serialize;

const WIDTH: f64 = 736.0;
const PAD: f64 = 8.0;
/// Room for the two lines of text at the top.
const HEADER: f64 = 48.0;
const FONT_WIDTH: f64 = 6.2;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rect {
    pub class: &'static str,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    /// The tooltip, e.g. "lane 5: bytes 160–163".
    pub tip: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub class: &'static str,
    pub x: f64,
    pub y: f64,
    /// "start", "middle" or "end".
    pub anchor: &'static str,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    pub class: &'static str,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
}

/// Everything one SVG holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scene {
    pub id: String,
    pub width: f64,
    pub height: f64,
    /// The SVG's `<title>` and `<desc>`: what a screen reader says.
    pub title: String,
    pub desc: String,
    pub segments: Vec<Segment>,
    pub rects: Vec<Rect>,
    pub labels: Vec<Label>,
}

impl Scene {
    fn new(id: &str, title: &str, desc: &str) -> Self {
        Scene {
            id: id.to_string(),
            width: WIDTH,
            height: 0.0,
            title: title.to_string(),
            desc: desc.to_string(),
            segments: Vec::new(),
            rects: Vec::new(),
            labels: Vec::new(),
        }
    }

    fn rect(&mut self, class: &'static str, at: (f64, f64), size: (f64, f64), tip: Option<String>) {
        self.rects.push(Rect {
            class,
            x: round(at.0),
            y: round(at.1),
            width: round(size.0),
            height: round(size.1),
            tip,
        });
    }

    fn label(&mut self, class: &'static str, at: (f64, f64), anchor: &'static str, text: String) {
        self.labels.push(Label {
            class,
            x: round(at.0),
            y: round(at.1),
            anchor,
            text,
        });
    }

    /// The two header lines: what the panel is, and its numbers.
    fn header(&mut self, heading: &str, numbers: &str) {
        self.label("heading", (PAD, 18.0), "start", heading.to_string());
        self.label("numbers", (PAD, 36.0), "start", numbers.to_string());
    }

    /// A row of legend swatches at `y`: (classes of the swatch, `swatch` among them, what it
    /// means).
    fn legend(&mut self, y: f64, entries: &[(&'static str, &str)]) {
        let mut x = PAD;
        for (class, text) in entries {
            self.rect(class, (x, y), (14.0, 10.0), None);
            self.label("legend", (x + 20.0, y + 9.0), "start", text.to_string());
            x += 20.0 + text.chars().count() as f64 * FONT_WIDTH + 18.0;
        }
        self.height = round(y + 10.0 + PAD + 4.0);
    }
}

/// One decimal is enough for SVG coordinates and keeps the golden files readable.
fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The scene of a panel.
pub fn scene(
    id: &str,
    text: &PanelText,
    (access, op): (&WarpAccess, MemoryOp),
    footprint: &Footprint,
) -> Scene {
    match footprint {
        Footprint::Global(global) => global_scene(id, text, global, (access, op)),
        Footprint::Banks(banks) => bank_scene(id, text, banks),
    }
}

/// What a panel's drawing says in words.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelText {
    pub heading: String,
    /// The figures in short, under the heading: "8 sectors · 2 lines · 128 B used of 256 B
    /// fetched (50 %)".
    pub numbers: String,
    pub title: String,
    pub desc: String,
}

/// How the touched lines are laid out: one column of wide bars, or two of narrow ones.
struct LineGrid {
    rows: usize,
    px_per_byte: f64,
}

const LINE_LABEL_WIDTH: f64 = 96.0;
const LINE_ROW: f64 = 24.0;
const BAR_HEIGHT: f64 = 16.0;
const COLUMN_GAP: f64 = 16.0;
/// The narrowest chunk a lane number is written in.
const MIN_LABELLED_CHUNK: f64 = 14.0;

impl LineGrid {
    fn for_lines(lines: usize) -> Self {
        let columns = if lines <= 8 { 1 } else { 2 };
        LineGrid {
            rows: lines.div_ceil(columns),
            px_per_byte: if columns == 1 { 4.0 } else { 2.0 },
        }
    }

    /// The top-left corner of line number `i` (in address order), filled column by column.
    fn origin(&self, i: usize) -> (f64, f64) {
        let (column, row) = (i / self.rows, i % self.rows);
        let column_width = LINE_LABEL_WIDTH + LINE_BYTES as f64 * self.px_per_byte + COLUMN_GAP;
        (
            PAD + column as f64 * column_width,
            HEADER + row as f64 * LINE_ROW,
        )
    }
}

/// Sectors and lines: each touched 128-byte line a bar of four sectors, the bytes the lanes ask
/// for filled, each lane's number where it fits.
fn global_scene(
    id: &str,
    text: &PanelText,
    global: &GlobalFootprint,
    (access, op): (&WarpAccess, MemoryOp),
) -> Scene {
    let mut scene = Scene::new(id, &text.title, &text.desc);
    scene.header(&text.heading, &text.numbers);
    let lines = global.lines();
    let grid = LineGrid::for_lines(lines.len());
    let first = lines.first().copied().unwrap_or(0);
    for (i, &line) in lines.iter().enumerate() {
        let (x, y) = grid.origin(i);
        let offset = (line - first) * LINE_BYTES;
        scene.label(
            "offset",
            (x + LINE_LABEL_WIDTH - 8.0, y + 12.0),
            "end",
            format!("+{}", format_bytes(offset)),
        );
        draw_line(
            &mut scene,
            global,
            access,
            line,
            (x + LINE_LABEL_WIDTH, y),
            grid.px_per_byte,
        );
    }
    let legend_y = HEADER + grid.rows as f64 * LINE_ROW + 6.0;
    let (rest, idle) = match op {
        MemoryOp::Load => (
            "rest of a fetched 32-byte sector",
            "rest of the 128-byte line, not fetched",
        ),
        MemoryOp::Store => (
            "rest of a written 32-byte sector",
            "rest of the 128-byte line, not written",
        ),
    };
    let mut legend = vec![("swatch used", "bytes a lane asked for")];
    if global.sectors.iter().any(|s| s.used != u32::MAX) {
        legend.push(("swatch fetched", rest));
    }
    if global.sectors.len() < lines.len() * (LINE_BYTES / SECTOR_BYTES) as usize {
        legend.push(("swatch idle", idle));
    }
    scene.legend(legend_y, &legend);
    scene
}

/// One line's bar at `at`: its four sectors, the used bytes, the lanes.
fn draw_line(
    scene: &mut Scene,
    global: &GlobalFootprint,
    access: &WarpAccess,
    line: u64,
    at: (f64, f64),
    px_per_byte: f64,
) {
    let sector_width = SECTOR_BYTES as f64 * px_per_byte;
    let per_line = LINE_BYTES / SECTOR_BYTES;
    for k in 0..per_line {
        let index = line * per_line + k;
        let x = at.0 + k as f64 * sector_width;
        let Some(sector) = global.sectors.iter().find(|s| s.index == index) else {
            scene.rect("idle", (x, at.1), (sector_width, BAR_HEIGHT), None);
            continue;
        };
        let tip = format!(
            "sector {} of the line: {} of 32 bytes used, lanes {}",
            k,
            sector.used_bytes(),
            lane_list(&sector.lanes)
        );
        scene.rect("fetched", (x, at.1), (sector_width, BAR_HEIGHT), Some(tip));
        draw_used_bytes(scene, sector, access, (x, at.1), px_per_byte);
    }
}

/// The bytes of `sector` (drawn at `at`) that lanes asked for, one chunk per lane, each
/// numbered where the chunk is wide enough and no other lane shares it; otherwise the lanes are
/// written across the sector, where they fit.
fn draw_used_bytes(
    scene: &mut Scene,
    sector: &SectorUse,
    access: &WarpAccess,
    at: (f64, f64),
    px_per_byte: f64,
) {
    let chunk_width = access.elem_bytes() as f64 * px_per_byte;
    let mut chunks: Vec<(u64, Vec<usize>)> = Vec::new();
    for &lane in &sector.lanes {
        let offset = access.addresses()[lane] % SECTOR_BYTES;
        match chunks.iter_mut().find(|(o, _)| *o == offset) {
            Some((_, lanes)) => lanes.push(lane),
            None => chunks.push((offset, vec![lane])),
        }
    }
    let numbered = chunk_width >= MIN_LABELLED_CHUNK && chunks.iter().all(|(_, l)| l.len() == 1);
    for (offset, lanes) in &chunks {
        let cx = at.0 + *offset as f64 * px_per_byte;
        let first = sector.index * SECTOR_BYTES + offset;
        let tip = format!(
            "{} {}: bytes {first}–{}",
            if lanes.len() == 1 { "lane" } else { "lanes" },
            lane_list(lanes),
            first + access.elem_bytes() - 1
        );
        scene.rect(
            "used",
            (cx + 0.5, at.1 + 0.5),
            (chunk_width - 1.0, BAR_HEIGHT - 1.0),
            Some(tip),
        );
        if numbered {
            scene.label(
                "lane",
                (cx + chunk_width / 2.0, at.1 + 12.0),
                "middle",
                lanes[0].to_string(),
            );
        }
    }
    let sector_width = SECTOR_BYTES as f64 * px_per_byte;
    let lanes = lane_list(&sector.lanes);
    if !numbered && lanes.chars().count() as f64 * FONT_WIDTH <= sector_width - 4.0 {
        scene.label(
            "sector-lanes",
            (at.0 + sector_width / 2.0, at.1 + 12.0),
            "middle",
            lanes,
        );
    }
}

const BANK_LABEL_WIDTH: f64 = 56.0;
const BANK_COLUMN: f64 = 20.0;
const LANE_ROW_Y: f64 = HEADER + 4.0;
const CELL_HEIGHT: f64 = 14.0;
const BANK_ROW_Y: f64 = LANE_ROW_Y + CELL_HEIGHT + 56.0;
const PASS_ROW: f64 = 15.0;

/// Banks: the 32 lanes on top, a connector from each to its bank, and under each bank the
/// distinct words it must serve, one pass (wavefront) per row.
fn bank_scene(id: &str, text: &PanelText, banks: &BankFootprint) -> Scene {
    let mut scene = Scene::new(id, &text.title, &text.desc);
    scene.header(&text.heading, &text.numbers);
    let column_x = |i: usize| PAD + BANK_LABEL_WIDTH + i as f64 * BANK_COLUMN;
    scene.label(
        "row-label",
        (PAD, LANE_ROW_Y + 11.0),
        "start",
        "lane".into(),
    );
    scene.label(
        "row-label",
        (PAD, BANK_ROW_Y + 11.0),
        "start",
        "bank".into(),
    );
    for (lane, &bank) in banks.lane_banks.iter().enumerate() {
        let conflicted = banks.banks[bank].len() > 1;
        scene.segments.push(Segment {
            class: if conflicted { "link conflict" } else { "link" },
            x1: round(column_x(lane) + BANK_COLUMN / 2.0),
            y1: LANE_ROW_Y + CELL_HEIGHT,
            x2: round(column_x(bank) + BANK_COLUMN / 2.0),
            y2: BANK_ROW_Y,
        });
        scene.rect(
            "lane-cell",
            (column_x(lane) + 1.0, LANE_ROW_Y),
            (BANK_COLUMN - 2.0, CELL_HEIGHT),
            None,
        );
        scene.label(
            "lane",
            (column_x(lane) + BANK_COLUMN / 2.0, LANE_ROW_Y + 11.0),
            "middle",
            lane.to_string(),
        );
    }
    for (bank, words) in banks.banks.iter().enumerate() {
        let class = match words.len() {
            0 => "bank idle",
            1 => "bank",
            _ => "bank conflict",
        };
        let x = column_x(bank);
        scene.rect(
            class,
            (x + 1.0, BANK_ROW_Y),
            (BANK_COLUMN - 2.0, CELL_HEIGHT),
            None,
        );
        scene.label(
            "bank-number",
            (x + BANK_COLUMN / 2.0, BANK_ROW_Y + 11.0),
            "middle",
            bank.to_string(),
        );
        draw_passes(&mut scene, bank, words, x);
    }
    let passes = banks.wavefronts();
    for pass in 0..passes {
        let y = BANK_ROW_Y + CELL_HEIGHT + 4.0 + pass as f64 * PASS_ROW;
        scene.label(
            "row-label",
            (PAD, y + 11.0),
            "start",
            format!("pass {}", pass + 1),
        );
    }
    let legend_y = BANK_ROW_Y + CELL_HEIGHT + 4.0 + passes as f64 * PASS_ROW + 8.0;
    let mut legend = Vec::new();
    if banks.banks.iter().flatten().any(|w| !w.is_broadcast()) {
        legend.push(("swatch word", "a word one lane asked for"));
    }
    if banks.broadcasts().next().is_some() {
        legend.push((
            "swatch word broadcast",
            "a word ×n lanes share, served once",
        ));
    }
    if passes > 1 {
        legend.push(("swatch word conflict", "a word that waits for a later pass"));
    }
    scene.legend(legend_y, &legend);
    scene
}

/// The words bank `bank` serves, one per pass, under its column at `x`.
fn draw_passes(scene: &mut Scene, bank: usize, words: &[BankWord], x: f64) {
    for (pass, word) in words.iter().enumerate() {
        let y = BANK_ROW_Y + CELL_HEIGHT + 4.0 + pass as f64 * PASS_ROW;
        let class = match (word.is_broadcast(), pass) {
            (true, _) => "word broadcast",
            (false, 0) => "word",
            (false, _) => "word conflict",
        };
        let tip = format!(
            "bank {bank}, pass {}: word {} (byte {}), lanes {}",
            pass + 1,
            word.word,
            word.word * BANK_WORD_BYTES,
            lane_list(&word.lanes)
        );
        scene.rect(
            class,
            (x + 1.0, y),
            (BANK_COLUMN - 2.0, PASS_ROW - 2.0),
            Some(tip),
        );
        let text = match word.lanes.as_slice() {
            [lane] => lane.to_string(),
            lanes => format!("×{}", lanes.len()),
        };
        scene.label("lane", (x + BANK_COLUMN / 2.0, y + 10.0), "middle", text);
    }
}

/// A byte offset between lines, exactly: "384 B", "1152 B", "4 KiB", "32 KiB + 128 B",
/// "3 MiB".
pub fn format_bytes(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    let (unit, size) = if bytes >= MIB {
        ("MiB", MIB)
    } else {
        ("KiB", KIB)
    };
    match (bytes / size, bytes % size) {
        (0, _) => format!("{bytes} B"),
        (whole, 0) => format!("{whole} {unit}"),
        // Under 4 KiB a plain count of bytes reads best.
        _ if bytes < 4 * KIB => format!("{bytes} B"),
        (whole, rest) => format!("{whole} {unit} + {}", format_bytes(rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_read_in_their_unit() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(384), "384 B");
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(1152), "1152 B");
        assert_eq!(format_bytes(32 * 1024 * 31), "992 KiB");
        assert_eq!(format_bytes(3 * 1024 * 1024), "3 MiB");
        assert_eq!(format_bytes(32 * 1024 + 128), "32 KiB + 128 B");
        assert_eq!(format_bytes((1 << 20) + 4096 + 64), "1 MiB + 4 KiB + 64 B");
    }

    #[test]
    fn many_lines_go_in_two_columns_of_narrower_bars() {
        let one = LineGrid::for_lines(8);
        assert_eq!((one.rows, one.px_per_byte), (8, 4.0));
        let two = LineGrid::for_lines(32);
        assert_eq!((two.rows, two.px_per_byte), (16, 2.0));
        assert_eq!(
            two.origin(16).1,
            HEADER,
            "the second column starts at the top"
        );
        assert!(
            two.origin(31).0 + LINE_LABEL_WIDTH + 256.0 <= WIDTH,
            "fits the width"
        );
    }
}
