//! What a wrong output shows by itself, where no tool found anything: which elements are
//! wrong, whether they still hold the poison (no thread wrote them), in which blocks, and at
//! which offsets within a block ("every wrong element is the last of its 256-thread block").
//! Pure: expected bytes, actual bytes, the element type, the check's comparison and the
//! launch's shape in; an [`OutputPattern`] out, and [`OutputPattern::describe`] puts it in
//! words.
//!
//! Which thread wrote an element is an assumption, stated in the words: for a flat output,
//! element `i` belongs to thread `i % threads` of the grid in launch order (one element per
//! thread, or a grid-stride loop); for an output with rows, the grid's blocks tile it evenly,
//! block `(bx, by)` owning the `bx`-th tile across and the `by`-th down.

use crate::references::{Comparison, POISON_BYTE, element_agrees, first_mismatch};
use kernelbook_core::spec::ElemType;
use serde::{Deserialize, Serialize};

/// The launch that wrote the output, and the output's row length where it has rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Elements per row, for an output laid out as a matrix (`None`: flat).
    pub row_len: Option<usize>,
}

impl OutputShape {
    /// The shape of a launch over an output of `len` elements, guessing its rows: a 2-D grid
    /// whose threads number exactly the elements (one per thread) has rows as long as the
    /// grid is wide in threads; a 2-D grid over a square output has square rows.
    pub fn infer(len: usize, grid: [u32; 3], block: [u32; 3]) -> OutputShape {
        let wide = grid[0] as usize * block[0] as usize;
        let tall = grid[1] as usize * block[1] as usize;
        let row_len = if grid[1] <= 1 && block[1] <= 1 {
            None
        } else if wide > 0 && wide * tall == len {
            Some(wide)
        } else {
            let side = len.isqrt();
            (side * side == len && grid[0] == grid[1]).then_some(side)
        };
        OutputShape {
            grid,
            block,
            row_len,
        }
    }
}

/// What the wrong elements of an output have in common.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputPattern {
    /// Elements compared (every `sample_stride`-th one of a sampled check).
    pub compared: usize,
    pub wrong: usize,
    /// Wrong elements whose bytes are all still the poison: no thread wrote them.
    pub never_written: usize,
    /// The first and last wrong element's index.
    pub first: Option<usize>,
    pub last: Option<usize>,
    /// Maximal runs of wrong elements next to each other (among those compared).
    pub runs: usize,
    /// Whether every element after the first wrong one is wrong too.
    pub wrong_to_the_end: bool,
    /// Where the wrong elements sit in the blocks' tiles, where the shape gives tiles.
    pub tiles: Option<TilePattern>,
}

/// The wrong elements against the tiles the blocks write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TilePattern {
    /// A tile's width and height in elements (height 1 for a flat output).
    pub size: [usize; 2],
    /// Whether a tile is exactly one block's threads, so an offset names a thread.
    pub per_thread: bool,
    /// Blocks in the grid, and blocks with at least one wrong element.
    pub blocks: usize,
    pub blocks_hit: usize,
    /// The first few blocks hit (flat index, x fastest), and whether the last block is one.
    pub some_hit: Vec<usize>,
    pub last_block_hit: bool,
    /// Offsets (column, row) within the tile that hold a wrong element: up to
    /// [`OFFSETS_KEPT`] of them, `more_offsets` telling whether there were more.
    pub offsets: Vec<[usize; 2]>,
    pub more_offsets: bool,
    /// The column, and the row, of the tile that every wrong element shares, if they do.
    pub column: Option<usize>,
    pub row: Option<usize>,
    /// Whether every wrong element lies on the tile's edge (first or last column or row).
    pub all_on_edge: bool,
}

/// How many distinct offsets a [`TilePattern`] lists.
pub const OFFSETS_KEPT: usize = 8;
/// How many blocks a [`TilePattern`] lists.
const BLOCKS_KEPT: usize = 4;
/// Elements compared per call of the check's comparison while looking for wrong ones.
const CHUNK: usize = 4096;

