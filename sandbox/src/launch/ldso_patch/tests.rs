//! The file patch: the host's loader patched as expected, and anything
//! not exactly as expected (patched already, the pattern twice, padding
//! not zero, too little room, any truncation) left alone without a panic.

use super::*;

fn host_loader() -> Vec<u8> {
    fs::read(INTERPRETER).expect("this host has glibc's x86_64 loader")
}

/// The sites the pattern has in `file`.
fn sites(file: &[u8]) -> Vec<usize> {
    let pattern = [&IMAGE[SLOT..SLOT + MOVES_LEN], &SYSCALL].concat();
    file.windows(SITE_LEN)
        .enumerate()
        .filter(|(_, w)| *w == pattern)
        .map(|(i, _)| i)
        .collect()
}

fn rel_target(bytes: &[u8], at: usize, vaddr_of: impl Fn(usize) -> u64) -> u64 {
    assert_eq!(bytes[at], 0xe9);
    let rel = i32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap());
    (vaddr_of(at) + 5).wrapping_add(rel as i64 as u64)
}

/// The host's loader: the site jumps to the slot, the slot's jump back
/// lands after the site's `syscall`, the executable segment covers the
/// image, and nothing else changed. The copy is left alone when patched
/// again (the site is gone, as the preload's runtime search finds).
#[test]
fn the_hosts_loader_is_patched_as_expected() {
    assert!(!IMAGE.is_empty(), "sandbox/build.rs built no trampoline");
    let file = host_loader();
    let found = sites(&file);
    assert_eq!(found.len(), 1, "the host's loader has the site once");
    let out = patch(&file, IMAGE).expect("the host's loader is patched");
    assert_eq!(out.len(), file.len());
    let segs = segments(&out).unwrap();
    let text = segs
        .iter()
        .find(|s| s.kind == PT_LOAD && s.flags & PF_X != 0)
        .unwrap();
    let old = segments(&file).unwrap();
    let old_text = old.iter().find(|s| s.at == text.at).unwrap();
    let vaddr_of = |off: usize| text.vaddr + (off as u64 - text.offset);
    let site = found[0];
    let image_at = usize::try_from((old_text.offset + old_text.filesz + 15) & !15).unwrap();
    assert_eq!(rel_target(&out, site, vaddr_of), vaddr_of(image_at + SLOT));
    assert_eq!(
        rel_target(&out, image_at + JUMP_BACK, vaddr_of),
        vaddr_of(site + SITE_LEN)
    );
    assert_eq!(out[image_at + 5..image_at + IMAGE.len()], IMAGE[5..]);
    assert_eq!(text.filesz, text.memsz);
    assert_eq!(text.offset + text.filesz, (image_at + IMAGE.len()) as u64);
    let changed: Vec<usize> = (0..file.len()).filter(|&i| file[i] != out[i]).collect();
    let expected = |i: usize| {
        (site..site + 5).contains(&i)
            || (image_at..image_at + IMAGE.len()).contains(&i)
            || (text.at + 32..text.at + 48).contains(&i)
    };
    assert!(changed.iter().all(|&i| expected(i)), "{changed:?}");
    assert!(sites(&out).is_empty());
    assert!(patch(&out, IMAGE).is_none(), "patched twice");
}

#[test]
fn anything_else_is_left_as_built() {
    let file = host_loader();
    let site = sites(&file)[0];
    // The pattern twice: which one is the loader's open is not known.
    let mut twice = file.clone();
    let text_end = 0x1000 + 0x100; // a copy inside the text, over other code
    twice.copy_within(site..site + SITE_LEN, text_end);
    assert!(patch(&twice, IMAGE).is_none());
    // The padding is not zero.
    let padded = patch(&file, IMAGE).unwrap();
    let segs = segments(&file).unwrap();
    let text = segs
        .iter()
        .find(|s| s.kind == PT_LOAD && s.flags & PF_X != 0)
        .unwrap();
    let end = usize::try_from(text.offset + text.filesz).unwrap();
    let mut dirty = file.clone();
    dirty[end + 40] = 1;
    assert!(patch(&dirty, IMAGE).is_none());
    // An image too large for the padding.
    let big = [IMAGE, &[0u8; 8192][..]].concat();
    assert!(patch(&file, &big).is_none());
    // An image without its jump back.
    assert!(patch(&file, &IMAGE[1..]).is_none());
    // Not an x86_64 shared object.
    let mut other = file.clone();
    other[18] = 0xb7; // aarch64
    assert!(patch(&other, IMAGE).is_none());
    assert_ne!(padded, file);
}

/// Truncated or scribbled-over headers never panic.
#[test]
fn hostile_bytes_do_not_panic() {
    let file = host_loader();
    // Cut short of the headers, or of the text: nothing to patch.
    for len in [0, 5, 16, 63, 64, 100, 0x200, 0x1000, 0x20000] {
        assert!(patch(&file[..len], IMAGE).is_none(), "{len}");
    }
    // Cut anywhere: no panic.
    for len in (0..file.len()).step_by(997) {
        let _ = patch(&file[..len], IMAGE);
    }
    let mut seed = 0x9e3779b97f4a7c15u64;
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut f = file.clone();
        let at = (seed as usize) % 0x300;
        f[at] = (seed >> 40) as u8;
        let _ = patch(&f, IMAGE);
    }
}
