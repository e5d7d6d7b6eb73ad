#define _GNU_SOURCE
/* What the containers of one pod share, probed from inside one (built
 * statically, so it runs in the busybox image):
 *   pod_probe ipc-make KEY TEXT [UID]
 *                                makes a SysV shared memory segment and a
 *                                semaphore set under KEY, TEXT in the one,
 *                                7 in the other (owned by UID and group UID
 *                                when given: IPC_SET);
 *   pod_probe ipc-read KEY       prints "shm=TEXT sem=N" from them, or
 *                                "no ipc KEY: ERRNO" (exit 1) when this IPC
 *                                namespace has none;
 *   pod_probe posix-make NAME TEXT
 *                                makes a POSIX shared memory object NAME
 *                                (shm_open, in /dev/shm) holding TEXT and a
 *                                named semaphore NAME (sem_open) of value 7;
 *   pod_probe posix-read NAME    prints "shm=TEXT sem=N" from them, or
 *                                "no posix NAME: ERRNO" (exit 1) when this
 *                                /dev/shm has neither;
 *   pod_probe udp-echo PORT      binds a UDP socket to 0.0.0.0:PORT and
 *                                sends every datagram back to its sender,
 *                                prefixed with "echo:", for ever. */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

union semun {
    int val;
};

static int ipc_make(key_t key, const char *text, const char *owner) {
    int shm = shmget(key, 4096, IPC_CREAT | 0600);
    if (shm < 0) {
        printf("shmget: %s\n", strerror(errno));
        return 1;
    }
    char *p = shmat(shm, NULL, 0);
    if (p == (void *)-1) {
        printf("shmat: %s\n", strerror(errno));
        return 1;
    }
    snprintf(p, 4096, "%s", text);
    shmdt(p);
    int sem = semget(key, 1, IPC_CREAT | 0600);
    union semun arg = {.val = 7};
    if (sem < 0 || semctl(sem, 0, SETVAL, arg) < 0) {
        printf("semaphore: %s\n", strerror(errno));
        return 1;
    }
    if (owner) {
        struct shmid_ds ds;
        struct semid_ds sds;
        union {
            int val;
            struct semid_ds *buf;
        } sarg = {.buf = &sds};
        uid_t id = (uid_t)strtoul(owner, NULL, 10);
        if (shmctl(shm, IPC_STAT, &ds) < 0 || semctl(sem, 0, IPC_STAT, sarg) < 0) {
            printf("IPC_STAT: %s\n", strerror(errno));
            return 1;
        }
        ds.shm_perm.uid = sds.sem_perm.uid = id;
        ds.shm_perm.gid = sds.sem_perm.gid = id;
        if (shmctl(shm, IPC_SET, &ds) < 0 || semctl(sem, 0, IPC_SET, sarg) < 0) {
            printf("IPC_SET: %s\n", strerror(errno));
            return 1;
        }
    }
    printf("made\n");
    return 0;
}

static int ipc_read(key_t key) {
    int shm = shmget(key, 0, 0);
    int sem = semget(key, 0, 0);
    if (shm < 0 || sem < 0) {
        printf("no ipc %d: %s\n", (int)key, strerror(errno));
        return 1;
    }
    char *p = shmat(shm, NULL, SHM_RDONLY);
    if (p == (void *)-1) {
        printf("shmat: %s\n", strerror(errno));
        return 1;
    }
    printf("shm=%.64s sem=%d\n", p, semctl(sem, 0, GETVAL));
    shmdt(p);
    return 0;
}

static int posix_make(const char *name, const char *text) {
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, 4096) < 0) {
        printf("shm_open: %s\n", strerror(errno));
        return 1;
    }
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        printf("mmap: %s\n", strerror(errno));
        return 1;
    }
    snprintf(p, 4096, "%s", text);
    munmap(p, 4096);
    close(fd);
    sem_t *sem = sem_open(name, O_CREAT, 0600, 7);
    if (sem == SEM_FAILED) {
        printf("sem_open: %s\n", strerror(errno));
        return 1;
    }
    sem_close(sem);
    printf("made\n");
    return 0;
}

static int posix_read(const char *name) {
    int fd = shm_open(name, O_RDONLY, 0);
    sem_t *sem = fd < 0 ? SEM_FAILED : sem_open(name, 0);
    if (sem == SEM_FAILED) {
        printf("no posix %s: %s\n", name, strerror(errno));
        return 1;
    }
    char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    int value = -1;
    if (p == MAP_FAILED || sem_getvalue(sem, &value) < 0) {
        printf("reading %s: %s\n", name, strerror(errno));
        return 1;
    }
    printf("shm=%.64s sem=%d\n", p, value);
    return 0;
}

static int udp_echo(int port) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
        printf("udp %d: %s\n", port, strerror(errno));
        return 1;
    }
    printf("listening\n");
    fflush(stdout);
    for (;;) {
        char buf[1500];
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        ssize_t n = recvfrom(s, buf + 5, sizeof buf - 5, 0, (struct sockaddr *)&peer, &len);
        if (n < 0)
            continue;
        memcpy(buf, "echo:", 5);
        sendto(s, buf, n + 5, 0, (struct sockaddr *)&peer, len);
    }
}

int main(int argc, char **argv) {
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "ipc-make") == 0)
        return ipc_make(atoi(argv[2]), argv[3], argc == 5 ? argv[4] : NULL);
    if (argc == 3 && strcmp(argv[1], "ipc-read") == 0)
        return ipc_read(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "posix-make") == 0)
        return posix_make(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "posix-read") == 0)
        return posix_read(argv[2]);
    if (argc == 3 && strcmp(argv[1], "udp-echo") == 0)
        return udp_echo(atoi(argv[2]));
    fprintf(stderr, "usage: pod_probe ipc-make KEY TEXT [UID] | ipc-read KEY | posix-make NAME TEXT | "
                    "posix-read NAME | udp-echo PORT\n");
    return 2;
}