/// The pattern of the elements of `actual` that differ from `expected` by `comparison` (the
/// lab's check), launched as `shape`.
pub fn analyse(
    expected: &[u8],
    actual: &[u8],
    elem: ElemType,
    comparison: &Comparison,
    shape: &OutputShape,
) -> OutputPattern {
    let size = elem.size();
    let stride = comparison.sample_stride.max(1);
    let len = expected.len().min(actual.len()) / size;
    let geometry = Geometry::new(len, shape);
    let mut tally = Tally::new(geometry.as_ref());
    let single = Comparison {
        sample_stride: 1,
        ..*comparison
    };
    let chunk = CHUNK * stride;
    for start in (0..len).step_by(chunk) {
        let end = len.min(start + chunk);
        let bytes = start * size..end * size;
        let block = (&expected[bytes.clone()], &actual[bytes]);
        if first_mismatch(block.0, block.1, elem, comparison).is_none() {
            tally.right(end.div_ceil(stride) - start.div_ceil(stride));
            continue;
        }
        for index in (start..end).step_by(stride) {
            let element = index * size..(index + 1) * size;
            let got = &actual[element.clone()];
            if !element_agrees(&expected[element], got, elem, &single) {
                tally.wrong(index, got.iter().all(|&b| b == POISON_BYTE));
            } else {
                tally.right(1);
            }
        }
    }
    tally.finish(len.div_ceil(stride))
}

/// How the elements map onto the blocks' tiles.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    tile: [usize; 2],
    /// Tiles across (x) and blocks in all.
    across: usize,
    blocks: usize,
    row_len: Option<usize>,
    per_thread: bool,
}

impl Geometry {
    fn new(len: usize, shape: &OutputShape) -> Option<Geometry> {
        let [gx, gy, gz] = shape.grid.map(|d| d as usize);
        let [bx, by, bz] = shape.block.map(|d| d as usize);
        let blocks = gx * gy * gz;
        if blocks == 0 || bx * by * bz == 0 || len == 0 {
            return None;
        }
        match shape.row_len {
            None => Some(Geometry {
                tile: [bx * by * bz, 1],
                across: blocks,
                blocks,
                row_len: None,
                per_thread: true,
            }),
            Some(row_len) => {
                let rows = len / row_len.max(1);
                let fits = row_len > 0 && row_len.is_multiple_of(gx) && rows.is_multiple_of(gy);
                fits.then(|| {
                    let tile = [row_len / gx, rows / gy];
                    Geometry {
                        tile,
                        across: gx,
                        blocks: gx * gy,
                        row_len: Some(row_len),
                        per_thread: tile == [bx, by] && bz == 1,
                    }
                })
            }
        }
    }

    /// Element `index`'s block (flat, x fastest) and its offset (column, row) in the tile.
    fn place(&self, index: usize) -> (usize, [usize; 2]) {
        match self.row_len {
            None => {
                let threads = self.tile[0] * self.blocks;
                let thread = index % threads;
                (thread / self.tile[0], [thread % self.tile[0], 0])
            }
            Some(row_len) => {
                let (row, column) = (index / row_len, index % row_len);
                let [w, h] = self.tile;
                let block = (column / w + (row / h) * self.across).min(self.blocks - 1);
                (block, [column % w, row % h])
            }
        }
    }

    fn on_edge(&self, [x, y]: [usize; 2]) -> bool {
        let [w, h] = self.tile;
        x == 0 || x + 1 == w || (h > 1 && (y == 0 || y + 1 == h))
    }
}

/// The running count of wrong elements, in index order.
struct Tally {
    geometry: Option<Geometry>,
    wrong: usize,
    never_written: usize,
    first: Option<usize>,
    last: Option<usize>,
    runs: usize,
    previous_wrong: bool,
    right_after_first: bool,
    hit: Vec<bool>,
    offsets: Vec<[usize; 2]>,
    more_offsets: bool,
    column: Option<usize>,
    row: Option<usize>,
    all_on_edge: bool,
}

impl Tally {
    fn new(geometry: Option<&Geometry>) -> Tally {
        Tally {
            geometry: geometry.copied(),
            wrong: 0,
            never_written: 0,
            first: None,
            last: None,
            runs: 0,
            previous_wrong: false,
            right_after_first: false,
            hit: vec![false; geometry.map_or(0, |g| g.blocks)],
            offsets: Vec::new(),
            more_offsets: false,
            column: None,
            row: None,
            all_on_edge: true,
        }
    }

    /// The next `count` compared elements are right.
    fn right(&mut self, count: usize) {
        if count > 0 {
            self.previous_wrong = false;
            self.right_after_first |= self.first.is_some();
        }
    }

