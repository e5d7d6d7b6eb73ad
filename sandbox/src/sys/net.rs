//! Network links: bringing loopback up in a fresh network namespace, and
//! giving it one more IPv4 address.

use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

/// An ifreq naming `name`, all else zero.
fn ifreq(name: &str) -> nix::Result<libc::ifreq> {
    // SAFETY: ifreq is plain data for which all-zero is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.len() >= req.ifr_name.len() {
        return Err(Errno::EINVAL);
    }
    for (dst, src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    Ok(req)
}

fn inet_socket() -> nix::Result<std::os::fd::OwnedFd> {
    socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
}

/// Adds `addr` as an address of the link before the colon of `label`
/// ("lo:dns"), with the netmask the kernel picks for it.
pub fn add_address(label: &str, addr: std::net::Ipv4Addr) -> nix::Result<()> {
    let sock = inet_socket()?;
    let mut req = ifreq(label)?;
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: ifru_addr is a sockaddr, which a sockaddr_in fits (both 16
    // bytes); SIOCSIFADDR reads the name and that address from `req`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&sin as *const libc::sockaddr_in).cast::<u8>(),
            (&mut req.ifr_ifru.ifru_addr as *mut libc::sockaddr).cast::<u8>(),
            std::mem::size_of::<libc::sockaddr_in>(),
        );
        Errno::result(libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFADDR, &req))?;
    }
    Ok(())
}

/// Sets IFF_UP on the link called `name` (e.g. "lo").
pub fn set_link_up(name: &str) -> nix::Result<()> {
    let sock = inet_socket()?;
    let mut req = ifreq(name)?;
    // SAFETY: `req` is a valid ifreq for both ioctls, which read the name
    // and read or write the flags member of its union.
    unsafe {
        Errno::result(libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req))?;
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        Errno::result(libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req))?;
    }
    Ok(())
}
