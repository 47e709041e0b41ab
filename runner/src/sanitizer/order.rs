//! Which tools to run, in which order, for a given failure: the one the symptom points at
//! first, the rest after it, until one finds something.

use super::finding::Tool;
use super::output::OutputPattern;

/// How the variant went wrong.
#[derive(Debug, Clone, Copy)]
pub enum Symptom<'a> {
    /// The kernel faulted (an illegal or misaligned address, an illegal instruction).
    Fault,
    /// It did not finish within its time limit.
    Hang,
    /// It finished and its output failed the check, wrong as `pattern` shows.
    Wrong(&'a OutputPattern),
}

/// The tools to try for `symptom`, most likely first. racecheck only checks shared memory, so
/// it is left out for a kernel that uses none.
///
/// - a fault: memcheck names the access;
/// - a hang: a barrier some threads never reach (synccheck), else a spin on shared memory;
/// - wrong elements at the edges of the blocks' tiles: a halo or tile edge never loaded, a
///   read of shared memory nothing wrote (initcheck, which then checks shared memory too);
/// - wrong elements still holding the poison: the writes went elsewhere (memcheck);
/// - other wrong values: a race (racecheck), then a read of unwritten memory.
pub fn tools_for(symptom: Symptom<'_>, shared_memory: bool) -> Vec<Tool> {
    use Tool::{Initcheck, Memcheck, Racecheck, Synccheck};
    let order = match symptom {
        Symptom::Fault => [Memcheck, Synccheck, Initcheck, Racecheck],
        Symptom::Hang => [Synccheck, Racecheck, Memcheck, Initcheck],
        Symptom::Wrong(pattern) if shared_memory && at_tile_edges(pattern) => {
            [Initcheck, Racecheck, Memcheck, Synccheck]
        }
        Symptom::Wrong(pattern) if pattern.wrong > 0 && pattern.never_written == pattern.wrong => {
            [Memcheck, Synccheck, Racecheck, Initcheck]
        }
        Symptom::Wrong(_) => [Racecheck, Initcheck, Memcheck, Synccheck],
    };
    order
        .into_iter()
        .filter(|&tool| shared_memory || tool != Racecheck)
        .collect()
}

/// Whether every wrong element lies on an edge of its tile (and not every element is wrong).
fn at_tile_edges(pattern: &OutputPattern) -> bool {
    pattern.wrong < pattern.compared
        && pattern
            .tiles
            .as_ref()
            .is_some_and(|tiles| tiles.all_on_edge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::references::Comparison;
    use crate::sanitizer::{OutputShape, analyse};
    use kernelbook_core::spec::ElemType;

    fn pattern(wrong: &[usize], poison: bool) -> OutputPattern {
        let expected: Vec<u8> = (0..1024u32)
            .flat_map(|i| (i as f32).to_le_bytes())
            .collect();
        let mut actual = expected.clone();
        for &i in wrong {
            let bytes = if poison {
                [0xFF; 4]
            } else {
                (-1.5f32).to_le_bytes()
            };
            actual[i * 4..i * 4 + 4].copy_from_slice(&bytes);
        }
        let shape = OutputShape::infer(1024, [4, 1, 1], [256, 1, 1]);
        analyse(
            &expected,
            &actual,
            ElemType::F32,
            &Comparison::EXACT,
            &shape,
        )
    }

    #[test]
    fn each_symptom_puts_its_tool_first() {
        use Tool::{Initcheck, Memcheck, Racecheck, Synccheck};
        assert_eq!(tools_for(Symptom::Fault, true)[0], Memcheck);
        assert_eq!(tools_for(Symptom::Hang, true)[0], Synccheck);
        let halo = pattern(&[0, 255, 256, 511, 512, 767, 768, 1023], false);
        assert_eq!(
            tools_for(Symptom::Wrong(&halo), true),
            [Initcheck, Racecheck, Memcheck, Synccheck]
        );
        let unwritten = pattern(&[5, 300, 700], true);
        assert_eq!(tools_for(Symptom::Wrong(&unwritten), true)[0], Memcheck);
        let scattered = pattern(&[5, 300, 700], false);
        assert_eq!(tools_for(Symptom::Wrong(&scattered), true)[0], Racecheck);
    }

    #[test]
    fn racecheck_is_left_out_without_shared_memory() {
        let scattered = pattern(&[5, 300, 700], false);
        for symptom in [Symptom::Fault, Symptom::Hang, Symptom::Wrong(&scattered)] {
            let tools = tools_for(symptom, false);
            assert!(!tools.contains(&Tool::Racecheck), "{tools:?}");
            assert_eq!(tools.len(), 3);
        }
        // Every tool, once, with shared memory.
        let mut all = tools_for(Symptom::Hang, true);
        all.sort();
        assert_eq!(all, Tool::ALL);
    }
}