    fn wrong(&mut self, index: usize, poison: bool) {
        self.wrong += 1;
        self.never_written += usize::from(poison);
        self.first.get_or_insert(index);
        self.last = Some(index);
        self.runs += usize::from(!self.previous_wrong);
        self.previous_wrong = true;
        let Some(geometry) = self.geometry else {
            return;
        };
        let (block, offset) = geometry.place(index);
        self.hit[block] = true;
        self.all_on_edge &= geometry.on_edge(offset);
        if self.offsets.is_empty() {
            (self.column, self.row) = (Some(offset[0]), Some(offset[1]));
        }
        self.column = self.column.filter(|&x| x == offset[0]);
        self.row = self.row.filter(|&y| y == offset[1]);
        if !self.offsets.contains(&offset) {
            if self.offsets.len() < OFFSETS_KEPT {
                self.offsets.push(offset);
            } else {
                self.more_offsets = true;
            }
        }
    }

    fn finish(mut self, compared: usize) -> OutputPattern {
        self.offsets.sort_unstable_by_key(|[x, y]| (*y, *x));
        let tiles = self
            .geometry
            .filter(|_| self.wrong > 0)
            .map(|g| TilePattern {
                size: g.tile,
                per_thread: g.per_thread,
                blocks: g.blocks,
                blocks_hit: self.hit.iter().filter(|&&h| h).count(),
                some_hit: (0..g.blocks)
                    .filter(|&b| self.hit[b])
                    .take(BLOCKS_KEPT)
                    .collect(),
                last_block_hit: self.hit.last().copied().unwrap_or(false),
                offsets: self.offsets,
                more_offsets: self.more_offsets,
                column: self.column,
                row: self.row,
                all_on_edge: self.all_on_edge,
            });
        OutputPattern {
            compared,
            wrong: self.wrong,
            never_written: self.never_written,
            first: self.first,
            last: self.last,
            runs: self.runs,
            wrong_to_the_end: self.first.is_some() && !self.right_after_first,
            tiles,
        }
    }
}

impl OutputPattern {
    /// The pattern in one or two sentences, e.g. "16 of 1024 elements are wrong; every one
    /// is the first or the last of its 256-thread block, in all 4 blocks; they still hold the
    /// poison: no thread wrote them."
    pub fn describe(&self) -> String {
        if self.wrong == 0 {
            return format!("all {} elements compared are right", self.compared);
        }
        let mut parts = vec![self.how_many()];
        if let Some(place) = self.place() {
            parts.push(place);
        }
        parts.push(self.written());
        let mut text = parts.join("; ");
        text.push('.');
        text
    }

    fn how_many(&self) -> String {
        let (first, last) = (self.first.unwrap_or(0), self.last.unwrap_or(0));
        if self.wrong == self.compared {
            return format!("all {} elements are wrong", self.compared);
        }
        let mut text = format!("{} of {} elements are wrong", self.wrong, self.compared);
        if self.wrong == 1 {
            text = format!("1 of {} elements is wrong, element {first}", self.compared);
        } else if self.runs == 1 && self.wrong_to_the_end {
            text.push_str(&format!(", every one from element {first} to the end"));
        } else if self.runs == 1 {
            text.push_str(&format!(", elements {first} to {last}"));
        }
        text
    }

    /// Where the wrong elements sit in their blocks, where that says something.
    fn place(&self) -> Option<String> {
        let tiles = self.tiles.as_ref()?;
        if self.wrong == self.compared {
            return None;
        }
        let threads = tiles.size[0] * tiles.blocks;
        if tiles.size[1] == 1 && self.wrong_to_the_end && self.first == Some(threads) {
            return Some(format!(
                "the grid's {threads} threads reach no further than element {}",
                threads - 1
            ));
        }
        let within = tiles.within();
        let which = tiles.which_blocks(self.wrong);
        match (within, which) {
            (Some(within), Some(which)) => Some(format!("{within}, {which}")),
            (Some(one), None) | (None, Some(one)) => Some(one),
            (None, None) => None,
        }
    }

    fn written(&self) -> String {
        match self.never_written {
            0 => "each was written, with a wrong value".to_string(),
            n if n == self.wrong && n == 1 => {
                "it still holds the poison: no thread wrote it".to_string()
            }
            n if n == self.wrong => "they still hold the poison: no thread wrote them".to_string(),
            n => format!(
                "{n} of them still hold the poison (no thread wrote them), the others were written with wrong values"
            ),
        }
    }
}

impl TilePattern {
    /// "256-thread block" or "32×32 tile".
    fn unit(&self) -> String {
        let [w, h] = self.size;
        match (self.per_thread, h) {
            (true, 1) => format!("{w}-thread block"),
            (true, _) => format!("{w}×{h}-thread block"),
            (false, 1) => format!("{w}-element tile"),
            (false, _) => format!("{w}×{h} tile"),
        }
    }

