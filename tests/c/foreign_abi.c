/*
 * foreign_abi: makes one system call through an ABI other than x86_64's,
 * which the sandbox's filter kills (SIGSYS): argv[1] "i386" (int $0x80,
 * getpid) or "x32" (the x32 bit set on getpid). Natively both return a
 * pid (or -ENOSYS where the kernel lacks that ABI); prints "returned".
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    long ret;
    if (argc > 1 && !strcmp(argv[1], "i386")) {
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    } else {
        __asm__ volatile("syscall" : "=a"(ret) : "a"(39L | 0x40000000L) : "rcx", "r11", "memory");
    }
    printf("returned %ld\n", ret < 0 ? -1L : 0L);
    return 0;
}
