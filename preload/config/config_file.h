/* config_file.h — the system configuration file, for hosts where the library is listed in
 * /etc/ld.so.preload and programs get no environment from the operator. Lines KEY=VALUE with the
 * environment variables' names (# starts a comment); the environment wins over the file. */
#ifndef PROFLINK_CONFIG_FILE_H
#define PROFLINK_CONFIG_FILE_H

#define SYSTEM_CONFIG_PATH "/etc/proflink/proflink.conf"

/* Reads SYSTEM_CONFIG_PATH once per process image. It is honoured only when it is a regular
 * file owned by root and writable by nobody else: anyone able to write it could switch every
 * process on the host on or off or point its socket elsewhere. No allocation, no stdio. */
void config_file_load(void);

/* The file's value for KEY (only the keys in the allowed list), or NULL. */
const char *config_file_get(const char *key);

#endif
