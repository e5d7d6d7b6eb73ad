//! Little-endian fields of an ELF image's bytes, bounds-checked (`None`
//! past the end): what the static loader's look at a command's program
//! (`static_loader.rs`) and the loader patch (`ldso_patch.rs`) read of
//! headers that may be anyone's bytes. Owns only these readers, not what
//! the fields mean.

pub(super) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}
