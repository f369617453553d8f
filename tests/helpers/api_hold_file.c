/* api_hold_file — a program that holds a file open for writing while a tracer in it starts
 * proflink's message side. usage: api_hold_file FILE
 * Opens FILE for writing and writes "partial" (a file not finished yet), then sets a message
 * callback through proflink's API (found with dlsym; absent without the library), which starts
 * proflink's intake and reader threads, waits until the intake thread runs (3 s at most), prints
 * "intake=1" or "intake=0", and waits for its standard input to end. Then it finishes the file,
 * closes it and prints "closed". */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"

static void on_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
}

static int intake_running(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof comm, f) && !strcmp(comm, "proflink-intake\n"))
            found = 1;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "partial", 7) != 7)
        return 3;
    void (*set_cb)(proflink_message_fn, void *) = (void (*)(proflink_message_fn, void *))dlsym(
        RTLD_DEFAULT, "proflink_set_message_callback");
    if (set_cb)
        set_cb(on_message, NULL);
    int running = 0;
    for (int i = 0; set_cb && i < 300 && !(running = intake_running()); i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    printf("intake=%d\n", running);
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    if (write(fd, " done\n", 6) != 6 || close(fd) != 0)
        return 4;
    printf("closed\n");
    return 0;
}
