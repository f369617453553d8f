/* target_reader.c — see target_reader.h. */
#include "target_reader.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_util.h"

int target_socket_reader(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char comm_path[96];
        snprintf(comm_path, sizeof comm_path, "/proc/%d/task/%.16s/comm", (int)pid, e->d_name);
        size_t len;
        char *comm = target_read_file(comm_path, &len);
        if (!comm)
            continue;
        comm[strcspn(comm, "\n")] = 0;
        found = !strcmp(comm, TARGET_INTAKE_THREAD);
        free(comm);
    }
    closedir(d);
    return found;
}
