//! handlers
pub struct Context;
pub fn dispatch(_c: &Context, _g: &dyn crate::Guest, _a: &crate::SyscallArgs) -> crate::Reply { crate::Reply::Error(nix::errno::Errno::ENOSYS) }