    /// What the wrong elements' offsets within their tiles have in common.
    fn within(&self) -> Option<String> {
        let [w, h] = self.size;
        let unit = self.unit();
        let edge = || {
            self.all_on_edge
                .then(|| format!("every one lies on an edge of its {unit}"))
        };
        if h > 1 {
            return match (self.column, self.row) {
                (Some(x), Some(y)) => {
                    Some(format!("every one is at column {x}, row {y} of its {unit}"))
                }
                (Some(x), None) => Some(format!("every one is in column {x} of its {unit}")),
                (None, Some(y)) => Some(format!("every one is in row {y} of its {unit}")),
                (None, None) => edge(),
            };
        }
        let name = |x: usize| match x {
            0 => "the first".to_string(),
            x if x + 1 == w => "the last".to_string(),
            x => format!("element {x}"),
        };
        match (self.offsets.as_slice(), self.more_offsets) {
            ([only], false) => Some(format!("every one is {} of its {unit}", name(only[0]))),
            ([a, b], false) => Some(format!(
                "every one is {} or {} of its {unit}",
                name(a[0]),
                name(b[0])
            )),
            _ => edge(),
        }
    }

    /// Which blocks hold them.
    fn which_blocks(&self, wrong: usize) -> Option<String> {
        let word = if self.per_thread { "block" } else { "tile" };
        let list = |blocks: &[usize]| {
            blocks
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(match self.blocks_hit {
            0 => return None,
            n if n == self.blocks && self.blocks > 1 => format!("in every one of the {n} {word}s"),
            1 if self.last_block_hit && self.blocks > 1 => format!("all in the last {word}"),
            1 if wrong > 1 => format!("all in {word} {}", list(&self.some_hit)),
            1 => format!("in {word} {}", list(&self.some_hit)),
            n if n <= self.some_hit.len() => format!("in {word}s {}", list(&self.some_hit)),
            n => format!("in {n} of the {} {word}s", self.blocks),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::spec::CompareRule;

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn flat(grid: u32, block: u32) -> OutputShape {
        OutputShape {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            row_len: None,
        }
    }

    /// `len` floats `i as f32`, and a copy with `wrong` replaced by `value`.
    fn outputs(len: usize, wrong: &[usize], value: Option<f32>) -> (Vec<u8>, Vec<u8>) {
        let expected: Vec<f32> = (0..len).map(|i| i as f32).collect();
        let mut actual = floats(&expected);
        for &i in wrong {
            let bytes = value.map_or([POISON_BYTE; 4], f32::to_le_bytes);
            actual[i * 4..i * 4 + 4].copy_from_slice(&bytes);
        }
        (floats(&expected), actual)
    }

    fn analyse_f32(expected: &[u8], actual: &[u8], shape: &OutputShape) -> OutputPattern {
        analyse(expected, actual, ElemType::F32, &Comparison::EXACT, shape)
    }

    #[test]
    fn the_last_of_every_block_never_written() {
        let wrong: Vec<usize> = (0..4).map(|b| b * 256 + 255).collect();
        let (expected, actual) = outputs(1024, &wrong, None);
        let pattern = analyse_f32(&expected, &actual, &flat(4, 256));
        assert_eq!(
            (pattern.wrong, pattern.never_written, pattern.runs),
            (4, 4, 4)
        );
        assert_eq!(
            pattern.describe(),
            "4 of 1024 elements are wrong; every one is the last of its 256-thread block, \
             in every one of the 4 blocks; they still hold the poison: no thread wrote them."
        );
    }

    #[test]
    fn a_halo_never_loaded_shows_at_both_ends_of_each_block() {
        let wrong: Vec<usize> = (0..4).flat_map(|b| [b * 256, b * 256 + 255]).collect();
        let (expected, actual) = outputs(1024, &wrong, Some(-7.0));
        let pattern = analyse_f32(&expected, &actual, &flat(4, 256));
        assert_eq!(
            pattern.describe(),
            "8 of 1024 elements are wrong; every one is the first or the last of its \
             256-thread block, in every one of the 4 blocks; each was written, with a wrong value."
        );
    }

    #[test]
    fn a_tail_past_a_too_small_grid() {
        // 3 blocks of 256 over 1000 elements: the last 232 are never written.
        let wrong: Vec<usize> = (768..1000).collect();
        let (expected, actual) = outputs(1000, &wrong, None);
        let pattern = analyse_f32(&expected, &actual, &flat(3, 256));
        assert!(pattern.wrong_to_the_end);
        assert_eq!(
            pattern.describe(),
            "232 of 1000 elements are wrong, every one from element 768 to the end; the grid's \
             768 threads reach no further than element 767; they still hold the poison: no \
             thread wrote them."
        );
    }

    #[test]
    fn one_wrong_element_in_the_last_block() {
        let (expected, actual) = outputs(1024, &[1023], Some(5.0));
        let pattern = analyse_f32(&expected, &actual, &flat(4, 256));
        assert_eq!(
            pattern.describe(),
            "1 of 1024 elements is wrong, element 1023; every one is the last of its 256-thread \
             block, all in the last block; each was written, with a wrong value."
        );
    }

    #[test]
    fn tile_edges_of_a_matrix() {
        // A 64×64 output in 32×32 tiles of 32×8-thread blocks: every edge element wrong.
        let n = 64;
        let wrong: Vec<usize> = (0..n * n)
            .filter(|i| {
                let (r, c) = (i / n % 32, i % n % 32);
                r == 0 || r == 31 || c == 0 || c == 31
            })
            .collect();
        let (expected, actual) = outputs(n * n, &wrong, Some(0.5));
        let shape = OutputShape {
            grid: [2, 2, 1],
            block: [32, 8, 1],
            row_len: Some(n),
        };
        let pattern = analyse_f32(&expected, &actual, &shape);
        let tiles = pattern.tiles.clone().expect("tiles");
        assert_eq!(
            (tiles.size, tiles.per_thread, tiles.blocks_hit),
            ([32, 32], false, 4)
        );
        assert!(tiles.all_on_edge && tiles.more_offsets);
        assert!(
            pattern.describe().contains(
                "every one lies on an edge of its 32×32 tile, in every one of the 4 tiles"
            ),
            "{}",
            pattern.describe()
        );
    }

    #[test]
    fn a_column_of_each_tile() {
        let n = 64;
        let wrong: Vec<usize> = (0..n * n).filter(|i| i % n % 32 == 31).collect();
        let (expected, actual) = outputs(n * n, &wrong, Some(0.5));
        let shape = OutputShape::infer(n * n, [2, 2, 1], [32, 32, 1]);
        assert_eq!(shape.row_len, Some(64));
        let pattern = analyse_f32(&expected, &actual, &shape);
        assert!(pattern.tiles.as_ref().is_some_and(|t| t.per_thread));
        assert!(
            pattern
                .describe()
                .contains("every one is in column 31 of its 32×32-thread block"),
            "{}",
            pattern.describe()
        );
    }

    #[test]
    fn a_tolerance_and_a_sample_are_the_checks_own() {
        let (expected, mut actual) = outputs(1024, &[], None);
        // Within 1e-3 of element 10's value, and far from element 11's, which a stride of 2
        // does not compare.
        actual[40..44].copy_from_slice(&10.0005f32.to_le_bytes());
        actual[44..48].copy_from_slice(&99.0f32.to_le_bytes());
        let close = Comparison {
            rule: CompareRule::Close {
                rtol: 1e-3,
                atol: 0.0,
            },
            sample_stride: 2,
        };
        let pattern = analyse(&expected, &actual, ElemType::F32, &close, &flat(4, 256));
        assert_eq!((pattern.compared, pattern.wrong), (512, 0));
        let exact = analyse(
            &expected,
            &actual,
            ElemType::F32,
            &Comparison::EXACT,
            &flat(4, 256),
        );
        assert_eq!(exact.wrong, 2);
        assert_eq!(
            exact.describe().split(';').next(),
            Some("2 of 1024 elements are wrong, elements 10 to 11")
        );
    }

    #[test]
    fn all_wrong_says_so_once() {
        let all: Vec<usize> = (0..512).collect();
        let (expected, actual) = outputs(512, &all, None);
        let pattern = analyse_f32(&expected, &actual, &flat(2, 256));
        assert_eq!(
            pattern.describe(),
            "all 512 elements are wrong; they still hold the poison: no thread wrote them."
        );
        let (expected, _) = outputs(512, &[], None);
        assert_eq!(
            analyse_f32(&expected, &expected, &flat(2, 256)).describe(),
            "all 512 elements compared are right"
        );
    }

    #[test]
    fn a_shape_without_tiles_still_counts() {
        let (expected, actual) = outputs(100, &[3, 50], None);
        let shape = OutputShape {
            grid: [3, 3, 1],
            block: [8, 8, 1],
            row_len: Some(10),
        };
        let pattern = analyse_f32(&expected, &actual, &shape);
        assert_eq!(pattern.tiles, None);
        assert_eq!(pattern.runs, 2);
    }
}
